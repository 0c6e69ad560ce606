"""Vector, full-text and hybrid search over the memories table, and what a hit's score means.

All three take the same filter (scope or scopes, category, since). ``vector`` scores are
cosines; ``fts`` scores are BM25. ``hybrid`` — what ``memories search``, the MCP ``recall`` tool
and the plugin-style callers use — pools both searches' candidates and gives each a
**relevance** between 0 and 1 that a person (or a caller's threshold) can read:

* meaning: the cosine, on the scale the local e5 model actually uses (unrelated text still
  scores ~0.78, a match ~0.85-0.93), and how far the row stands above the query's other
  candidates (a match stands out; for a query the store knows nothing about, all are alike);
* wording: the share of the query's words (Chinese: character pairs) found in the memory;
* the exact entity: a memory containing the query's identifier verbatim (an error code such
  as ``E11000``, ``core.autocrlf``, a path) ranks first.

Hits under ``RELEVANCE_FLOOR`` are not returned, so a query with nothing relevant returns
nothing. The weights and the floor were tuned on the ``DEV`` half of ``tests/relevance_corpus.py``
and are reported on its held-out half by ``tests/bench/bench_relevance.py``.
"""

from __future__ import annotations

import re
import time
import unicodedata
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError
from ..text.keywords import concepts_held, holds_name, is_chinese, is_own_name, query_concepts, query_names
from . import second_opinion
from .models import CATEGORIES, MemoryHit, check_scope
from .provenance import parse
from .table import as_ms

Mode = Literal["vector", "fts", "hybrid"]
ROW_COLUMNS = ["id", "text", "category", "scope", "importance", "timestamp", "metadata"]

RELEVANCE_FLOOR = 0.40
COS_LOW, COS_HIGH = 0.78, 0.93  # local e5: unrelated ≈ 0.77-0.83, a clear match ≈ 0.88-0.93 (a paraphrase ≈ 0.81)
MARGIN_SPAN = 0.06  # a match stands this far above the mean of the query's candidates → full marks
# the margin's mean is over this many nearest rows whatever the caller's limit, so a memory scores
# the same for MCP recall (top_k 5) as for `memories search --limit 50`
BASELINE_ROWS = 20
W_MEANING, W_MARGIN, W_WORDS = 0.45, 0.30, 0.25
EXACT_SCORE = 0.95
# an identifier that more of the query's candidates hold than this is a common word of this store
# (HTTP in every web memory), not what singles the answer out: it counts as a word, not a win
EXACT_HOLDERS = 2
# a question in the other language than the memory: e5 puts a match lower (≈ 0.80-0.87 against
# 0.85-0.93), and the dictionary's shared concepts carry more of the evidence
COS_LOW_X, COS_HIGH_X = 0.78, 0.88
W_X_MEANING, W_X_MARGIN, W_X_WORDS = 0.35, 0.25, 0.40
# a Chinese question against a Chinese memory: e5 puts any two Chinese texts closer (unrelated
# ≈ 0.82-0.87, a match ≈ 0.89-0.94; tests/bench/crosslang_set.json and the blind set)
COS_LOW_ZH, COS_HIGH_ZH = 0.83, 0.95
# a query that names something (MySQL, Kafka, order_id) and a memory that names none
# of it: at most a neighbour ("MongoDB's default port" against the Redis port memory)
NAME_MISS = 0.6
# the same between an English question and an English memory, where e5's cosine says more (the
# timestamptz decision answers "which column type should a new created_at field get")
NAME_MISS_EN = 0.75
# an English question naming several things and a memory holding only some of them: about one of
# them, not what was asked ("Kubernetes Deployment and a StatefulSet" against a Deployment memory)
NAME_PART = 0.75
# a memory holding what the question names (Vite, Sentry) and none of what it asks about them —
# at least two concepts, and more than the names it holds: the same tool, another problem ("how
# do I set Sentry's sample rate" against the Sentry sourcemap memory). Between NAME_MISS (not
# even the tool) and NAME_PART (part of what is named); on the dev sets the one right memory it
# meets (a Celery retry question, its 自动/最多/几次 unmatched) stays above the floor at 0.43.
NAME_ONLY = 0.7


def where_clause(scope: str | list[str] | None = None, category: str | None = None,
                 since_ms: int | None = None, ts_is_float: bool = False) -> str | None:
    """SQL filter from validated values only (scope regex, category set, integer time)."""
    parts = []
    if isinstance(scope, str):
        parts.append(f"scope = '{check_scope(scope)}'")
    elif scope:
        parts.append("scope IN (" + ", ".join(f"'{check_scope(s)}'" for s in scope) + ")")
    if category is not None:
        if category not in CATEGORIES:
            raise ValueError(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
        parts.append(f"category = '{category}'")
    if since_ms is not None:
        value = f"{float(int(since_ms))}" if ts_is_float else str(int(since_ms))
        parts.append(f"timestamp >= {value}")
    return " AND ".join(parts) or None


_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([dhm])$")


def parse_since(value: str | None) -> int | None:
    """``YYYY-MM-DD`` / ISO time (UTC unless given) / ``7d``, ``12h``, ``30m`` ago → Unix ms."""
    if value is None:
        return None
    value = value.strip()
    m = _RELATIVE.match(value)
    if m:
        seconds = float(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
        return int((time.time() - seconds) * 1000)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"--since {value!r}: use YYYY-MM-DD, an ISO time, or 7d / 12h / 30m") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


def to_hit(row: dict[str, Any], score: float, source: str) -> MemoryHit:
    return MemoryHit(
        id=row["id"], text=row.get("text") or "", category=row.get("category") or "other",
        scope=row.get("scope") or "global", importance=float(row.get("importance") or 0.0),
        timestamp=as_ms(row.get("timestamp")), metadata=parse(row.get("metadata")),
        score=score, sources=[source],
    )


def _vector_rows(table, qvec, where: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
    """Cosine nearest rows. An IVF index probes only some partitions, so a filter that keeps a
    small scope could come back short: ``maximum_nprobes(0)`` lets it probe on until full."""
    q = table.search(qvec, vector_column_name="vector").distance_type("cosine").limit(limit)
    q = q.select(columns + ["_distance"])
    if where:
        q = q.where(where, prefilter=True).maximum_nprobes(0)
    return q.to_list()


def bm25_rows(table, text: str, where: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
    text = " ".join(text.split())
    if not text:
        return []
    q = table.search(text, query_type="fts", fts_columns="text").limit(limit).select(columns + ["_score"])
    if where:
        q = q.where(where, prefilter=True)
    return q.to_list()


def vector_search(table, qvec, where: str | None, limit: int) -> list[MemoryHit]:
    return [to_hit(r, 1.0 - float(r["_distance"]), "vector") for r in _vector_rows(table, qvec, where, limit, ROW_COLUMNS)]


def fts_search(table, text: str, where: str | None, limit: int) -> list[MemoryHit]:
    return [to_hit(r, float(r["_score"]), "fts") for r in bm25_rows(table, text, where, limit, ROW_COLUMNS)]


def hybrid_search(table, query: str, qvec: np.ndarray, where: str | None, limit: int, *,
                  floor: float | None = RELEVANCE_FLOOR, pool=None,
                  concepts: list[list[str]] | None = None) -> list[MemoryHit]:
    """Candidates from both searches, ranked by :func:`relevance`; those under ``floor`` dropped.
    ``concepts``: the query's words in both languages (``keywords.query_concepts``), if the
    caller worked them out already."""
    from .fts import search_rows as lexical_rows  # fts builds on this module

    depth = max(limit * 3, BASELINE_ROWS)
    cols = ROW_COLUMNS + ["vector"]
    concepts = query_concepts(query) if concepts is None else concepts
    wide = " ".join([query, *(w for group in concepts for w in group[1:])])  # both languages' words
    fts = pool.submit(lexical_rows, table, wide, where, depth, cols) if pool else None
    vec_rows = _vector_rows(table, qvec, where, depth, cols)
    fts_rows = fts.result() if fts else lexical_rows(table, wide, where, depth, cols)
    rows: dict[str, tuple[dict[str, Any], set[str]]] = {}
    for source, found in (("vector", vec_rows), ("fts", fts_rows)):
        for r in found:
            rows.setdefault(r["id"], (r, set()))[1].add(source)
    if not rows:
        return []
    ordered = list(rows.values())
    vecs = np.asarray([r["vector"] for r, _ in ordered], dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    cos = vecs @ (np.asarray(qvec, dtype=np.float32) / max(float(np.linalg.norm(qvec)), 1e-12))
    texts = [r["text"] or "" for r, _ in ordered]
    scores = relevance(query, texts, cos, baseline=_baseline(vec_rows[:BASELINE_ROWS]), concepts=concepts)
    if floor is not None and (let_in := second_opinion.rescued(query, texts, scores, floor)) is not None:
        scores[let_in] = floor
    hits = []
    for (row, sources), score in zip(ordered, scores):
        if floor is not None and score < floor:
            continue
        hit = to_hit(row, round(float(score), 4), "vector")
        hit.sources = sorted(sources)
        hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[:limit]


def _baseline(vec_rows: list[dict[str, Any]]) -> float | None:
    """Mean cosine of the query's nearest rows: how alike everything looks to this query."""
    cos = [1.0 - float(r["_distance"]) for r in vec_rows]
    return float(np.mean(cos)) if len(cos) >= 5 else None


# ---------------------------------------------------------------- relevance
_STOP = frozenset(
    "a an the of to in on at for and or but is are was were be been do does did how what which who whom "
    "when where why with without from by as it its this that these those there here i you we they he she "
    "my your our their me us them can could should would will shall may might must not no yes any some "
    "about into over after before than then so if else also just only more most very too use used using "
    "get got".split()
)
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TERM = re.compile(f"[A-Za-z0-9][A-Za-z0-9_.+#/\\-:=]*[A-Za-z0-9]|[A-Za-z0-9]|[{_CJK}]+")
_ENTITY_SHAPE = re.compile(r"\d|[A-Za-z0-9][._/\-:=+#][A-Za-z0-9]|^[A-Z0-9_]{4,}$|[a-z][A-Z]")
# an identifier only a copy of it would hold: digits, separators inside, all capitals (EADDRINUSE,
# HTTP), camelCase code (createWebHistory: two humps) — not a product's name (GitHub, MySQL,
# WeasyPrint, iOS), which memories about other things with that product hold as well
_EXACT_SHAPE = re.compile(r"\d|[A-Za-z0-9][._/\-:=+#][A-Za-z0-9]|^[A-Z0-9_]{4,}$|[a-z][A-Z].*[a-z][A-Z]")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def query_terms(query: str) -> tuple[list[tuple[str, float]], list[str]]:
    """(weighted terms, entities): words and CJK character pairs; identifier-shaped tokens
    (an error code, a dotted setting, a path, a product's name) weigh three times a word, and
    those only a copy would hold (``_EXACT_SHAPE``) are the entities a memory wins outright by."""
    terms: list[tuple[str, float]] = []
    entities: list[str] = []
    for m in _TERM.finditer(unicodedata.normalize("NFKC", query)):
        tok = m.group(0)
        if "\u3400" <= tok[0] <= "\ufaff":
            pairs = [tok[i:i + 2] for i in range(len(tok) - 1)] or [tok]
            terms.extend((p, 1.0) for p in pairs)
            continue
        low = tok.casefold()
        if _ENTITY_SHAPE.search(tok) and len(tok) >= 3:
            if _EXACT_SHAPE.search(tok):
                entities.append(low)
            terms.append((low, 3.0))
        elif low not in _STOP and len(low) > 1:
            terms.append((low, 1.0))
    return terms, entities


def word_overlap(terms: list[tuple[str, float]], text: str) -> float:
    """Weighted share of the query's terms that occur in the memory's text (0-1)."""
    total = sum(w for _, w in terms)
    if not total:
        return 0.0
    folded = _fold(text)
    return sum(w for t, w in terms if t in folded) / total


def relevance(query: str, texts: list[str], cosines: np.ndarray, *, baseline: float | None,
              concepts: list[list[str]] | None = None) -> list[float]:
    """0-1 per memory text: meaning, standing out, shared words (in the query's language, or
    through the dictionary in the other one: ``concepts``); an exact entity wins outright."""
    terms, entities = query_terms(query)
    whole = _fold(" ".join(query.split()))
    base = baseline if baseline is not None else COS_LOW
    query_zh = is_chinese(query)
    names = query_names(query)
    out = []
    name_concept = [any(form.casefold() in names for form in group) for group in concepts or []]
    folded_texts = [_fold(t) for t in texts]
    holders = sum(all(e in f for e in entities) for f in folded_texts) if entities else 0
    exact_wins = 0 < holders <= EXACT_HOLDERS
    for text, folded, cos in zip(texts, folded_texts, cosines):
        margin = min(max((float(cos) - base) / MARGIN_SPAN, 0.0), 1.0)
        held = concepts_held(concepts, text) if concepts else []
        shared = sum(held) / len(held) if held else 0.0
        if concepts and is_chinese(text) != query_zh:
            meaning = min(max((float(cos) - COS_LOW_X) / (COS_HIGH_X - COS_LOW_X), 0.0), 1.0)
            score = W_X_MEANING * meaning + W_X_MARGIN * margin + W_X_WORDS * shared
        else:
            low, high = (COS_LOW_ZH, COS_HIGH_ZH) if query_zh and is_chinese(text) else (COS_LOW, COS_HIGH)
            meaning = min(max((float(cos) - low) / (high - low), 0.0), 1.0)
            score = W_MEANING * meaning + W_MARGIN * margin + W_WORDS * max(word_overlap(terms, text), shared)
        missed = [n for n in names if not holds_name(n, text)]
        if names and len(missed) == len(names):
            score *= NAME_MISS_EN if not query_zh and not is_chinese(text) else NAME_MISS
        elif missed and (not query_zh or any(is_own_name(n) for n in missed)):
            score *= NAME_PART
        asked = [h for h, is_name in zip(held, name_concept) if not is_name]  # what it asks about the names
        named = len(names) - len(missed)
        if named and len(asked) >= max(2, named + 1) and not any(asked):
            score *= NAME_ONLY
        if (exact_wins and all(e in folded for e in entities)) or (len(whole) >= 6 and whole in folded):
            score = max(score, EXACT_SCORE) + 0.04 * meaning  # exact first; among several, by meaning
        out.append(min(score, 1.0))
    return out


# ---------------------------------------------------------------- provenance, for people and tools
def provenance_of(metadata: dict[str, Any]) -> dict[str, Any]:
    """Where a row came from, flattened over its sources: agents, sessions, files, byte ranges,
    entry ids, first/last seen, seen count. Rows written by other tools may have none of it."""
    sources = [s for s in metadata.get("sources") or [] if isinstance(s, dict)]
    first = metadata.get("provenance") if isinstance(metadata.get("provenance"), dict) else {}
    entries = [first, *sources] if first else sources

    def gather(key: str) -> list[Any]:
        seen: list[Any] = []
        for e in entries:
            value = e.get(key)
            for v in value if isinstance(value, list) else [value]:
                if v not in (None, "") and v not in seen:
                    seen.append(v)
        return seen

    agents = gather("agent")
    return {
        "agent": agents[0] if agents else None,
        "agents": agents,
        "sessions": gather("sessions") + [s for s in gather("session") if s not in gather("sessions")],
        "files": gather("files"),
        "ranges": gather("ranges"),
        "entry_ids": gather("entryIds"),
        "first_seen": metadata.get("first_seen"),
        "last_seen": metadata.get("last_seen"),
        "seen_count": int(metadata.get("seen_count") or 1),
    }
