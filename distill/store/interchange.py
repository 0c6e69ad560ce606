"""The JSON that memory-lancedb-pro's ``memory-pro export`` writes and ``import`` reads.

Export: ``{"version": "1.0", "exportedAt", "count", "filters": {"scope", "category"},
"memories": [{"id", "text", "category", "scope", "importance", "timestamp", "metadata"}]}``
with ``metadata`` a JSON string and no vectors, as the plugin does. Import accepts what the
plugin accepts: entries need ``text``; an unknown category becomes ``other``; importance is
clamped to 0..1 (default 0.7); ``metadata`` may be a string or an object; ``id`` and
``timestamp`` are kept when given. ``--scope`` overrides every entry's scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from ..errors import SchemaMismatch
from .models import CATEGORIES, ImportReport, MemoryDraft, MemoryRow, check_scope
from .provenance import dump, parse
from .table import as_ms


@dataclass
class ImportEntry:
    draft: MemoryDraft
    id: str | None
    timestamp: int | None


def export_document(rows: list[MemoryRow], scope: str | None, category: str | None) -> dict[str, Any]:
    return {
        "version": "1.0",
        "exportedAt": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        "count": len(rows),
        "filters": {"scope": scope, "category": category},
        "memories": [
            {"id": r.id, "text": r.text, "category": r.category, "scope": r.scope,
             "importance": r.importance, "timestamp": r.timestamp, "metadata": dump(r.metadata)}
            for r in rows
        ],
    }


def parse_document(data: Any, scope: str | None) -> tuple[list[ImportEntry], ImportReport]:
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise SchemaMismatch('not a memory export: expected a JSON object {"memories": [...]} '
                             "(the shape `memory-pro export` and `distill memories export` write)")
    if scope is not None:
        check_scope(scope)
    report = ImportReport(total=len(data["memories"]))
    entries: list[ImportEntry] = []
    for n, item in enumerate(data["memories"]):
        try:
            entries.append(_entry(item, scope))
        except (ValueError, TypeError, ValidationError) as exc:
            report.invalid += 1
            report.errors.append(f"entry {n}: {_short(exc)}")
    return entries, report


def _entry(item: Any, scope: str | None) -> ImportEntry:
    if not isinstance(item, dict):
        raise ValueError("not an object")
    text = item.get("text")
    if not isinstance(text, str) or len(text.strip()) < 2:
        raise ValueError("no text")
    category = item.get("category") if item.get("category") in CATEGORIES else "other"
    try:
        importance = min(1.0, max(0.0, float(item.get("importance"))))
    except (TypeError, ValueError):
        importance = 0.7
    if importance != importance:  # NaN
        importance = 0.7
    metadata = parse(item.get("metadata"))
    row_scope = scope or item.get("scope") or "global"
    draft = MemoryDraft(text=text, category=category, scope=row_scope, importance=importance, metadata=metadata)
    raw_id = item.get("id")
    row_id = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= 128 and "'" not in raw_id else None
    ts = as_ms(item.get("timestamp")) if item.get("timestamp") is not None else None
    return ImportEntry(draft=draft, id=row_id, timestamp=ts or None)


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e.get("msg", "") for e in exc.errors())[:200]
    return str(exc)[:200]
