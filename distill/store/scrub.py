"""Secrets never reach the store: every draft's text and metadata strings are redacted
again right before embedding and writing, whoever built the draft (distiller, import)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..redact import redact
from .models import MemoryDraft


def scrub_draft(draft: MemoryDraft, counts: Counter) -> MemoryDraft:
    text, found = redact(draft.text)
    counts.update(found)
    metadata = _scrub_value(draft.metadata, counts)
    if not found and metadata == draft.metadata:
        return draft
    return draft.model_copy(update={"text": text, "metadata": metadata})


def _scrub_value(value: Any, counts: Counter) -> Any:
    if isinstance(value, str):
        clean, found = redact(value)
        counts.update(found)
        return clean
    if isinstance(value, dict):
        return {k: _scrub_value(v, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, counts) for v in value]
    return value
