"""The JSON that memory-lancedb-pro's ``memory-pro export`` writes and ``import`` reads.

Export: ``{"version": "1.0", "exportedAt", "count", "filters": {"scope"?, "category"?},
"memories": [{"id", "text", "category", "scope", "importance", "timestamp", "metadata"}]}``
with ``metadata`` the row's JSON string as stored and no vectors, written byte for byte as
the plugin's ``JSON.stringify(doc, null, 2)`` (see :func:`dumps`). Import accepts what the
plugin accepts: entries need ``text``; an unknown category becomes ``other``; importance is
clamped to 0..1 (default 0.7); ``metadata`` may be a string or an object; ``id`` and
``timestamp`` are kept when given. ``--scope`` puts every entry in that scope (the plugin
always does, using its default scope without ``--scope``); without it each entry keeps its
own ``scope`` (``global`` when it has none).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from ..errors import SchemaMismatch
from ..text.keywords import has_keywords, keyword_draft
from ..trust import refusal
from .models import CATEGORIES, ImportReport, MemoryDraft, check_scope
from .provenance import parse
from .search import ROW_COLUMNS, where_clause
from .table import as_ms


@dataclass
class ImportEntry:
    draft: MemoryDraft
    id: str | None
    timestamp: int | None


def export_rows(table, scope: str | None, category: str | None) -> list[dict[str, Any]]:
    """The rows ``memory-pro export`` lists, in its order: a scope filter also keeps rows with
    no scope; newest first, rows with equal timestamps in table order (its sort is stable)."""
    parts = []
    if scope is not None:
        parts.append(f"(scope = '{check_scope(scope)}' OR scope IS NULL)")
    if category is not None:
        parts.append(where_clause(category=category))
    q = table.search().select(ROW_COLUMNS)
    rows = (q.where(" AND ".join(parts)) if parts else q).to_list()
    rows.sort(key=lambda r: -as_ms(r.get("timestamp")))
    return rows


def export_document(rows: list[dict[str, Any]], scope: str | None, category: str | None,
                    now: datetime | None = None) -> dict[str, Any]:
    """The document, key for key as the plugin builds it (absent filters are left out)."""
    now = now or datetime.now(timezone.utc)
    return {
        "version": "1.0",
        "exportedAt": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
        "count": len(rows),
        "filters": {k: v for k, v in (("scope", scope), ("category", category)) if v is not None},
        "memories": [
            {"id": r["id"], "text": r.get("text"), "category": r.get("category"),
             "scope": r.get("scope") or "global", "importance": _number(r.get("importance")),
             "timestamp": _number(r.get("timestamp")), "metadata": r.get("metadata") or "{}"}
            for r in rows
        ],
    }


def dumps(doc: dict[str, Any]) -> str:
    """``JSON.stringify(doc, null, 2)``: what ``memory-pro export`` writes, byte for byte."""
    return json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False)


def _number(value: Any) -> int | float | None:
    """A JS number as JSON.stringify writes it: 1 not 1.0; NaN and infinities as null."""
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v):
        return None
    return int(v) if v.is_integer() else v


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
    refused = refusal(text)  # injection phrasing never becomes a memory (distill.trust)
    if refused:
        raise ValueError(refused)
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
    if not has_keywords(text):  # an entry that names itself keeps its text: an export/import round trip changes nothing
        draft = keyword_draft(draft)
    raw_id = item.get("id")
    row_id = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= 128 and "'" not in raw_id else None
    ts = as_ms(item.get("timestamp")) if item.get("timestamp") is not None else None
    return ImportEntry(draft=draft, id=row_id, timestamp=ts or None)


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e.get("msg", "") for e in exc.errors())[:200]
    return str(exc)[:200]
