"""The one-line summary every run ends with, and its JSON twin."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RunSummary(BaseModel):
    action: str = "noop"  # created | noop | pending | committed | distilled | ...
    files: int = 0
    bytes: int = 0
    turns: int = 0
    memories_added: int = 0
    memories_duplicate: int = 0
    llm_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    counters: dict[str, int] = Field(default_factory=dict)

    def dropped(self) -> dict[str, int]:
        """Candidates found but not stored, by reason (every one is counted somewhere)."""
        c = self.counters
        below = sum(n for k, n in c.items() if k.startswith("dropped_") and k != "dropped_cap")
        return {"merged in run": c.get("merged_in_run", 0), "below the bar": below,
                "over the cap": c.get("dropped_cap", 0)}
