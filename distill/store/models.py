"""The store's boundary models: what writers hand in and what readers get back."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..settings.core import AGENT_ID_RULE, is_agent_id

CATEGORIES = ("preference", "fact", "decision", "entity", "other")
Category = Literal["preference", "fact", "decision", "entity", "other"]
SCOPE_RE = re.compile(r"^(global|(agent|custom|project|user):[^\s'\"\\]{1,128})$")


def check_scope(scope: str) -> str:
    """``global`` or ``<agent|custom|project|user>:<id>``; nothing else reaches a query string.
    The id of an ``agent:`` scope follows the one agent-id rule (``distill.settings.core``)."""
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        raise ValueError(
            f"scope {scope!r} is not valid: use 'global' or 'agent:<id>' "
            "(import also accepts custom:/project:/user:)"
        )
    if scope.startswith("agent:") and not is_agent_id(scope[len("agent:"):]):
        raise ValueError(f"scope {scope!r} is not valid: the agent id after 'agent:' must be {AGENT_ID_RULE}")
    return scope


class MemoryDraft(BaseModel):
    """A memory the distiller (or an import) wants stored."""

    text: str = Field(min_length=1)
    category: Category = "other"
    scope: str = "global"
    importance: float = Field(default=0.7, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("scope")
    @classmethod
    def _scope(cls, v: str) -> str:
        return check_scope(v)

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("memory text is empty")
        return v


class AddOutcome(BaseModel):
    status: Literal["added", "duplicate"]
    id: str
    reason: str | None = None  # "exact" | "near:<cosine>" | why it supersedes / contradicts ``related``
    relation: Literal["supersedes", "contradicts"] | None = None  # an added row's tie to a stored one
    related: str | None = None  # the row it supersedes or contradicts


class MemoryRow(BaseModel):
    id: str
    text: str
    category: str
    scope: str
    importance: float
    timestamp: int  # Unix ms, whatever the column's type
    metadata: dict[str, Any] = Field(default_factory=dict)


class MemoryHit(MemoryRow):
    score: float
    sources: list[str] = Field(default_factory=list)  # "vector" / "fts": which searches found it


class StoreStats(BaseModel):
    db: str
    table: str
    total: int
    by_scope: dict[str, int]
    by_category: dict[str, int]
    vector_dim: int
    embedder: str
    size_bytes: int
    version: int


class ImportReport(BaseModel):
    file: str | None = None
    total: int = 0
    added: int = 0
    duplicate: int = 0
    invalid: int = 0
    dry_run: bool = False
    errors: list[str] = Field(default_factory=list)


class ReembedReport(BaseModel):
    rows: int
    old_embedder: str
    new_embedder: str
    old_dim: int
    new_dim: int
    backup_table: str
