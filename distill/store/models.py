"""The store's boundary models: what writers hand in and what readers get back."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

CATEGORIES = ("preference", "fact", "decision", "entity", "other")
Category = Literal["preference", "fact", "decision", "entity", "other"]
SCOPE_RE = re.compile(r"^(global|(agent|custom|project|user):[^\s'\"\\]{1,128})$")


def check_scope(scope: str) -> str:
    """``global`` or ``<agent|custom|project|user>:<id>``; nothing else reaches a query string."""
    if not SCOPE_RE.match(scope):
        raise ValueError(
            f"scope {scope!r} is not valid: use 'global' or 'agent:<id>' "
            "(import also accepts custom:/project:/user:)"
        )
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
    reason: str | None = None  # "exact" | "near:<cosine>"


class MemoryRow(BaseModel):
    id: str
    text: str
    category: str
    scope: str
    importance: float
    timestamp: int  # Unix ms, whatever the column's type
    metadata: dict[str, Any] = Field(default_factory=dict)

    def human(self) -> str:
        when = datetime.fromtimestamp(self.timestamp / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
        first = self.text.splitlines()[0] if self.text else ""
        if len(first) > 100:
            first = first[:97] + "..."
        return f"[{self.id[:8]}] [{self.category}:{self.scope}] {first} ({when})"


class MemoryHit(MemoryRow):
    score: float
    sources: list[str] = Field(default_factory=list)  # "vector" / "fts": which searches found it

    def human(self) -> str:
        return f"{self.score:.3f} {super().human()}"


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

    def human(self) -> str:
        lines = [
            f"{self.total} memories in {self.db} (table {self.table}, {self.vector_dim}-d vectors, "
            f"embedder {self.embedder}, {human_bytes(self.size_bytes)} on disk, version {self.version})",
            "by scope:",
            *(f"  {k}: {v}" for k, v in sorted(self.by_scope.items())),
            "by category:",
            *(f"  {k}: {v}" for k, v in sorted(self.by_category.items())),
        ]
        return "\n".join(lines)


def human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


class ImportReport(BaseModel):
    file: str | None = None
    total: int = 0
    added: int = 0
    duplicate: int = 0
    invalid: int = 0
    dry_run: bool = False
    errors: list[str] = Field(default_factory=list)

    def human(self) -> str:
        verb = "would add" if self.dry_run else "added"
        text = (
            f"import{' (dry run, nothing written)' if self.dry_run else ''}: {self.total} entries, "
            f"{self.added} {verb}, {self.duplicate} duplicate, {self.invalid} invalid"
        )
        return "\n".join([text, *(f"  skipped: {e}" for e in self.errors[:20])])


class ReembedReport(BaseModel):
    rows: int
    old_embedder: str
    new_embedder: str
    old_dim: int
    new_dim: int
    backup_table: str

    def human(self) -> str:
        return (
            f"re-embedded {self.rows} memories: {self.old_embedder} ({self.old_dim}-d) -> "
            f"{self.new_embedder} ({self.new_dim}-d); the old table is kept as {self.backup_table}"
        )
