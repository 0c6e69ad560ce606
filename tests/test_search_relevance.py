"""Search a person can read: the right memory first, a 0-1 score, nothing for an unrelated
query, and the memory holding the query's exact entity on top. A smaller version of
``tests/bench/bench_relevance.py`` (real LanceDB, the local embedder, rows written past dedup)."""

from __future__ import annotations

import time
import uuid

import pytest

from distill.store import table as tbl
from distill.store.memory import MemoryStore
from tests.relevance_corpus import HELD_OUT, TARGETS, UNRELATED, filler
from tests.store_helpers import settings_for


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = settings_for(tmp_path_factory.mktemp("relevance"))
    store = MemoryStore.open(s)
    neighbours = dict(list(filler().items())[::24])  # 10 look-alikes: same tools, other facts
    wanted = {key for _, key in HELD_OUT} | {"mongo_dup", "rust_borrow"}
    texts = {**{k: t for k, t in TARGETS.items() if k in wanted}, **neighbours}
    vecs = store.embedder.passages(list(texts.values()))
    now = int(time.time() * 1000)
    rows = [{"id": str(uuid.uuid4()), "text": t, "vector": v, "category": "fact", "scope": "global",
             "importance": 0.7, "timestamp": now, "metadata": "{}"} for t, v in zip(texts.values(), vecs)]
    store.table.add(tbl.rows_to_arrow(rows, store.table.schema))
    store.ids = {k: r["id"] for k, r in zip(texts, rows)}
    return store


def test_the_right_memory_comes_first_for_nine_queries_in_ten(store):
    labelled = HELD_OUT
    first = [q for q, key in labelled if (h := store.search(q, limit=3)) and h[0].id == store.ids[key]]
    assert len(first) / len(labelled) >= 0.9, sorted(set(q for q, _ in labelled) - set(first))


def test_unrelated_queries_return_nothing(store):
    assert {q: [h.text[:40] for h in store.search(q)] for q in UNRELATED} == {q: [] for q in UNRELATED}


def test_scores_are_between_zero_and_one_and_sorted(store):
    hits = store.search("pnpm lockfile CI", limit=10)
    assert hits and all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_memory_with_the_exact_error_code_ranks_first(store):
    hits = store.search("E0502", limit=5)
    assert hits[0].id == store.ids["rust_borrow"] and hits[0].score >= 0.9
    hits = store.search("error code E11000 when inserting", limit=5)
    assert hits[0].id == store.ids["mongo_dup"]
