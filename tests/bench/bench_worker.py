"""Worker benchmark: enqueue wall time, task → stored latency, idle CPU and RSS of the daemon.

Run by hand (not collected by pytest):  python tests/bench/bench_worker.py [--calls 40] [--rounds 5]

1. ``distill enqueue`` wall time per call (the console script, as a hook runs it), median of
   ``--calls``; the bare interpreter start (``python -c pass``) is measured in the same run as
   the floor no Python CLI can beat. Target ≤ 50 ms median.
2. Task file written → memories stored, with the default providers (rules distiller, local
   embedder) in a warm daemon; the rules distiller makes no LLM call, so its "LLM time" is the
   extraction inside the run, reported separately. Target ≤ 1 s minus LLM time.
3. The idle daemon's CPU over ``--idle`` seconds (inotify and polling) and its RSS after a
   task, i.e. with LanceDB and the local embedder loaded. Targets ≈ 0 and ≤ 250 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.tail_helpers import header, msg  # noqa: E402

BIN = Path(sys.executable).parent
FACTS = [
    "记住：以后这个仓库一律用 uv 管理依赖，不要用 pip。",
    "We decided to deploy the billing service only on Debian 12 hosts, because Ubuntu images lack libssl 3.",
    "From now on always run pytest -x -q before committing.",
]


def timed_pair(cmds: dict[str, list[str]], env: dict, n: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU ms per call, the commands interleaved so load drift hits them alike."""
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in cmds}
    for _ in range(n):
        for name, cmd in cmds.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            wall = (time.perf_counter() - t) * 1000
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out[name][0].append(wall)
            out[name][1].append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_for(pred, timeout=120.0, step=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(step)
    raise TimeoutError


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--idle", type=float, default=20.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-worker-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env.update(DISTILL_STATE_DIR=str(work / "state"), DISTILL_AGENTS_DIR=str(work / "agents"),
               DISTILL_DB=str(work / "db"))
    session = work / "agents" / "main" / "sessions" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(header("s1") + msg(FACTS[0], "user", 0))
    rows = []

    # 1. enqueue wall time
    got = timed_pair({"floor": [sys.executable, "-c", "pass"],
                      "enqueue": [str(BIN / "distill"), "enqueue", "--agent", "main", "--session-file", str(session)]},
                     env, args.calls)
    (base, base_cpu), (enq, enq_cpu) = got["floor"], got["enqueue"]
    med = statistics.median
    rows.append(("python -c pass (interpreter floor), median wall / CPU",
                 f"{med(base):.1f} / {med(base_cpu):.1f} ms", ""))
    rows.append(("distill enqueue, median wall", f"{med(enq):.1f} ms", "≤ 50 ms"))
    rows.append(("distill enqueue, min / p90 wall", f"{min(enq):.1f} / {statistics.quantiles(enq, n=10)[-1]:.1f} ms", ""))
    rows.append(("distill enqueue, median CPU", f"{med(enq_cpu):.1f} ms", ""))
    rows.append(("distill enqueue minus interpreter floor (median wall)", f"{med(enq) - med(base):.1f} ms", ""))
    shutil.rmtree(work / "state" / "queue")

    # 2. latency in a warm daemon
    worker = subprocess.Popen([str(BIN / "distill-worker")], env=env, stderr=subprocess.PIPE, text=True)
    done_dir = work / "state" / "queue" / "done"
    sys.path.insert(0, str(ROOT))
    os.environ.update({k: v for k, v in env.items() if k.startswith("DISTILL_")})
    from distill.config import load_settings
    from distill.enqueue import enqueue
    from distill.settings.hook import HookConfig

    cfg = HookConfig.from_settings(load_settings())
    try:
        enqueue(cfg, "main", str(session))  # first task: loads everything, not measured
        wait_for(lambda: list(done_dir.glob("*.json")))
        lat, run_s = [], []
        for i in range(args.rounds):
            with open(session, "ab") as fh:
                fh.write(msg(f"{FACTS[1 + i % 2]} (round {i})", "user", i + 1))
            before = set(done_dir.glob("*.json"))
            t = time.perf_counter()
            enqueue(cfg, "main", str(session))
            new = wait_for(lambda: set(done_dir.glob("*.json")) - before)
            lat.append(time.perf_counter() - t)
            stats = json.loads(next(iter(new)).read_text())["stats"]
            run_s.append(stats["seconds"])
            assert stats["memories_added"] >= 0
        rows.append(("task written -> memories stored (warm, rules), median", f"{statistics.median(lat) * 1000:.0f} ms",
                     "≤ 1000 ms - LLM"))
        rows.append(("  of which the pipeline run (tail+rules+embed+store+commit)",
                     f"{statistics.median(run_s) * 1000:.0f} ms", ""))
        rows.append(("  queue overhead (pickup, claim, file away)",
                     f"{(statistics.median(lat) - statistics.median(run_s)) * 1000:.0f} ms", ""))
        time.sleep(2)
        c0, t0 = cpu_seconds(worker.pid), time.monotonic()
        time.sleep(args.idle)
        cpu = (cpu_seconds(worker.pid) - c0) / (time.monotonic() - t0) * 100
        rows.append((f"idle CPU, inotify ({args.idle:.0f} s)", f"{cpu:.2f} %", "≈ 0"))
        rows.append(("RSS after tasks (LanceDB + local embedder loaded)", f"{rss_mb(worker.pid):.0f} MB", "≤ 250 MB"))
    finally:
        worker.terminate()
        worker.wait(15)
    poller = subprocess.Popen([str(BIN / "distill-worker")], env={**env, "DISTILL_WORKER_POLL": "1"},
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(8)  # warm-up
        c0, t0 = cpu_seconds(poller.pid), time.monotonic()
        time.sleep(args.idle)
        cpu = (cpu_seconds(poller.pid) - c0) / (time.monotonic() - t0) * 100
        rows.append((f"idle CPU, polling fallback ({args.idle:.0f} s)", f"{cpu:.2f} %", "≈ 0"))
        rows.append(("RSS idle after warm-up (embedder loaded, no task yet)", f"{rss_mb(poller.pid):.0f} MB", ""))
    finally:
        poller.terminate()
        poller.wait(15)
    shutil.rmtree(work, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>10}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>10}  {target}")


if __name__ == "__main__":
    main()
