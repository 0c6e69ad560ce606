"""Do two trees cut the same turns? `python tests/bench/same_turns.py [--baseline-rev main] CORPUS...`

A speed change to the per-line work (decode, strip, noise, attribution, clip, redaction) must
not change what reaches a batch file. For each corpus (a folder holding ``agents/``, as the
tail and script benchmarks generate: ``/tmp/distill-bench-tail/corpus``,
``/tmp/distill-bench-vs-script/full/text``, …), this runs ``create_batch`` with every message
unbounded, once with this tree and once with ``--baseline-rev`` (exported from git), each in
its own interpreter, and compares the batch files' messages and parse counters field by field
(the batch id, creation time and state paths aside). Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# run in a child interpreter whose sys.path starts with the tree under test
_DUMP = """
import json, sys, tempfile
from pathlib import Path
if (Path(sys.path[0]) / "distill" / "tails" / "ledger.py").exists():
    from distill.tails.ledger import create_batch
else:  # a baseline from before the tails package (not ImportError: an editable install would answer)
    from distill.batch import create_batch
from distill.config import load_settings
corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
with tempfile.TemporaryDirectory() as state:
    res = create_batch(load_settings(state_dir=Path(state), agents_dir=corpus / "agents", max_messages_per_agent=10**9))
    made = getattr(res, "batch_file", None) or getattr(res, "batchFile", None)
    batch = json.loads(Path(made).read_text()) if made else {"agents": [], "counters": {}}
key = lambda m: m["id"]
msgs = sorted((dict(m, agentId=a["agentId"]) for a in batch["agents"] for m in a["messages"]), key=key)
out.write_text(json.dumps({"messages": msgs, "counters": batch.get("counters", {})}, ensure_ascii=False))
"""


def dump(tree: Path, corpus: Path, out: Path) -> dict:
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n" + _DUMP,
                    str(corpus), str(out)], check=True, cwd=tree)
    return json.loads(out.read_text())


def export(rev: str, into: Path) -> Path:
    tar = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into


def compare(new: dict, old: dict) -> list[str]:
    diffs = []
    a, b = {m["id"]: m for m in new["messages"]}, {m["id"]: m for m in old["messages"]}
    for mid in sorted(a.keys() - b.keys())[:5]:
        diffs.append(f"only in this tree: {mid} {a[mid]['text'][:80]!r}")
    for mid in sorted(b.keys() - a.keys())[:5]:
        diffs.append(f"only in the baseline: {mid} {b[mid]['text'][:80]!r}")
    changed = [mid for mid in sorted(a.keys() & b.keys()) if a[mid] != b[mid]]
    for mid in changed[:5]:
        fields = [k for k in a[mid].keys() | b[mid].keys() if a[mid].get(k) != b[mid].get(k)]
        diffs.append(f"{mid} differs in {fields}: {a[mid].get(fields[0])!r:.120} vs {b[mid].get(fields[0])!r:.120}")
    if len(changed) > 5:
        diffs.append(f"… and {len(changed) - 5} more changed messages")
    if new["counters"] != old["counters"]:
        keys = sorted(k for k in new["counters"].keys() | old["counters"].keys()
                      if new["counters"].get(k) != old["counters"].get(k))
        diffs.append("counters differ: " + ", ".join(f"{k} {new['counters'].get(k)} vs {old['counters'].get(k)}"
                                                    for k in keys))
    return diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="main")
    ap.add_argument("corpus", type=Path, nargs="+")
    a = ap.parse_args()
    bad = False
    with tempfile.TemporaryDirectory() as tmp:
        base = export(a.baseline_rev, Path(tmp) / "baseline")
        for corpus in a.corpus:
            new, old = dump(ROOT, corpus, Path(tmp) / "new.json"), dump(base, corpus, Path(tmp) / "old.json")
            diffs = compare(new, old)
            print(f"{corpus}: {len(new['messages'])} messages in this tree, {len(old['messages'])} at "
                  f"{a.baseline_rev}: {'the same' if not diffs else 'DIFFERENT'}")
            for d in diffs:
                print("  " + d)
            bad |= bool(diffs)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
