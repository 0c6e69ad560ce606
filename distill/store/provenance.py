"""Row metadata: what a new row records, and what a duplicate adds to the row it matches.

A duplicate never changes the existing row's text or vector; it bumps ``seen_count`` and
``last_seen`` and appends its source. A source is identified by a key over its provenance
(agent, session, file, byte ranges, entry ids), so replaying the very same input finds its
key already there and changes nothing: no write at all.

memory-lancedb-pro trims ``sources`` to its last 20 entries whenever it patches a row's
metadata (after any recall). So ``sources`` holds the newest 20, oldest first, exactly what
the plugin keeps (its trim is then a no-op), and the entries pushed out of it move to
``sources_older``, a key the plugin carries along untouched: together, up to 200 sources.

On a table several hosts share, each source also names the ``host`` that saw it (not part
of its key: a source is where the memory came from, the host only who recorded it), and
:func:`merged` is the union two rows' provenance becomes when one is folded into the other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_SOURCES = 200  # sources_older + sources
PLUGIN_MAX_SOURCES = 20  # memory-lancedb-pro's cap on metadata.sources (smart-metadata.ts)


def source_key(provenance: dict[str, Any] | None, chash: str) -> str:
    """Stable key of where a memory came from; without provenance, of its content."""
    basis = provenance if provenance else {"content_hash": chash}
    raw = json.dumps(basis, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def parse(raw: Any) -> dict[str, Any]:
    """A row's metadata column as a dict; a plugin row's odd value is kept, not lost."""
    if isinstance(raw, dict):
        return dict(raw)
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"legacy_metadata": str(raw)}
    return value if isinstance(value, dict) else {"legacy_metadata": value}


def dump(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str)


def host_name(configured: str = "") -> str:
    """This host's name as rows record it: the ``host`` setting, else the system's."""
    import socket

    return configured or socket.gethostname() or "unknown"


def _source_entry(key: str, provenance: dict[str, Any] | None, now_ms: int, host: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": key, "seen_at": now_ms}
    if host:
        entry["host"] = host
    if provenance:
        entry.update({k: v for k, v in provenance.items() if k not in entry})
    return entry


def for_new_row(draft_metadata: dict[str, Any], chash: str, embedder: str, now_ms: int,
                host: str | None = None) -> dict[str, Any]:
    md = dict(draft_metadata)
    provenance = md.get("provenance") if isinstance(md.get("provenance"), dict) else None
    key = source_key(provenance, chash)
    md.update(
        content_hash=chash,
        embedder=embedder,
        seen_count=1,
        first_seen=now_ms,
        last_seen=now_ms,
        sources=[_source_entry(key, provenance, now_ms, host)],
    )
    return md


def with_duplicate(existing: dict[str, Any], draft_metadata: dict[str, Any], chash: str,
                   now_ms: int, host: str | None = None) -> dict[str, Any] | None:
    """The existing row's metadata after seeing this duplicate; ``None`` = already recorded."""
    provenance = draft_metadata.get("provenance") if isinstance(draft_metadata.get("provenance"), dict) else None
    key = source_key(provenance, chash)
    history = list(existing.get("sources_older") or []) + list(existing.get("sources") or [])
    if any(isinstance(s, dict) and s.get("key") == key for s in history):
        return None
    md = dict(existing)
    if not history:  # a row written elsewhere (plugin, MCP): count its own first sighting
        md.setdefault("seen_count", 1)
    md["seen_count"] = int(md.get("seen_count") or 1) + 1
    md["last_seen"] = now_ms
    md.setdefault("content_hash", chash)
    return _with_history(md, history + [_source_entry(key, provenance, now_ms, host)])


def history_of(md: dict[str, Any]) -> list[dict[str, Any]]:
    """Every source a row's metadata records, oldest first."""
    return [s for s in list(md.get("sources_older") or []) + list(md.get("sources") or []) if isinstance(s, dict)]


def merged(keeper: dict[str, Any], other: dict[str, Any]) -> dict[str, Any] | None:
    """``keeper``'s metadata after folding ``other``'s row into it: the union of their sources (by
    key, in the order they were seen), the sightings added up, the earliest ``first_seen`` and
    the latest ``last_seen``. ``None``: keeper already records every source of ``other``."""
    mine = history_of(keeper)
    keys = {s.get("key") for s in mine}
    theirs = [s for s in history_of(other) if s.get("key") not in keys]
    if not theirs:
        return None
    md = dict(keeper)
    md["seen_count"] = int(md.get("seen_count") or 1) + len(theirs)
    for field, pick in (("first_seen", min), ("last_seen", max)):
        values = [v for v in (keeper.get(field), other.get(field)) if isinstance(v, (int, float))]
        if values:
            md[field] = pick(values)
    history = sorted(mine + theirs, key=lambda s: s.get("seen_at") or 0)
    return _with_history(md, history)


def _with_history(md: dict[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
    history = history[-MAX_SOURCES:]
    md["sources"] = history[-PLUGIN_MAX_SOURCES:]
    older = history[:-PLUGIN_MAX_SOURCES]
    if older:
        md["sources_older"] = older
    else:
        md.pop("sources_older", None)
    return md
