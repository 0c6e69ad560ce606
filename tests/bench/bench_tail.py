"""Benchmark the tail reader: `python tests/bench/bench_tail.py [--workdir /tmp/distill-bench-tail]`.

Measures in one run, against baselines taken in the same run on the same (page-cached) bytes:
1. `distill run` throughput over a realistic OpenClaw corpus (≥ 200 files, ≥ 200 MB, with
   base64 images and long tool outputs) vs a plain "orjson.loads every line" loop (target ≥ 1.5×)
   and vs `cat` of the same files (the limit; the fraction is reported);
2. a no-op `distill run` over 10,000 unchanged files (target ≤ 0.25 s median), both in-process
   (what the run itself costs) and as the whole command (interpreter and settings start-up included);
3. peak RSS of `distill run` reading one 2 GB transcript (target flat, ≤ 150 MB).

The corpora are generated under --workdir (not in the repository) and reused if present.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))

from distill.tails.ledger import commit_batch, create_batch  # noqa: E402
from distill.config import load_settings  # noqa: E402

MB = 1 << 20


# --- a realistic OpenClaw transcript ------------------------------------------------------

class Writer:
    def __init__(self, rng: random.Random, sid: str):
        self.rng, self.sid, self.n, self.parent = rng, sid, 0, None

    def line(self, message: dict | None = None, **top) -> bytes:
        self.n += 1
        eid = f"{self.n:08x}"
        obj = {"type": "message", "id": eid, "parentId": self.parent, "timestamp": "2026-11-20T09:00:00.000Z"}
        obj.update(top)
        if message is not None:
            obj["message"] = message
        self.parent = eid
        return orjson.dumps(obj) + b"\n"


WORDS = ("deploy build cache retry timeout uv pip numpy lancedb schema index vector token budget cron "
         "worker queue commit cursor offset batch inode rename archive debian ubuntu glibc systemd").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def session_bytes(rng: random.Random, sid: str, target: int, image_b64: str, tool_blob: str) -> bytes:
    w = Writer(rng, sid)
    out = [orjson.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-20T09:00:00.000Z",
                         "cwd": "/home/u/src"}) + b"\n"]
    size = len(out[0])
    while size < target:
        r = rng.random()
        if r < 0.12:
            msg = {"role": "user", "content": [{"type": "text", "text": sentence(rng, rng.randint(8, 60))}]}
            if rng.random() < 0.1:
                msg["content"].append({"type": "image", "data": image_b64[: rng.randint(min(50_000, len(image_b64)), len(image_b64))],
                                       "mimeType": "image/png"})
            b = w.line(msg)
        elif r < 0.35:
            content = [{"type": "thinking", "thinking": sentence(rng, rng.randint(20, 200))}]
            if rng.random() < 0.5:
                content.append({"type": "text", "text": sentence(rng, rng.randint(10, 120))})
            content.append({"type": "toolCall", "id": f"call_{w.n}", "name": "exec",
                            "arguments": {"command": "uv run pytest -q " + rng.choice(WORDS)}})
            b = w.line({"role": "assistant", "content": content, "api": "openai-responses", "provider": "openai",
                        "model": "gpt-5.2", "usage": {"input": 1200, "output": 80}, "stopReason": "toolUse"})
        elif r < 0.95:
            start = rng.randint(0, len(tool_blob) - 1000)
            text = tool_blob[start: start + rng.randint(min(500, len(tool_blob)), 60_000)]
            failed = rng.random() < 0.03
            if failed:
                text = "Error: command failed\n" + text[:2000]
            b = w.line({"role": "toolResult", "toolCallId": f"call_{w.n}", "toolName": "exec",
                        "content": [{"type": "text", "text": text}], "details": {"exitCode": 1 if failed else 0},
                        "isError": failed})
        else:
            b = orjson.dumps({"type": "custom", "customType": "openclaw.cache-ttl", "data": {"ttl": 300},
                              "id": f"c{w.n}", "parentId": w.parent, "timestamp": "2026-11-20T09:00:00.000Z"}) + b"\n"
        out.append(b)
        size += len(b)
    return b"".join(out)


def blobs(rng: random.Random) -> tuple[str, str]:
    image = base64.b64encode(rng.randbytes(400_000)).decode()
    lines = []
    for i in range(4000):
        lines.append(f"{i:05d} PASSED tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)} "
                     f"[{rng.randint(0, 100)}%] {sentence(rng, 6)}")
    return image, "\n".join(lines)


def make_corpus(root: Path, files: int, total: int, seed: int = 7) -> None:
    marker = root / ".complete"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    image, tool = blobs(rng)
    per = total // files
    for i in range(files):
        agent = f"agent{i % 8}"
        d = root / "agents" / agent / "sessions"
        d.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        target = int(per * rng.uniform(0.3, 1.7))
        (d / f"{sid}.jsonl").write_bytes(session_bytes(rng, sid, target, image, tool))
    marker.write_text("ok")


def make_many(root: Path, files: int) -> None:
    marker = root / ".complete"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(11)
    image, tool = blobs(rng)
    for i in range(files):
        d = root / "agents" / f"agent{i % 50}" / "sessions"
        d.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-000000000000"
        (d / f"{sid}.jsonl").write_bytes(session_bytes(rng, sid, 1500, image[:1000], tool[:5000]))
    marker.write_text("ok")


def make_huge(path: Path, size: int) -> None:
    """One 2 GB transcript from a repeated 8 MB block (mostly tool output, a few turns per block)."""
    if path.exists() and path.stat().st_size >= size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(3)
    image, tool = blobs(rng)
    w = Writer(rng, "huge")
    parts = [w.line({"role": "user", "content": [{"type": "text", "text": sentence(rng, 30)}]}),
             w.line({"role": "user", "content": [{"type": "text", "text": "see the screenshot"},
                                                 {"type": "image", "data": image, "mimeType": "image/png"}]})]
    while sum(map(len, parts)) < 8 * MB:
        parts.append(w.line({"role": "toolResult", "toolName": "exec", "content": [{"type": "text", "text": tool * 3}],
                             "isError": False}))
    block = b"".join(parts)
    header = orjson.dumps({"type": "session", "version": 3, "id": "huge", "timestamp": "2026-11-20T09:00:00Z"}) + b"\n"
    with open(path, "wb") as f:
        f.write(header)
        written = len(header)
        while written < size:
            f.write(block)
            written += len(block)


# --- measurements -------------------------------------------------------------------------

def files_of(root: Path) -> list[Path]:
    return sorted((root / "agents").glob("*/sessions/*.jsonl"))


def settings_for(root: Path, state: Path, **kw):
    shutil.rmtree(state, ignore_errors=True)
    return load_settings(state_dir=state, agents_dir=root / "agents", **kw)


def time_run(root: Path, state: Path) -> tuple[float, int, int]:
    s = settings_for(root, state, max_messages_per_agent=10**9)
    t = time.perf_counter()
    res = create_batch(s)
    dt = time.perf_counter() - t
    return dt, res.summary.bytes, res.summary.turns


def time_reader(paths: list[Path]) -> float:
    """The tail reader alone: complete lines out of the files, nothing parsed."""
    from distill.tails.reader import TailReader

    t = time.perf_counter()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            for _ in TailReader(fd, 0, os.fstat(fd).st_size, max_line=8 * MB).lines():
                pass
        finally:
            os.close(fd)
    return time.perf_counter() - t


def time_could_yield(paths: list[Path]) -> float:
    """The reader plus the format's bytes pre-test (``could_yield``) on every line."""
    from distill.sources import get_format
    from distill.tails.reader import TailReader

    could = get_format("openclaw").could_yield
    t = time.perf_counter()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            for line, _, _ in TailReader(fd, 0, os.fstat(fd).st_size, max_line=8 * MB).lines():
                could(line)
        finally:
            os.close(fd)
    return time.perf_counter() - t


def time_orjson(paths: list[Path]) -> float:
    t = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            for line in f:
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
    return time.perf_counter() - t


def time_cat(paths: list[Path]) -> float:
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(["cat", *map(str, paths)], stdout=null, check=True)
    return time.perf_counter() - t


def cli(state: Path, agents: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(state), "--agents-dir", str(agents),
                           *args], capture_output=True, text=True, check=True, cwd=HERE.parents[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/distill-bench-tail"))
    ap.add_argument("--files", type=int, default=220)
    ap.add_argument("--mb", type=int, default=240)
    ap.add_argument("--huge-gb", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    wd = a.workdir
    rows = []

    print(f"generating corpora under {wd} (reused when present) ...", flush=True)
    corpus = wd / "corpus"
    make_corpus(corpus, a.files, a.mb * MB)
    paths = files_of(corpus)
    total = sum(p.stat().st_size for p in paths)
    time_cat(paths)  # warm the page cache for everyone

    runs, loops, cats, readers, coulds = [], [], [], [], []
    for _ in range(a.repeat):
        dt, nbytes, turns = time_run(corpus, wd / "state-corpus")
        runs.append(dt)
        loops.append(time_orjson(paths))
        cats.append(time_cat(paths))
        readers.append(time_reader(paths))
        coulds.append(time_could_yield(paths))
    assert nbytes == total, f"run read {nbytes} of {total} bytes"
    run_t, loop_t, cat_t = statistics.median(runs), statistics.median(loops), statistics.median(cats)
    rows += [
        (f"corpus: {len(paths)} files, {total / MB:.0f} MiB, {turns} turns", "", ""),
        ("distill run (create_batch) throughput", f"{total / MB / run_t:.0f} MiB/s", f"{run_t:.2f} s"),
        ("orjson.loads every line", f"{total / MB / loop_t:.0f} MiB/s", f"{loop_t:.2f} s"),
        ("cat", f"{total / MB / cat_t:.0f} MiB/s", f"{cat_t:.2f} s"),
        ("  part: tail reader alone (complete lines, no parsing)", f"{total / MB / statistics.median(readers):.0f} MiB/s",
         f"{statistics.median(readers):.2f} s"),
        ("  part: reader + could_yield on every line", f"{total / MB / statistics.median(coulds):.0f} MiB/s",
         f"{statistics.median(coulds):.2f} s"),
        ("run vs orjson loop (target >= 1.5x)", f"{loop_t / run_t:.2f}x", ""),
        ("run as a fraction of cat", f"{cat_t / run_t:.0%}", ""),
    ]

    many = wd / "many"
    print(*rows, sep="\n", flush=True)
    make_many(many, 10_000)
    s = settings_for(many, wd / "state-many", max_messages_per_agent=10**9)
    while True:  # read everything once and commit, so the next runs have nothing to do
        res = create_batch(s)
        if not res.batch_file:
            break
        commit_batch(s, Path(res.batch_file))
    noop, noop_cpu = [], []
    for _ in range(7):
        t, c = time.perf_counter(), time.process_time()
        res = create_batch(s)
        noop.append(time.perf_counter() - t)
        noop_cpu.append(time.process_time() - c)
        assert res.action == "noop" and res.summary.bytes == 0
    wall = []
    for _ in range(5):
        t = time.perf_counter()
        out = cli(s.state_dir, s.agents_dir, "run", "--json")
        wall.append(time.perf_counter() - t)
        assert json.loads(out.stdout)["action"] == "noop"
    t = time.perf_counter()
    cli(s.state_dir, s.agents_dir, "--help")
    startup = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from distill.config import load_settings; load_settings()"], check=True)
    settings_startup = time.perf_counter() - t
    rows += [
        ("no-op run, 10,000 unchanged files, in-process (target <= 0.25 s)", f"{statistics.median(noop):.3f} s",
         f"median of 7; CPU {statistics.median(noop_cpu):.3f} s; load average {os.getloadavg()[0]:.1f}"),
        ("no-op `distill run` command, wall", f"{statistics.median(wall):.3f} s", "median of 5"),
        ("  of which: python + `distill --help`", f"{startup:.3f} s", ""),
        ("  of which: python + load_settings()", f"{settings_startup:.3f} s", ""),
    ]

    huge = wd / "huge" / "agents" / "main" / "sessions" / "huge.jsonl"
    make_huge(huge, int(a.huge_gb * (1 << 30)))
    state = wd / "state-huge"
    shutil.rmtree(state, ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "distill", "--state-dir", str(state),
                        "--agents-dir", str(wd / "huge" / "agents"), "run", "--json"],
                       capture_output=True, text=True, check=True, cwd=HERE.parents[2])
    dt = time.perf_counter() - t
    rss_kb = int(p.stderr.strip().splitlines()[-1])
    out = json.loads(p.stdout)
    assert out["summary"]["bytes"] == huge.stat().st_size, out["summary"]
    rows += [
        (f"peak RSS, `distill run` over one {huge.stat().st_size / (1 << 30):.1f} GiB transcript (target <= 150 MB)",
         f"{rss_kb / 1024:.0f} MiB", f"{dt:.1f} s, {out['summary']['turns']} turns"),
    ]

    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")


if __name__ == "__main__":
    main()
