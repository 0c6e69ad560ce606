"""The table on an object store vs a local directory: dedup-checked inserts and searches.

    .venv/bin/python tests/bench/bench_s3.py [--rows 10000] [--rounds 10]

Both tables get the same ``--rows`` rows (written through ``MemoryStore.add`` in chunks of
500, so the load is dedup-checked too), then ``--rounds`` timed inserts of 10 new memories
(dedup-checked, one commit each) and ``--rounds`` hybrid and vector searches. The object
store is moto's S3 server on 127.0.0.1 (what the tests use): a real S3 protocol over HTTP,
without a network's latency, so the ratio is LanceDB's object-store overhead, a floor for a
real bucket. The embedder is a deterministic stand-in (tests/store_helpers.HashEmbedder):
the figures are the store's own cost. Printed: p50 per operation for each, and s3 / local.

``--hosts`` also runs the issue's 4 writers x 200 memories on two hosts with SIGKILLs
(tests/test_store_s3_hosts.py at ``DISTILL_S3_PER_WRITER=200``) and prints its time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from distill.config import load_settings  # noqa: E402
from distill.store import MemoryDraft, MemoryStore  # noqa: E402
from tests.s3_server import S3Server  # noqa: E402
from tests.store_helpers import HashEmbedder  # noqa: E402

TOPICS = ["gateway", "database", "migration", "cache", "timeout", "dependency", "logging", "certificate"]


def draft(n: int) -> MemoryDraft:
    t = TOPICS[n % len(TOPICS)]
    return MemoryDraft(text=f"Fact {n}: the {t} of service-{n} is configured in /etc/svc-{n}.toml.\nKeywords (zh): 服务{n}",
                       scope="global" if n % 3 else f"agent:a{n % 7}", category="fact",
                       metadata={"provenance": {"agent": "main", "file": "bench.jsonl", "ranges": [[n, n + 1]]}})


def measure(db: str, state: Path, rows: int, rounds: int) -> dict[str, float]:
    store = MemoryStore.open(load_settings(db=db, state_dir=str(state), host="bench"), embedder=HashEmbedder())
    for start in range(0, rows, 500):
        store.add([draft(n) for n in range(start, min(rows, start + 500))])
    store.compact()
    out: dict[str, list[float]] = {"insert 10": [], "hybrid search": [], "vector search": []}
    for r in range(rounds):
        batch = [draft(rows + r * 10 + k) for k in range(10)]
        t = time.perf_counter()
        store.add(batch)
        out["insert 10"].append(time.perf_counter() - t)
        for mode in ("hybrid", "vector"):
            t = time.perf_counter()
            store.search(f"{TOPICS[r % len(TOPICS)]} of service-{r * 97 % rows}", mode=mode, limit=10)
            out[f"{mode} search"].append(time.perf_counter() - t)
    assert store.count() == rows + rounds * 10
    return {k: statistics.median(v) * 1000 for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--hosts", action="store_true")
    args = ap.parse_args()
    server = S3Server()
    try:
        os.environ.update(server.env())
        with tempfile.TemporaryDirectory() as tmp:
            local = measure(str(Path(tmp, "db")), Path(tmp, "state-local"), args.rows, args.rounds)
            s3 = measure(f"s3://{server.bucket()}/bench", Path(tmp, "state-s3"), args.rows, args.rounds)
        print(f"{args.rows} rows, p50 of {args.rounds} rounds (ms): local | s3 (moto on 127.0.0.1) | s3 / local")
        for k in local:
            print(f"  {k:14s} {local[k]:8.1f} | {s3[k]:8.1f} | {s3[k] / local[k]:5.2f}x")
    finally:
        server.stop()
    if args.hosts:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_store_s3_hosts.py", "-q", "-n", "0", "-p",
                               "no:cacheprovider"], cwd=ROOT, env={**os.environ, "DISTILL_S3_PER_WRITER": "200"})
        print(f"4 writers x 200 memories, two hosts, SIGKILLs: {'passed' if proc.returncode == 0 else 'FAILED'} "
              f"in {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
