"""What the map step asks a provider for, and what survives validation.

One response schema (:func:`response_schema`) is sent to every endpoint. It is written out
in full, with no ``$defs``/``$ref`` (a server that does not resolve references answers
``{"memories": [{}]}``), and its ``required`` list is exactly the fields the validator
cannot do without (:data:`REQUIRED`), so a model told "optional" is never dropped for
leaving a field out. ``maxItems``/``maxLength`` bound what a looping model can emit;
each provider cuts the schema down to its documented subset (``distill/providers``). No field
descriptions: the instructions say what each field means once, and every call pays for both.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Literal

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

MAX_MEMORIES = 5  # per chunk; the reduce step caps per agent and globally on top
MAX_TEXT = 500
MAX_KEYWORD = 40
MAX_KEYWORDS = 8
MAX_ENTITIES = 6
MAX_EVIDENCE = 6


class CandidateOut(BaseModel):
    """One memory as a provider proposes it (turn ids are the chunk's short ``t1``, ``t2`` …)."""

    model_config = ConfigDict(extra="ignore")

    text: str
    category: Kind
    importance: float = Field(ge=0.0, le=1.0)
    scope: str
    keywords: list[str]
    entity_keywords: list[str]
    evidence: list[str]


REQUIRED = tuple(name for name, f in CandidateOut.model_fields.items() if f.is_required())


def _strings(max_items: int, max_length: int) -> dict[str, Any]:
    return {"type": "array", "maxItems": max_items, "items": {"type": "string", "maxLength": max_length}}


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": MAX_TEXT},
            "category": {"type": "string", "enum": list(CATEGORY_OF_KIND)},
            "importance": {"type": "number", "minimum": 0, "maximum": 1},
            "scope": {"type": "string", "enum": ["global", "agent"]},
            "keywords": _strings(MAX_KEYWORDS, MAX_KEYWORD),
            "entity_keywords": _strings(MAX_ENTITIES, MAX_KEYWORD),
            "evidence": _strings(MAX_EVIDENCE, 8),
        },
        "required": list(REQUIRED),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"memories": {"type": "array", "maxItems": MAX_MEMORIES, "items": item}},
        "required": ["memories"],
        "additionalProperties": False,
    }


def response_schema() -> dict[str, Any]:
    """A fresh copy of the one response schema (callers may prune it)."""
    return copy.deepcopy(_schema())


def output_token_cap() -> int:
    """The default answer cap: room for MAX_MEMORIES full items and the JSON around them.

    An item at its limits is ~130 tokens of English text, 8+6 keywords of up to 40 CJK
    characters, evidence and keys: about 400 tokens; a model that loops is cut here."""
    return 64 + MAX_MEMORIES * 400


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
