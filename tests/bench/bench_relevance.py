"""Search relevance on a labelled store: is the right memory first, and do unrelated queries
return nothing?

    python tests/bench/bench_relevance.py [--db DIR] [--verbose]

Builds a LanceDB store of ``tests/relevance_corpus.py`` (~290 memories: English, Chinese,
mixed, exact error codes) with the local embedder — or reuses ``--db`` if it already holds
it — then runs every labelled query through ``MemoryStore.search`` (hybrid, the default floor).
Reports, per half (``held-out``: written before the ranking code ran on it; ``dev``: used to
tune the weights), the share of queries whose expected memory is ranked first, and the share
of unrelated queries that return nothing. Also the old rank-fusion baseline's figure for
comparison (right memory first by vector+BM25 RRF; it has no floor).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from distill.config import load_settings  # noqa: E402
from distill.store.memory import MemoryStore  # noqa: E402
from distill.store import table as tbl  # noqa: E402
from distill.store.search import fts_search, vector_search  # noqa: E402
from tests.relevance_corpus import DEV, HELD_OUT, UNRELATED, corpus  # noqa: E402


def build(db: Path) -> tuple[MemoryStore, dict[str, str]]:
    """The store and {corpus key: row id}. Rows go in directly, past dedup: this measures search,
    and the neighbours are deliberately alike (dedup would merge some of them)."""
    settings = load_settings(db=str(db), state_dir=str(db.parent / "state"))
    store = MemoryStore.open(settings)
    texts = corpus()
    if store.count() == 0:
        t0 = time.perf_counter()
        vecs = store.embedder.passages(list(texts.values()))
        now = int(time.time() * 1000)
        rows = [{"id": str(uuid.uuid4()), "text": t, "vector": v, "category": "fact", "scope": "global",
                 "importance": 0.7, "timestamp": now, "metadata": "{}"} for t, v in zip(texts.values(), vecs)]
        store.table.add(tbl.rows_to_arrow(rows, store.table.schema))
        print(f"built {store.count()} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    by_text = {r.text: r.id for r in store.list(limit=None)}
    return store, {k: by_text[t] for k, t in texts.items()}


def rrf_first(store: MemoryStore, query: str) -> str | None:
    qvec = store.embedder.query(query)
    fused: dict[str, float] = {}
    for hits in (vector_search(store.table, qvec, None, 20), fts_search(store.table, query, None, 20)):
        for rank, h in enumerate(hits):
            fused[h.id] = fused.get(h.id, 0.0) + 1.0 / (61 + rank)
    return max(fused, key=fused.get) if fused else None


def evaluate(store: MemoryStore, ids: dict[str, str], labelled, unrelated, verbose: bool) -> dict:
    first = base = 0
    for query, key in labelled:
        hits = store.search(query, limit=5)
        ok = bool(hits) and hits[0].id == ids[key]
        first += ok
        base += rrf_first(store, query) == ids[key]
        if verbose and not ok:
            got = [(next((k for k, v in ids.items() if v == h.id), h.id[:8]), h.score) for h in hits[:3]]
            print(f"  MISS {query!r}: expected {key}, got {got}")
    empty = 0
    for query in unrelated:
        hits = store.search(query, limit=5)
        empty += not hits
        if verbose and hits:
            got = [(next((k for k, v in ids.items() if v == h.id), h.id[:8]), h.score) for h in hits[:3]]
            print(f"  NOT EMPTY {query!r}: {got}")
    return {"right_first": first, "labelled": len(labelled), "rrf_right_first": base,
            "empty": empty, "unrelated": len(unrelated)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="LanceDB directory to build or reuse (default: a temporary one)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every miss")
    args = ap.parse_args()
    tmp = None
    if args.db:
        db = Path(args.db)
    else:
        tmp = tempfile.TemporaryDirectory()
        db = Path(tmp.name) / "db"
    store, ids = build(db)
    print(f"store: {store.count()} memories")
    half_unrelated = len(UNRELATED) // 2
    for name, labelled, unrelated in (("held-out", HELD_OUT, UNRELATED[:half_unrelated]),
                                      ("dev", DEV, UNRELATED[half_unrelated:])):
        r = evaluate(store, ids, labelled, unrelated, args.verbose)
        print(f"{name:9s} right memory first: {r['right_first']}/{r['labelled']} "
              f"({100 * r['right_first'] / r['labelled']:.0f} %; old RRF ranking "
              f"{100 * r['rrf_right_first'] / r['labelled']:.0f} %)   "
              f"unrelated queries with no hit: {r['empty']}/{r['unrelated']}")
    t0 = time.perf_counter()
    for query, _ in HELD_OUT:
        store.search(query, limit=5)
    print(f"search latency (warm, {len(HELD_OUT)} queries): "
          f"{1000 * (time.perf_counter() - t0) / len(HELD_OUT):.1f} ms per query")
    return 0


if __name__ == "__main__":
    sys.exit(main())
