"""Start-up cost of the commands a person or an agent waits on, as ratios to a bare interpreter.

    python tests/bench/bench_startup.py [--repeat 5] [--baseline DIR]

Builds a small store (30 memories, local embedder) in a temporary folder, then times, interleaved
so machine load hits all alike, the median wall time of:

* ``python -c pass`` (the floor for any Python command) and ``python -c "import lancedb"``
  (the floor for any command that opens the table);
* ``distill memories list``, ``stats``, ``show ID``, and a cold ``search`` (embedder loaded), in
  English, in Chinese, and in Chinese against English memories just under the floor (the second
  opinion's model, USE, loads too: distill/store/second_opinion.py);
* ``distill mcp``: spawn → ``initialize`` → ``tools/list`` answered, over stdio (no LanceDB,
  no embedder: they load on the first tool call), and the first ``recall`` after that.

With ``--baseline DIR`` (another source tree of distill, e.g. ``git archive main | tar -x -C DIR``)
every distill command is also timed from that tree, interleaved with this one, and the table
shows both medians and their ratio: before and after a change, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def timed(argv: list[str], env: dict[str, str], stdin: str | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def mcp_start(env: dict[str, str], with_recall: bool) -> tuple[float, float | None]:
    """Seconds until tools/list is answered; then until the first recall is answered."""
    proc = subprocess.Popen([sys.executable, "-m", "distill", "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    t0 = time.perf_counter()

    def send(msg: dict) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def answer(want: int) -> dict:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("distill mcp closed its output")
            msg = json.loads(line)
            if msg.get("id") == want:
                return msg

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    answer(2)
    listed = time.perf_counter() - t0
    recalled = None
    if with_recall:
        t1 = time.perf_counter()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "recall", "arguments": {"query": "E11000 duplicate key"}}})
        answer(3)
        recalled = time.perf_counter() - t1
    proc.stdin.close()
    proc.wait(timeout=30)
    return listed, recalled


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline", help="another distill source tree to time alongside this one")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    env = {**os.environ, "DISTILL_DB": str(tmp / "db"), "DISTILL_STATE_DIR": str(tmp / "state"),
           "PYTHONPATH": str(REPO)}
    from distill.config import load_settings
    from distill.store.memory import MemoryStore
    from distill.store.models import MemoryDraft
    from tests.relevance_corpus import TARGETS

    store = MemoryStore.open(load_settings(db=str(tmp / "db"), state_dir=str(tmp / "state")))
    outcomes = store.add([MemoryDraft(text=t, category="fact") for t in list(TARGETS.values())[:30]])
    some_id = outcomes[0].id[:8]

    py = [sys.executable]
    cases = {
        "python -c pass": py + ["-c", "pass"],
        "python -c 'import lancedb'": py + ["-c", "import lancedb"],
        "distill memories list": py + ["-m", "distill", "memories", "list", "--limit", "20"],
        "distill memories stats": py + ["-m", "distill", "memories", "stats"],
        "distill memories show ID": py + ["-m", "distill", "memories", "show", some_id],
        "distill memories search (cold)": py + ["-m", "distill", "memories", "search", "E11000 duplicate key"],
        "distill memories search (cold, Chinese)": py + ["-m", "distill", "memories", "search", "数据库迁移失败"],
        # English memories just under the floor for it: the second opinion (USE) loads
        "distill memories search (cold, Chinese, near misses)": py + ["-m", "distill", "memories", "search", "部署之后页面白屏怎么办？"],
    }
    trees = {"": env}
    if args.baseline:
        trees["baseline "] = {**env, "PYTHONPATH": str(Path(args.baseline).resolve())}
    times: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, argv in cases.items():
            for label, tree_env in trees.items() if "distill" in name else [("", env)]:
                times.setdefault(label + name, []).append(timed(argv, tree_env))
        for label, tree_env in trees.items():
            listed, recalled = mcp_start(tree_env, with_recall=True)
            times.setdefault(label + "distill mcp: tools/list answered", []).append(listed)
            times.setdefault(label + "distill mcp: first recall (loads store+embedder)", []).append(recalled or 0.0)
    base = statistics.median(times["python -c pass"])
    print(f"median of {args.repeat} runs, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, values in times.items():
        if name.startswith("baseline "):
            continue
        med = statistics.median(values)
        before = times.get("baseline " + name)
        vs = f"  baseline {statistics.median(before):7.3f} s  after/before {med / statistics.median(before):5.2f}" \
            if before else ""
        print(f"{name:50s} {med:7.3f} s  {med / base:6.1f}x python -c pass{vs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
