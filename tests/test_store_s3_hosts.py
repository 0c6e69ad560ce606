"""Two hosts (separate state dirs, two processes each) writing one table on an object store at
once, with exact and near duplicates across hosts and SIGKILLs during commits: nothing lost,
nothing stored twice, near duplicates folded by the next converge pass.

The suite runs 4 writers x ``PER_WRITER`` memories (small, to keep the run short); set
``DISTILL_S3_PER_WRITER=200`` for the issue's 4 x 200 (tests/bench/bench_s3.py prints that run).
The writers use the store API with a deterministic embedder (as test_store_concurrency does):
this test is about commits, not meaning; test_store_s3 runs the whole pipeline on S3.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import random
import signal
import time
from collections import Counter

import lancedb
import numpy as np

from distill.store import MemoryDraft, MemoryStore
from distill.store import converge as conv
from distill.store import provenance as prov
from distill.store.dedup import content_hash, normalise
from tests.s3_server import s3_server  # noqa: F401  (fixture)

PER_WRITER = int(os.environ.get("DISTILL_S3_PER_WRITER", "30"))
DISTINCT = PER_WRITER * 5 // 2
BATCH = 5  # memories per add(): several commits per writer, so a kill lands between its first and last
HOSTS = {"host-a": (0, 1), "host-b": (2, 3)}  # host -> its writers


def text_of(n: int, near: bool = False) -> str:
    verb = "has to be restarted" if near else "must be restarted"
    return f"Pitfall: service-{n} {verb} after its config file changes.\nKeywords (zh): 服务{n}; 重启"


def base_of(text: str) -> str:
    return normalise(text).replace("has to be", "must be")


class NearEmbedder:
    """A near variant (``text_of(n, near=True)``) lands at cosine ~0.998 of the original; other
    memories are ~orthogonal. Deterministic, so every process agrees."""

    name = "test:near"
    dim = 384

    def _vec(self, text: str) -> np.ndarray:
        def seeded(s: str) -> np.ndarray:
            seed = int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "little")
            return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)

        v = seeded(base_of(text)) + 0.05 * seeded(normalise(text))
        return v / np.linalg.norm(v)

    def passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def query(self, text: str) -> np.ndarray:
        return self._vec(text)


def indices_for(writer: int) -> list[int]:
    return [(writer * PER_WRITER * 5 // 8 + k) % DISTINCT for k in range(PER_WRITER)]


def writer(env: dict, uri: str, state: str, host: str, w: int, start_at: float, progress: str) -> None:
    os.environ.update(env)
    from distill.config import load_settings

    store = MemoryStore.open(load_settings(db=uri, state_dir=state, host=host), embedder=NearEmbedder())
    while time.time() < start_at:
        time.sleep(0.01)
    mine = indices_for(w)
    for i in range(0, len(mine), BATCH):
        # host-b words even memories differently: a near duplicate of host-a's
        store.add([MemoryDraft(text=text_of(n, near=host == "host-b" and n % 2 == 0), scope="global", category="fact",
                               metadata={"provenance": {"agent": "main", "file": f"{host}/w{w}.jsonl",
                                                        "ranges": [[n, n + 1]]}})
                   for n in mine[i:i + BATCH]])
        with open(progress, "ab") as f:  # one byte per committed batch: the test kills after the first
            f.write(b".")


def test_two_hosts_four_writers_sigkilled_lose_and_double_nothing(tmp_path, s3_server):  # noqa: F811
    uri = f"s3://{s3_server.bucket()}/team"
    env = s3_server.env()
    os.environ.update(env)
    from distill.config import load_settings

    first = load_settings(db=uri, state_dir=str(tmp_path / "host-a"), host="host-a")
    MemoryStore.open(first, embedder=NearEmbedder())  # the table exists before the writers start
    ctx = mp.get_context("spawn")
    start_at = time.time() + 8  # every writer has imported and opened the table by then
    progress = {w: tmp_path / f"progress-{w}" for w in (w for ws in HOSTS.values() for w in ws)}
    args = {w: (env, uri, str(tmp_path / host), host, w, start_at, str(progress[w]))
            for host, ws in HOSTS.items() for w in ws}
    procs = {w: ctx.Process(target=writer, args=a) for w, a in args.items()}
    for p in procs.values():
        p.start()
    rng = random.Random(26)
    killed = [0, 2]  # one writer of each host, in the middle of its commits: after its first batch
    delay = {w: rng.uniform(0.0, 0.02) for w in killed}
    due: dict[int, float] = {}
    pending, deadline = set(killed), time.monotonic() + 120
    while pending:
        now = time.monotonic()
        for w in sorted(pending):
            if w not in due and progress[w].exists() and progress[w].stat().st_size:
                due[w] = now + delay[w]
            if w in due and now >= due[w]:
                assert procs[w].is_alive(), "the writer finished before it could be killed: kill earlier"
                os.kill(procs[w].pid, signal.SIGKILL)
                pending.discard(w)
        assert now < deadline, f"writers {sorted(pending)} never committed a first batch"
        time.sleep(0.001)
    for w in killed:
        procs[w].join(30)
        # the killed writer's host runs again: the same input, as a cursor that never moved replays it
        procs[w] = ctx.Process(target=writer, args=(*args[w][:5], 0.0, str(progress[w])))
        procs[w].start()
    for p in procs.values():
        p.join(600)
        assert p.exitcode == 0

    store = MemoryStore.open(first, embedder=NearEmbedder())
    report = conv.run(store, window_minutes=None)
    print(report)
    table = lancedb.connect(uri).open_table("memories")
    rows = table.to_arrow().to_pylist()
    expected = {n for w in args for n in indices_for(w)}
    ids = Counter(r["id"] for r in rows)
    hashes = Counter(content_hash(r["text"]) for r in rows)
    bases = Counter(base_of(r["text"]) for r in rows)
    assert max(ids.values()) == 1 and max(hashes.values()) == 1  # 0 exact duplicates
    assert set(bases) == {base_of(text_of(n)) for n in expected}  # 0 lost
    assert max(bases.values()) == 1, report  # near duplicates folded
    # every sighting kept: a memory both hosts wrote records both
    both = {n for n in expected if any(n in indices_for(w) for w in HOSTS["host-a"])
            and any(n in indices_for(w) for w in HOSTS["host-b"])}
    for r in rows:
        n = int(r["text"].split("service-")[1].split(" ")[0])
        hosts = {s["host"] for s in prov.history_of(json.loads(r["metadata"]))}
        assert hosts == {"host-a", "host-b"} if n in both else len(hosts) == 1, (n, hosts)
