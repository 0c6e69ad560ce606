"""What the map step asks a provider for, and what survives validation.

The provider-facing models (:class:`MapOutput`, :class:`CandidateOut`) stay loose on purpose:
structured-output backends reject rich JSON-schema constraints, and one bad candidate must not
sink its chunk, so lengths, keywords, evidence and scope are checked in ``validate.py``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["pitfall", "decision", "preference", "rule", "fact"]

# The plugin's categories are preference / fact / decision / entity / other.
CATEGORY_OF_KIND: dict[str, str] = {
    "pitfall": "fact",
    "decision": "decision",
    "preference": "preference",
    "rule": "preference",
    "fact": "fact",
}


class CandidateOut(BaseModel):
    """One memory as a provider proposes it (turn ids are the chunk's short ``t1``, ``t2`` …)."""

    # no "additionalProperties" in the schema: Gemini's response_schema rejects that keyword
    model_config = ConfigDict(extra="ignore")

    text: str = Field(description="English, under 500 characters, about one thing")
    category: Kind
    importance: float = Field(ge=0.0, le=1.0)
    scope: str = Field(description='"global" if useful to every agent, else "agent"')
    keywords: list[str] = Field(description="3-8 short Chinese keyword phrases, entity keywords included")
    entity_keywords: list[str] = Field(
        default_factory=list, description="names copied verbatim from the transcript"
    )
    evidence: list[str] = Field(description="ids of the turns it rests on, e.g. t3")


class MapOutput(BaseModel):
    memories: list[CandidateOut] = Field(default_factory=list)


class Candidate(BaseModel):
    """A validated candidate, tied to its source agent and batch messages."""

    text: str
    kind: Kind
    importance: float
    scope: Literal["global", "agent"]
    keywords: list[str]
    entity_keywords: list[str]
    evidence: list[str]  # batch message ids
    agent_id: str
    chunk: int
