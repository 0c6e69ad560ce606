"""Vector, full-text and hybrid (reciprocal rank fusion) search over the memories table.

All three take the same filter (scope, category, since). Hybrid runs both searches with a
deeper cut and fuses by rank (RRF, k=60), because cosine and BM25 scores are not on one
scale; a row found by both ranks above a row found by one.
"""

from __future__ import annotations

from typing import Any, Literal

from .models import CATEGORIES, MemoryHit, check_scope
from .provenance import parse
from .table import as_ms

Mode = Literal["vector", "fts", "hybrid"]
RRF_K = 60
ROW_COLUMNS = ["id", "text", "category", "scope", "importance", "timestamp", "metadata"]


def where_clause(scope: str | None = None, category: str | None = None, since_ms: int | None = None,
                 ts_is_float: bool = False) -> str | None:
    """SQL filter from validated values only (scope regex, category set, integer time)."""
    parts = []
    if scope is not None:
        parts.append(f"scope = '{check_scope(scope)}'")
    if category is not None:
        if category not in CATEGORIES:
            raise ValueError(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
        parts.append(f"category = '{category}'")
    if since_ms is not None:
        value = f"{float(int(since_ms))}" if ts_is_float else str(int(since_ms))
        parts.append(f"timestamp >= {value}")
    return " AND ".join(parts) or None


def to_hit(row: dict[str, Any], score: float, source: str) -> MemoryHit:
    return MemoryHit(
        id=row["id"], text=row.get("text") or "", category=row.get("category") or "other",
        scope=row.get("scope") or "global", importance=float(row.get("importance") or 0.0),
        timestamp=as_ms(row.get("timestamp")), metadata=parse(row.get("metadata")),
        score=score, sources=[source],
    )


def vector_search(table, qvec, where: str | None, limit: int) -> list[MemoryHit]:
    """Cosine nearest rows. An IVF index probes only some partitions, so a filter that keeps a
    small scope could come back short: ``maximum_nprobes(0)`` lets it probe on until full."""
    q = table.search(qvec, vector_column_name="vector").distance_type("cosine").limit(limit)
    q = q.select(ROW_COLUMNS + ["_distance"])
    if where:
        q = q.where(where, prefilter=True).maximum_nprobes(0)
    return [to_hit(r, 1.0 - float(r["_distance"]), "vector") for r in q.to_list()]


def fts_search(table, text: str, where: str | None, limit: int) -> list[MemoryHit]:
    text = " ".join(text.split())
    if not text:
        return []
    q = table.search(text, query_type="fts", fts_columns="text").limit(limit).select(ROW_COLUMNS + ["_score"])
    if where:
        q = q.where(where, prefilter=True)
    return [to_hit(r, float(r["_score"]), "fts") for r in q.to_list()]


def rrf(lists: list[list[MemoryHit]], limit: int) -> list[MemoryHit]:
    fused: dict[str, MemoryHit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits):
            add = 1.0 / (RRF_K + rank + 1)
            if hit.id in fused:
                prev = fused[hit.id]
                prev.score += add
                prev.sources = sorted(set(prev.sources) | set(hit.sources))
            else:
                fused[hit.id] = hit.model_copy(update={"score": add})
    return sorted(fused.values(), key=lambda h: -h.score)[:limit]
