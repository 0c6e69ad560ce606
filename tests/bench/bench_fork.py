"""Does a second reader process pay on a backfill? `python tests/bench/bench_fork.py [--gb 1.1]`

Issue 25's test for the forked reader (removed after this measurement; see docs/tails.md
"Reading on more than one core"): a first `distill run` over ≥ 1 GB of real-shaped OpenClaw
transcripts (bench_tail's mixed sessions: text, thinking, tool output, some of it failed,
base64 images; and bench_vs_script's text-heavy ones), once with
``DISTILL_READ_PROCESSES=1`` and once with ``=2``, alternating, whole process, page cache
warm. It keeps its place only at ≥ 1.5× the single process's wall time.

Run it against a checkout that still has the fork (``--repo``): the variable is ignored
where the fork is gone, and both rows then measure the one process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from bench_tail import MB, make_corpus  # noqa: E402
from bench_vs_script import make_text_corpus  # noqa: E402


def corpus(work: Path, gb: float) -> Path:
    root = work / "corpus"
    total = int(gb * 1024 * MB)
    make_corpus(root / "mixed", files=300, total=total // 2)
    make_text_corpus(root / "text", files=200, lines_total=max(1, total // 2 // 15_000))
    agents = root / "agents"
    if not agents.exists():
        for part in ("mixed", "text"):
            for d in (root / part / "agents").iterdir():
                dest = agents / f"{part}-{d.name}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                d.rename(dest)
    return agents


def one_run(repo: Path, python: str, agents: Path, state: Path, processes: str) -> tuple[float, float, str]:
    shutil.rmtree(state, ignore_errors=True)
    env = dict(os.environ, DISTILL_READ_PROCESSES=processes, DISTILL_MAX_MESSAGES_PER_AGENT=str(10**9),
               PYTHONPATH=str(repo))
    before = os.times()
    t = time.perf_counter()
    p = subprocess.run([python, "-m", "distill", "--state-dir", str(state), "--agents-dir", str(agents), "run",
                        "--json"], env=env, capture_output=True, text=True, cwd=repo, check=True)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, p.stdout.strip().splitlines()[-1][:200]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/distill-bench-fork"))
    ap.add_argument("--gb", type=float, default=1.1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repo", type=Path, default=HERE.parents[2], help="the checkout whose distill runs")
    args = ap.parse_args()
    agents = corpus(args.workdir, args.gb)
    size = sum(p.stat().st_size for p in agents.glob("*/sessions/*.jsonl"))
    print(f"corpus: {size / 1e9:.2f} GB in {len(list(agents.glob('*/sessions/*.jsonl')))} files; "
          f"repo {args.repo}; cores {os.cpu_count()}")
    subprocess.run(["cat", *map(str, agents.glob("*/sessions/*.jsonl"))], stdout=subprocess.DEVNULL, check=True)
    rows: dict[str, list[tuple[float, float]]] = {"1": [], "2": []}
    for _ in range(args.repeat):
        for n in ("1", "2"):
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            wall, cpu, line = one_run(args.repo, sys.executable, agents, args.workdir / "state", n)
            rows[n].append((wall, cpu))
            print(f"  processes={n}: {wall:6.2f} s wall, {cpu:6.2f} s CPU (load {load})  {line[:90]}")
    one = statistics.median(w for w, _ in rows["1"])
    two = statistics.median(w for w, _ in rows["2"])
    print(f"median wall: one process {one:.2f} s, two {two:.2f} s: {one / two:.2f}x (keep at >= 1.5x)")


if __name__ == "__main__":
    main()
