"""Does a second reader process pay on a backfill? `python tests/bench/bench_fork.py [--gb 1.1]`

Issue 25's test for the forked reader (removed after this measurement; see docs/tails.md
"Reading on more than one core"): a first `distill run` over ≥ 1 GB of real-shaped OpenClaw
transcripts (bench_tail's mixed sessions: text, thinking, tool output, some of it failed,
base64 images; and bench_vs_script's text-heavy ones), once with
``DISTILL_READ_PROCESSES=1`` and once with ``=2``, alternating, whole process, page cache
warm. It keeps its place only at ≥ 1.5× the single process's wall time.

Run it against a checkout that still has the fork (``--repo``): the variable is ignored
where the fork is gone, and both rows then measure the one process.

``--baseline DIR`` instead times this checkout's one process against another checkout's
(``DISTILL_READ_PROCESSES=1`` for both), alternating, and prints both medians of wall and
CPU time and their ratio: how a change moved a big first read, in the same run.
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
    ap.add_argument("--baseline", type=Path, help="another checkout: one process each, this --repo against it")
    args = ap.parse_args()
    agents = corpus(args.workdir, args.gb)
    size = sum(p.stat().st_size for p in agents.glob("*/sessions/*.jsonl"))
    print(f"corpus: {size / 1e9:.2f} GB in {len(list(agents.glob('*/sessions/*.jsonl')))} files; "
          f"repo {args.repo}; cores {os.cpu_count()}")
    subprocess.run(["cat", *map(str, agents.glob("*/sessions/*.jsonl"))], stdout=subprocess.DEVNULL, check=True)
    # label -> (checkout, DISTILL_READ_PROCESSES)
    runs = {"this": (args.repo, "1"), "baseline": (args.baseline, "1")} if args.baseline else \
        {"processes=1": (args.repo, "1"), "processes=2": (args.repo, "2")}
    rows: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
    for _ in range(args.repeat):
        for label, (repo, n) in runs.items():
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            wall, cpu, line = one_run(repo, sys.executable, agents, args.workdir / "state", n)
            rows[label].append((wall, cpu))
            print(f"  {label}: {wall:6.2f} s wall, {cpu:6.2f} s CPU (load {load})  {line[:90]}", flush=True)
    (a, b) = runs
    wall_a, wall_b = (statistics.median(w for w, _ in rows[k]) for k in (a, b))
    cpu_a, cpu_b = (statistics.median(c for _, c in rows[k]) for k in (a, b))
    if args.baseline:
        print(f"median of {args.repeat}: this {wall_a:.2f} s wall / {cpu_a:.2f} s CPU, baseline {wall_b:.2f} s / "
              f"{cpu_b:.2f} s: this / baseline {wall_a / wall_b:.2f}x wall, {cpu_a / cpu_b:.2f}x CPU")
    else:
        print(f"median wall: one process {wall_a:.2f} s, two {wall_b:.2f} s: {wall_a / wall_b:.2f}x (keep at >= 1.5x)")


if __name__ == "__main__":
    main()
