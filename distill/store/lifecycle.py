"""A memory's lifecycle, in memory-lancedb-pro's own vocabulary (``src/smart-metadata.ts``).

The plugin keeps every version of a fact: a newer statement *supersedes* the older row
(old: ``invalidated_at`` and ``superseded_by``; new: ``supersedes``; both one ``fact_key``
and a ``relations`` entry each way), a *contradicting* one is stored beside it with a
``contradicts`` relation, and nothing is deleted. Its retriever returns only rows that
``isMemoryActiveAt`` (``valid_from <= now`` and no ``invalidated_at`` at or before now);
its auto-recall also skips rows whose ``state`` is not ``confirmed``. distill reads and
writes the same keys with the same types (Unix-millisecond integers, string ids, relation
objects ``{"type", "targetId"}``) and the same defaults (:func:`lifecycle_of` is a port of
``parseSmartMetadata`` for these keys), so a row either tool writes means the same to both.

What distill calls *current* — what search, MCP ``recall``, ``list_facts`` and export return
unless history is asked for — is the plugin's active **and** not ``state: archived``.

Use is counted as the plugin counts it (``access_count``, ``last_accessed_at``) but without
turning a read into a table write: :class:`AccessLog` appends one line per recall to a small
file in the state directory, and the next writer (or housekeeping) folds the counts into the
rows. Ranking and archiving use the plugin's decay engine (``src/decay-engine.ts``):
:func:`search_boost` is its ``applySearchBoost`` multiplier and :func:`is_stale` its
``getStaleMemories`` test, with its defaults.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MS_PER_DAY = 86_400_000
STATES = ("pending", "confirmed", "archived")
TIERS = ("core", "working", "peripheral")

# store category → the plugin's memory_category (reverseMapLegacyCategory; "fact" → "cases"
# unless it is about the user, which distill's memories rarely are)
MEMORY_CATEGORY = {"preference": "preferences", "entity": "entities", "decision": "events",
                   "other": "patterns", "fact": "cases"}
TEMPORAL_VERSIONED = {"preferences", "entities"}  # the plugin's TEMPORAL_VERSIONED_CATEGORIES


# ---------------------------------------------------------------- reading (parseSmartMetadata)
def _js_number(value: Any) -> float:
    """JavaScript's ``Number(value)`` for what JSON can hold (NaN where JS gives NaN)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return 0.0
        try:
            return float(s)
        except ValueError:
            return math.nan
    return math.nan


def _timestamp(value: Any, fallback: int) -> int:
    n = _js_number(value) if value is not None else math.nan
    return int(math.floor(n)) if math.isfinite(n) and n > 0 else fallback


def _optional_timestamp(value: Any) -> int | None:
    n = _js_number(value) if value is not None else math.nan
    return int(math.floor(n)) if math.isfinite(n) and n > 0 else None


def _count(value: Any, fallback: int = 0) -> int:
    n = _js_number(value) if value is not None else math.nan
    return int(math.floor(n)) if math.isfinite(n) and n >= 0 else fallback


def _optional_string(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class Lifecycle:
    """The lifecycle keys of one row, normalised exactly as ``parseSmartMetadata`` does."""

    valid_from: int
    invalidated_at: int | None
    state: str
    tier: str
    confidence: float
    access_count: int
    last_accessed_at: int
    fact_key: str | None
    supersedes: str | None
    superseded_by: str | None
    relations: tuple[dict[str, str], ...]
    source_session: str | None

    def active_at(self, at: int) -> bool:
        """The plugin's ``isMemoryActiveAt``."""
        if self.valid_from > at:
            return False
        return not self.invalidated_at or self.invalidated_at > at

    def current_at(self, at: int) -> bool:
        """What distill recalls: active, and not archived."""
        return self.active_at(at) and self.state != "archived"


def lifecycle_of(metadata: dict[str, Any], timestamp: int | None, category: str | None = None,
                 text: str = "") -> Lifecycle:
    """``metadata`` (a parsed row) read as the plugin reads it; ``timestamp`` is the row's own."""
    ts = int(timestamp) if timestamp else now_ms()
    valid_from = _timestamp(metadata.get("valid_from"), ts)
    invalidated = _optional_timestamp(metadata.get("invalidated_at"))
    confidence = _js_number(metadata.get("confidence")) if metadata.get("confidence") is not None else math.nan
    state = metadata.get("state")
    tier = metadata.get("tier")
    return Lifecycle(
        valid_from=valid_from,
        invalidated_at=invalidated if invalidated and invalidated >= valid_from else None,
        state=state if state in STATES else "confirmed",
        tier=tier if tier in TIERS else "working",
        confidence=min(1.0, max(0.0, confidence)) if math.isfinite(confidence) else 0.7,
        access_count=_count(metadata.get("access_count"), 0),
        last_accessed_at=_count(metadata.get("last_accessed_at"), ts),
        fact_key=_optional_string(metadata.get("fact_key")) or derive_fact_key(
            str(metadata["memory_category"]) if isinstance(metadata.get("memory_category"), str)
            else MEMORY_CATEGORY.get(category or "", "patterns"),
            _optional_string(metadata.get("l0_abstract")) or text),
        supersedes=_optional_string(metadata.get("supersedes")),
        superseded_by=_optional_string(metadata.get("superseded_by")),
        relations=tuple(relations_of(metadata)),
        source_session=metadata.get("source_session") if isinstance(metadata.get("source_session"), str) else None,
    )


def is_current(metadata: dict[str, Any], timestamp: int | None, at: int | None = None) -> bool:
    """Is this row recalled by default (active for the plugin, and not archived)?"""
    return lifecycle_of(metadata, timestamp).current_at(now_ms() if at is None else at)


def relations_of(metadata: dict[str, Any]) -> list[dict[str, str]]:
    rows = metadata.get("relations")
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("type"), str)
            and isinstance(r.get("targetId"), str)]


def derive_fact_key(memory_category: str, abstract: str) -> str | None:
    """The plugin's ``deriveFactKey``: for preferences and entities, the text before the first
    colon (or arrow), lower-cased, whitespace folded, trailing full stops dropped."""
    if memory_category not in TEMPORAL_VERSIONED:
        return None
    trimmed = abstract.strip()
    if not trimmed:
        return None
    topic = trimmed
    colon = re.match(r"^(.{1,120}?)[：:]", trimmed, re.S)
    arrow = re.match(r"^(.{1,120}?)(?:\s*->|\s*=>)", trimmed, re.S)
    if colon:
        topic = colon.group(1)
    elif arrow:
        topic = arrow.group(1)
    normalised = re.sub(r"[。.!?]+$", "", re.sub(r"\s+", " ", topic.lower())).strip()
    return f"{memory_category}:{normalised}" if normalised else None


def chain_fact_key(old_metadata: dict[str, Any], old_timestamp: int | None, category: str, text: str,
                   old_id: str) -> str:
    """The ``fact_key`` a supersede gives both rows: the old row's own (as the plugin reads it),
    else one naming the chain after its first row (distill's texts open with their kind,
    "Preference: …", which the plugin's topic rule would turn into one key for every preference)."""
    own = _optional_string(old_metadata.get("fact_key"))
    if own:
        return own
    return f"{MEMORY_CATEGORY.get(category, 'patterns')}:{old_id}"


def append_relation(existing: Any, kind: str, target: str) -> list[dict[str, str]]:
    """The plugin's ``appendRelation``: add ``{type, targetId}`` unless it is already there."""
    rows = relations_of({"relations": existing})
    if any(r["type"] == kind and r["targetId"] == target for r in rows):
        return rows
    return [*rows, {"type": kind, "targetId": target}]


# ---------------------------------------------------------------- writing
def superseded(metadata: dict[str, Any], *, by: str, fact_key: str, at: int) -> dict[str, Any]:
    """The old row's metadata once ``by`` replaces it (handleSupersede's patch)."""
    md = dict(metadata)
    md.update(fact_key=fact_key, invalidated_at=at, superseded_by=by,
              relations=append_relation(md.get("relations"), "superseded_by", by))
    return md


def superseding(metadata: dict[str, Any], *, replaces: str, fact_key: str, at: int) -> dict[str, Any]:
    """The new row's metadata: valid from ``at``, replacing ``replaces``."""
    md = dict(metadata)
    md.update(valid_from=at, fact_key=fact_key, supersedes=replaces,
              relations=append_relation(md.get("relations"), "supersedes", replaces))
    return md


def contradicting(metadata: dict[str, Any], *, other: str) -> dict[str, Any]:
    """A row stored beside one it contradicts (handleContradict's ``contradicts`` relation)."""
    md = dict(metadata)
    md["relations"] = append_relation(md.get("relations"), "contradicts", other)
    return md


def archived(metadata: dict[str, Any], *, at: int, reason: str) -> dict[str, Any]:
    """The plugin's ``memory_archive`` patch."""
    md = dict(metadata)
    md.update(state="archived", memory_layer="archive", archive_reason=reason, archived_at=at)
    return md


def restored(metadata: dict[str, Any]) -> dict[str, Any]:
    """Current again: not archived, not invalidated. ``superseded_by`` and the relations stay
    as history (the plugin reads only ``invalidated_at`` for activity)."""
    md = dict(metadata)
    for key in ("invalidated_at", "archive_reason", "archived_at"):
        md.pop(key, None)
    if md.get("state") == "archived":
        md["state"] = "confirmed"
    if md.get("memory_layer") == "archive":
        md["memory_layer"] = "working"
    md["restored_at"] = now_ms()
    return md


def with_access(metadata: dict[str, Any], timestamp: int | None, count: int, last: int) -> dict[str, Any]:
    """``count`` more recalls, the last at ``last`` (the plugin caps the count at 10,000)."""
    life = lifecycle_of(metadata, timestamp)
    md = dict(metadata)
    md["access_count"] = min(10_000, life.access_count + count)
    md["last_accessed_at"] = max(life.last_accessed_at, last)
    return md


# ---------------------------------------------------------------- decay (decay-engine.ts defaults)
HALF_LIFE_DAYS = 30.0
RECENCY_W, FREQUENCY_W, INTRINSIC_W = 0.4, 0.3, 0.3
STALE_THRESHOLD = 0.3
BOOST_MIN = 0.3
IMPORTANCE_MODULATION = 1.5
BETA = {"core": 0.8, "working": 1.0, "peripheral": 1.3}
FLOOR = {"core": 0.9, "working": 0.7, "peripheral": 0.5}


def composite(life: Lifecycle, importance: float, created: int, at: int) -> float:
    """The decay engine's composite score: recency (Weibull, importance-stretched half-life),
    frequency (saturating in access_count, with a bonus for recent use) and importance × confidence."""
    last_active = life.last_accessed_at if life.access_count > 0 else created
    days = max(0.0, (at - last_active) / MS_PER_DAY)
    half_life = HALF_LIFE_DAYS * math.exp(IMPORTANCE_MODULATION * importance)
    recency = math.exp(-(math.log(2) / half_life) * days ** BETA[life.tier])
    frequency = 1 - math.exp(-life.access_count / 5)
    if life.access_count > 1:
        span = max(1.0, (last_active - created) / MS_PER_DAY)
        gap = span / max(life.access_count - 1, 1)
        frequency *= 0.5 + 0.5 * math.exp(-gap / 30)
    return RECENCY_W * recency + FREQUENCY_W * frequency + INTRINSIC_W * importance * life.confidence


def search_boost(life: Lifecycle, importance: float, created: int, at: int) -> float:
    """``applySearchBoost``'s multiplier (0.3-1): a working-tier row never drops below 0.79."""
    floor = max(FLOOR[life.tier], composite(life, importance, created, at))
    return min(1.0, max(BOOST_MIN, BOOST_MIN + (1 - BOOST_MIN) * floor))


def is_stale(life: Lifecycle, importance: float, created: int, at: int) -> bool:
    """``getStaleMemories``: composite under 0.3 (e.g. importance 0.7, never recalled, ~4 months old)."""
    return composite(life, importance, created, at) < STALE_THRESHOLD


# ---------------------------------------------------------------- what recall used, kept off the table
class AccessLog:
    """Recalls, one JSON line each (``{"at": ms, "ids": [...]}``), appended to a file in the
    state directory. A recall is a read: writing the table for it would make every read a
    commit (a new table version, a lock taken, readers' caches invalidated). The next writer
    of the table (``MemoryStore.add``, housekeeping) folds the counts in under its write lock
    and empties the file. Counts are advisory: a recall appended while a fold renames the file
    may land in the fold or the next one, never in both."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def record(self, ids: list[str], at: int | None = None) -> None:
        if not ids:
            return
        line = json.dumps({"at": now_ms() if at is None else at, "ids": ids}) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass  # counting use never fails a recall

    def pending(self) -> dict[str, tuple[int, int]]:
        """id → (recalls, last recall ms) not yet folded into the table."""
        return _tally(self.path)

    def take(self) -> tuple[dict[str, tuple[int, int]], Path | None]:
        """Move the file aside and return its tally; call :meth:`done` once the counts are written
        (a failed write leaves the file aside, and the next ``take`` reads it again)."""
        aside = self.path.with_suffix(".folding")
        if not aside.exists():
            try:
                os.replace(self.path, aside)
            except FileNotFoundError:
                return {}, None
        return _tally(aside), aside

    @staticmethod
    def done(aside: Path | None) -> None:
        if aside is not None:
            aside.unlink(missing_ok=True)


def _tally(path: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for raw in lines:
        try:
            rec = json.loads(raw)
            at, ids = int(rec["at"]), rec["ids"]
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line
        for i in ids if isinstance(ids, list) else []:
            if isinstance(i, str):
                n, last = out.get(i, (0, 0))
                out[i] = (n + 1, max(last, at))
    return out


def now_ms() -> int:
    return int(time.time() * 1000)

