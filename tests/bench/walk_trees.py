"""The per-line work of two trees, in process: `python tests/bench/walk_trees.py [--baseline-rev main] CORPUS...`

What a speed change to ``distill/sources`` or ``distill/text`` buys, without the noise of a
whole ``distill run`` (start-up, reading, the batch write). For each corpus (a folder holding
``agents/``, as ``same_turns.py`` takes), each tree runs in its own interpreter: it reads every
OpenClaw file into memory once, then times, ``--repeat`` times, the bytes pre-test
(``could_yield_at``) on every line and ``feed`` on those it passes, as the reader calls them.
The trees alternate ``--rounds`` times; the figure is CPU time (``time.process_time``), median
and fastest, so other work on a shared machine distorts it less than wall time. Run
``same_turns.py`` for whether the two cut the same turns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from same_turns import ROOT, export  # noqa: E402

_WALK = """
import json, os, statistics, sys, time
from collections import Counter
from distill.model import TurnLimits
from distill.sources import detect_format
corpus, repeat = sys.argv[1], int(sys.argv[2])
files = []
for root, _, names in os.walk(corpus):
    for name in sorted(names):
        if name.endswith(".jsonl"):
            path = os.path.join(root, name)
            data = open(path, "rb").read()
            spans, pos = [], 0
            while pos < len(data):
                j = data.find(b"\\n", pos)
                j = len(data) if j < 0 else j + 1
                spans.append((pos, j))
                pos = j
            if spans:
                files.append((path, data, spans))
limits = TurnLimits()
def walk():
    turns, counters = 0, Counter()
    for path, data, spans in files:
        fmt = detect_format(data[: spans[0][1]], path)
        parser = fmt.new_parser(agent_id="a", file=path, session_id="s", counters=counters, limits=limits)
        could_yield_at, feed = fmt.could_yield_at, parser.feed
        for s, e in spans:
            if could_yield_at(data, s, e):
                turns += len(feed(data[s:e], s, e))
        turns += len(parser.finish())
    return turns
turns = walk()  # first use: patterns compile, modules load
times = []
for _ in range(repeat):
    t = time.process_time()
    walk()
    times.append(time.process_time() - t)
print(json.dumps({"turns": turns, "times": times}))
"""


def timed(tree: Path, corpus: Path, repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n" + _WALK,
                          str(corpus / "agents"), str(repeat)], check=True, capture_output=True, cwd=tree)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-rev", default="main")
    ap.add_argument("--repeat", type=int, default=5, help="walks per interpreter")
    ap.add_argument("--rounds", type=int, default=3, help="interpreters per tree, the trees alternating")
    ap.add_argument("corpus", type=Path, nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.baseline_rev, Path(tmp))
        for corpus in args.corpus:
            runs: dict[str, list[float]] = {"this tree": [], args.baseline_rev: []}
            turns = {}
            for _ in range(args.rounds):
                for name, tree in (("this tree", ROOT), (args.baseline_rev, base)):
                    got = timed(tree, corpus, args.repeat)
                    runs[name] += got["times"]
                    turns[name] = got["turns"]
            med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
            print(f"{corpus}: {turns['this tree']} turns (baseline {turns[args.baseline_rev]}); per-line work, CPU, "
                  f"median / fastest of {len(runs['this tree'])}:")
            for name, v in runs.items():
                print(f"  {name:12s} {med[name] * 1e3:7.1f} ms / {min(v) * 1e3:7.1f} ms")
            print(f"  this tree / baseline: {med['this tree'] / med[args.baseline_rev]:.3f} (median), "
                  f"{min(runs['this tree']) / min(runs[args.baseline_rev]):.3f} (fastest)"
                  f"   load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
