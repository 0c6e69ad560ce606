"""Store benchmark: dedup-checked inserts, dedup check, hybrid search, local embedder speed.

    /tmp/venv/bin/python tests/bench/bench_store.py [--sizes 10000 100000] [--one-scope]

Existing rows are written straight into a real LanceDB table with precomputed random unit
vectors (384-d) spread over 10 scopes (40 % global, the rest over 9 agents; ``--one-scope``
puts them all in ``global``, the worst case for dedup), FTS index and (from
``store_vector_index_min_rows``) ANN index built by ``MemoryStore.compact()``. Timed through
the public MemoryStore API with an embedder that returns precomputed vectors, so the
figures are the store's own cost. Targets (issue 3): insert of 100 ≤ 100 ms, dedup check
p50 ≤ 20 ms at 100k, hybrid search p50 ≤ 30 ms at 100k.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.store import MemoryDraft, MemoryStore  # noqa: E402
from distill.store import table as tbl  # noqa: E402
from store_helpers import settings_for  # noqa: E402

DIM = 384
WORDS_ZH = ["部署", "数据库", "迁移", "缓存", "网关", "超时", "依赖", "日志", "权限", "证书"]
WORDS_EN = ["deploy", "database", "migration", "cache", "gateway", "timeout", "dependency", "logging"]


class Precomputed:
    """Hands out a fixed random unit vector per text: the embedder's cost is not measured."""

    name = "bench:precomputed"
    dim = DIM

    def __init__(self, seed: int = 7):
        self.rng = np.random.default_rng(seed)
        self.table: dict[str, np.ndarray] = {}

    def _vec(self, text: str) -> np.ndarray:
        if text not in self.table:
            v = self.rng.standard_normal(DIM).astype(np.float32)
            self.table[text] = v / np.linalg.norm(v)
        return self.table[text]

    def passages(self, texts):
        return np.stack([self._vec(t) for t in texts])

    def query(self, text):
        return self._vec("q:" + text)


def text_of(i: int) -> str:
    return (f"Memory {i}: service-{i % 997} {WORDS_EN[i % 8]} setting {i * 7 % 1000} changed.\n"
            f"Keywords (zh): {WORDS_ZH[i % 10]}; {WORDS_ZH[(i * 3) % 10]}{i % 50}")


def seed_table(settings, n: int, one_scope: bool) -> float:
    rng = np.random.default_rng(n)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    scopes = np.where(rng.random(n) < 0.4, "global",
                      np.char.add("agent:a", rng.integers(0, 9, n).astype(str)))
    if one_scope:
        scopes[:] = "global"
    now = int(time.time() * 1000)
    data = pa.table({
        "id": [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(n)],
        "text": [text_of(i) for i in range(n)],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM),
        "category": ["fact"] * n,
        "scope": scopes.tolist(),
        "importance": [0.5] * n,
        "timestamp": [now - i for i in range(n)],
        "metadata": ["{}"] * n,
    }).cast(tbl.new_schema(DIM))
    db = tbl.connect(settings.db)
    t0 = time.perf_counter()
    table = db.create_table(settings.table, data=data)
    tbl.ensure_fts(table)
    return time.perf_counter() - t0


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run(n: int, one_scope: bool) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-store-{n}-"))
    settings = settings_for(tmp, store_compact_small_fragments=10_000)
    res: dict[str, float] = {"rows": n}
    res["seed s"] = seed_table(settings, n, one_scope)
    emb = Precomputed()
    store = MemoryStore.open(settings, embedder=emb)
    t0 = time.perf_counter()
    store.compact()  # builds the ANN index at >= store_vector_index_min_rows
    res["compact+index s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.add([MemoryDraft(text="warm-up memory, loads the dedup copy", scope="global")])
    res["first write (loads dedup copy) s"] = time.perf_counter() - t0

    inserts = []
    for b in range(5):
        drafts = [MemoryDraft(text=f"new memory {b}-{k} about {WORDS_EN[k % 8]}", scope="global" if k % 2 else
                              f"agent:a{k % 9}") for k in range(100)]
        emb.passages([d.text for d in drafts])  # precompute outside the timer
        t0 = time.perf_counter()
        out = store.add(drafts)
        inserts.append(time.perf_counter() - t0)
        assert sum(o.status == "added" for o in out) == 100
    res["insert 100 p50 ms"] = p50(inserts)
    plain = []
    for b in range(5):  # baseline, same run: the bare LanceDB append of 100 rows, no dedup
        rows = [{"id": f"plain-{b}-{k}", "text": f"plain {b} {k}", "vector": emb._vec(f"plain {b} {k}"),
                 "category": "fact", "scope": "global", "importance": 0.5, "timestamp": 0, "metadata": "{}"}
                for k in range(100)]
        data = tbl.rows_to_arrow(rows, store.table.schema)
        t0 = time.perf_counter()
        store.table.add(data)
        plain.append(time.perf_counter() - t0)
    res["  baseline: bare append 100 p50 ms"] = p50(plain)

    checks = []
    for k in range(30):
        d = MemoryDraft(text=f"candidate memory {k} {WORDS_EN[k % 8]}", scope="global")
        emb.passages([d.text])
        t0 = time.perf_counter()
        store.check([d])  # lock + refresh + exact + nearest-cosine decision, no write
        checks.append(time.perf_counter() - t0)
    res["dedup check p50 ms"] = p50(checks)
    flat = []
    for k in range(10):  # baseline, same run: LanceDB's exact (brute-force) kNN in the scope
        q = emb._vec(f"candidate memory {k} {WORDS_EN[k % 8]}")
        t0 = time.perf_counter()
        (store.table.search(q).distance_type("cosine").where("scope = 'global'", prefilter=True)
         .bypass_vector_index().select(["id", "text", "_distance"]).limit(5).to_list())
        flat.append(time.perf_counter() - t0)
    res["  baseline: LanceDB exact kNN p50 ms"] = p50(flat)

    searches = []
    queries = [f"{WORDS_ZH[k % 10]} {WORDS_EN[k % 8]}" for k in range(30)]
    for q in queries:
        emb.query(q)
    store.search(queries[0], mode="hybrid", scope="global")
    answered = 0
    for q in queries:
        t0 = time.perf_counter()
        hits = store.search(q, mode="hybrid", scope="global", limit=10)
        searches.append(time.perf_counter() - t0)
        answered += bool(hits)  # random vectors: the relevance floor may leave a query without hits
    res["hybrid search p50 ms"] = p50(searches)
    res["  queries with hits"] = answered
    shutil.rmtree(tmp, ignore_errors=True)  # ~300 MB at 100k rows
    return res


def embedder_speed(n_texts: int = 128) -> float:
    from distill.store.embedders import LocalEmbedder

    emb = LocalEmbedder()
    texts = [text_of(i) for i in range(n_texts)]
    emb.passages(texts[:8])
    t0 = time.perf_counter()
    for i in range(0, n_texts, 32):
        emb.passages(texts[i:i + 32])
    return n_texts / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--one-scope", action="store_true")
    ap.add_argument("--no-embedder", action="store_true")
    args = ap.parse_args()
    results = [run(n, args.one_scope) for n in args.sizes]
    keys = list(results[0])
    print(f"\nstore benchmark ({'all rows in one scope' if args.one_scope else '10 scopes, 40% global'})")
    print(f"{'':36}" + "".join(f"{r['rows']:>12,.0f}" for r in results))
    for k in keys[1:]:
        print(f"{k:36}" + "".join(f"{r[k]:>12.1f}" for r in results))
    if not args.no_embedder:
        print(f"{'local embedder texts/s':36}{embedder_speed():>12.1f}")


if __name__ == "__main__":
    main()
