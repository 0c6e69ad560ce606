"""The shared LanceDB memory table: embedders, deduplicating writes, search, housekeeping.

Importing this package is cheap; LanceDB, numpy and the embedders load on first use of
:class:`MemoryStore` (``distill enqueue`` and the config must stay fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .models import (
    AddOutcome,
    ImportReport,
    MemoryDraft,
    MemoryHit,
    MemoryRow,
    ReembedReport,
    StoreStats,
)

if TYPE_CHECKING:
    from .memory import MemoryStore

__all__ = [
    "AddOutcome",
    "ImportReport",
    "MemoryDraft",
    "MemoryHit",
    "MemoryRow",
    "MemoryStore",
    "ReembedReport",
    "StoreStats",
]


def __getattr__(name: str) -> Any:
    if name == "MemoryStore":
        from .memory import MemoryStore

        return MemoryStore
    raise AttributeError(name)
