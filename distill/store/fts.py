"""Full-text search that still finds Chinese on a table whose FTS index cannot split it.

A shared table's one FTS index on ``text`` is often memory-lancedb-pro's: its pinned Node
client cannot read the ICU index this LanceDB writes, so it builds its own with the
``simple`` tokenizer, and distill never replaces an index it did not make. ``simple`` makes
a whole run of CJK characters one token (and drops runs over 40 bytes), so ``迁移`` never
matches ``…运行数据库迁移脚本…``. For a query with CJK text on such a table (or one with
no FTS index at all), the BM25 hits are completed by a substring scan: rows holding any
two-character piece of the query's CJK runs, ranked by the share of pieces they hold.
"""

from __future__ import annotations

import re
from typing import Any

from .models import MemoryHit
from .search import ROW_COLUMNS, bm25_rows, to_hit
from .table import fts_index, index_tokenizer, splits_cjk

CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
WORD = re.compile(r"[^\W_]{3,}")
MAX_PIECES = 16  # a long query is judged on its first pieces; the scan stays one cheap filter
MAX_CANDIDATES = 2000


def search(table, query: str, where: str | None, limit: int) -> list[MemoryHit]:
    return [to_hit(r, float(r["_score"]), "fts") for r in search_rows(table, query, where, limit, ROW_COLUMNS)]


def search_rows(table, query: str, where: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
    """BM25 rows (``_score``), completed by the CJK substring scan where the index cannot split
    the query; the scan's ``_score`` is the share of the query's pieces a row holds (0-1)."""
    idx = fts_index(table)
    rows = bm25_rows(table, query, where, limit, columns) if idx is not None else []
    if idx is not None and splits_cjk(index_tokenizer(idx)):
        return rows
    pieces = query_pieces(query, words=idx is None)
    if not pieces:
        return rows
    seen = {r["id"] for r in rows}
    extra = [r for r in substring_rows(table, pieces, where, limit + len(seen), columns) if r["id"] not in seen]
    return (rows + extra)[:limit]


def query_pieces(query: str, *, words: bool = False) -> list[str]:
    """The CJK bigrams of the query (a lone CJK character as itself); with ``words``, its
    Latin words of 3+ letters too (a table without any FTS index)."""
    pieces: list[str] = []
    for run in CJK_RUN.findall(query):
        grams = [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]
        pieces.extend(g for g in grams if g not in pieces)
    if words:
        pieces.extend(w.lower() for w in WORD.findall(CJK_RUN.sub(" ", query)) if w.lower() not in pieces)
    return pieces[:MAX_PIECES]


def substring_rows(table, pieces: list[str], where: str | None, limit: int,
                   columns: list[str]) -> list[dict[str, Any]]:
    like = " OR ".join(f"{'text' if CJK_RUN.fullmatch(p) else 'lower(text)'} LIKE '%{_like(p)}%'" for p in pieces)
    cond = f"({like})" + (f" AND {where}" if where else "")
    rows = table.search().where(cond).select(["id", "text"]).limit(MAX_CANDIDATES).to_list()
    scored = []
    for r in rows:
        text = (r.get("text") or "").lower()
        share = sum(p in text for p in pieces) / len(pieces)
        if share > 0:
            scored.append((share, r["id"]))
    scored.sort(key=lambda s: (-s[0], s[1]))
    best = dict((rid, share) for share, rid in scored[:limit])
    if not best:
        return []
    quoted = ", ".join("'" + rid.replace("'", "''") + "'" for rid in best)
    full = table.search().where(f"id IN ({quoted})").select(columns).limit(len(best) * 4 + 10).to_list()
    found = {r["id"]: {**r, "_score": best[r["id"]]} for r in full if r["id"] in best}
    return sorted(found.values(), key=lambda r: (-r["_score"], r["id"]))


def _like(piece: str) -> str:
    """Pieces are letters only (no ``%``/``_``); still never let a quote end the string."""
    return piece.replace("'", "''")
