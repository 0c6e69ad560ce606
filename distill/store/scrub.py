"""Secrets never reach the store: every draft's text and metadata strings are redacted
again right before embedding and writing, whoever built the draft (distiller, import). A
value redacted in the text is also removed from the metadata (a password copied as a keyword
has no context of its own there)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..text.redact import forget_values, redact, redact_values
from ..trust import flag_draft
from .models import MemoryDraft


def scrub_draft(draft: MemoryDraft, counts: Counter) -> MemoryDraft:
    draft = flag_draft(draft, counts)  # what a person sees is what an agent reads; dangerous ones marked
    text, found, values = redact_values(draft.text)
    counts.update(found)
    metadata = _scrub_value(draft.metadata, counts, values)
    if not found and metadata == draft.metadata:
        return draft
    return draft.model_copy(update={"text": text, "metadata": metadata})


def _scrub_value(value: Any, counts: Counter, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        clean, found = redact(value)
        counts.update(found)
        return forget_values(clean, values, counts) if values else clean
    if isinstance(value, dict):
        return {k: _scrub_value(v, counts, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, counts, values) for v in value]
    return value
