"""CPU and wall cost of a dedup-checked insert of 100 memories on a 10k-row local table, for
any tree of this repository (to compare commits):

    git archive <commit> | tar -x -C /tmp/t_<commit>
    PYTHONPATH=/tmp/t_<commit> .venv/bin/python tests/bench/insert_cost.py /tmp/t_<commit>

It uses that tree's own ``tests/bench/bench_store.py`` table and embedder (``seed_table``,
``Precomputed``), so every tree runs the same workload through its own store. Prints the p50
of 12 inserts, wall and CPU of this process (LanceDB's threads included); compare the CPU
figures, which the machine's load moves much less than the wall ones.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

root = Path(sys.argv[1]).resolve()
sys.path[:0] = [str(root), str(root / "tests"), str(root / "tests/bench")]

import bench_store as bench  # noqa: E402

from distill.store import MemoryDraft, MemoryStore  # noqa: E402

settings = bench.settings_for(Path(tempfile.mkdtemp()), store_compact_small_fragments=10_000)
bench.seed_table(settings, 10_000, False)
emb = bench.Precomputed()
store = MemoryStore.open(settings, embedder=emb)
store.compact()
store.add([MemoryDraft(text="warm-up", scope="global")])
wall, cpu = [], []
for r in range(12):
    drafts = [MemoryDraft(text=f"new memory {r}-{k} about {bench.WORDS_EN[k % 8]}",
                          scope="global" if k % 2 else f"agent:a{k % 9}") for k in range(100)]
    emb.passages([d.text for d in drafts])
    t0, c0 = time.perf_counter(), time.process_time()
    store.add(drafts)
    wall.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
p50 = statistics.median
print(f"{root.name}: insert of 100 p50 {p50(wall) * 1000:.1f} ms wall, {p50(cpu) * 1000:.1f} ms CPU")
