"""Four processes writing overlapping memories at once: every distinct memory exactly once."""

from __future__ import annotations

import multiprocessing as mp
from collections import Counter

import lancedb

from distill.store import MemoryDraft, MemoryStore
from store_helpers import HashEmbedder, settings_for

WORKERS = 4
PER_WORKER = 200
DISTINCT = 500


def text_of(n: int) -> str:
    return f"Memory {n}: service-{n} must be restarted after config change {n * 13}.\nKeywords (zh): 服务{n}; 重启"


def indices_for(worker: int) -> list[int]:
    # 200 each, overlapping the next worker's slice by half, wrapping around
    return [(worker * 125 + k) % DISTINCT for k in range(PER_WORKER)]


def writer(tmp: str, worker: int, start: mp.Event) -> None:
    from pathlib import Path

    store = MemoryStore.open(settings_for(Path(tmp)), embedder=HashEmbedder())
    start.wait()
    mine = indices_for(worker)
    for i in range(0, len(mine), 25):
        batch = mine[i:i + 25]
        # a reworded keyword line is still the same memory (exact after normalisation)
        drafts = [MemoryDraft(text=text_of(n) if worker % 2 else text_of(n).replace("重启", "重新启动"),
                              scope="global", category="fact", importance=0.5,
                              metadata={"provenance": {"agent": f"w{worker}", "file": f"w{worker}.jsonl",
                                                       "ranges": [[n, n + 1]]}})
                  for n in batch]
        store.add(drafts)


def test_four_processes_with_overlapping_duplicates(tmp_path):
    MemoryStore.open(settings_for(tmp_path), embedder=HashEmbedder())  # create the table first
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=writer, args=(str(tmp_path), w, start)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0
    expected = {n for w in range(WORKERS) for n in indices_for(w)}
    table = lancedb.connect(str(tmp_path / "db")).open_table("memories")
    texts = [t.split("\n")[0] for t in table.to_arrow()["text"].to_pylist()]
    counts = Counter(texts)
    assert len(texts) == len(expected)
    assert set(counts) == {text_of(n).split("\n")[0] for n in expected}
    assert max(counts.values()) == 1
    ids = table.to_arrow()["id"].to_pylist()
    assert len(set(ids)) == len(ids)
    # each overlapping memory recorded both writers as sources
    import json

    seen = [json.loads(m)["seen_count"] for m in table.to_arrow()["metadata"].to_pylist()]
    assert sum(seen) == WORKERS * PER_WORKER
