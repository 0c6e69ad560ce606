"""What the default distiller stores from real session trees, scored by independent labels.

    .venv/bin/python tests/bench/real_quality.py [--trees DIR] [--only cat-tj,claudehome]
        [--labels FILE] [--recall FILE] [--keep DIR]

Does what a new user does (issue 21): for each tree under ``--trees`` (default
``$DISTILL_REAL_TREES`` or ``/work/trees``), a fresh state directory with default settings,
then ``distill run --distill`` and ``distill backfill`` as real processes. The trees are
public backups of real sessions (``Cat-tj/openclaw-config-backup``, ``Eduardodmb/ClaudeHome``,
``VerveAILabs/openclaw-backup``, ``openclawlaw-cpu/OpenClawLog``); they are never in the
repository, and CI has none: without them the bench says so and exits 0.

Where a tree's transcripts are: ``agents/`` or ``.openclaw/agents/`` (OpenClaw, read as the
agents folder), ``projects/`` (Claude Code, read as a ``[[sources]]`` root).

Scoring: stored memories are joined by ``metadata.content_hash`` with
``tests/data/real_quality/labels.jsonl`` (one JSON object a line: tree, file, entry_ids,
hash, kind, label useful/partly/junk, cause, reason; labelled by someone other than the
author of the code, by ``/work/labels/RUBRIC.md``; no transcript text). Printed per tree and
per kind (pitfalls; rules, preferences and decisions): useful / partly / junk / unlabelled,
junk by cause, and every unlabelled memory (hash, file, entry ids) so it can be labelled
blind. Recall: ``tests/data/real_quality/recall.jsonl`` lists what a careful reader kept
from 20 sessions read in full (file, starting with the tree's name, kind, entities, gist;
``kind: none`` for a session with nothing to keep); a listed memory counts as found
when a stored memory from the same file mentions one of its entities, case-insensitively.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "real_quality"
DISTILL = [sys.executable, "-m", "distill"]
PITFALLS, STATEMENTS = "pitfalls", "rules/preferences/decisions"


def tree_config(tree: Path, state: Path) -> str | None:
    """config.toml reading ``tree`` with default settings (None: no transcripts found)."""
    empty = state / "no-agents"
    empty.mkdir(parents=True, exist_ok=True)
    for agents in (tree / "agents", tree / ".openclaw" / "agents"):
        if agents.is_dir():
            return f'agents_dir = "{agents}"\ndb = "memory"\n'
    if (tree / "projects").is_dir():
        return (f'agents_dir = "{empty}"\ndb = "memory"\n[[sources]]\npath = "{tree / "projects"}"\n'
                'agent_id = "claude-code"\nformat = "claude-code"\n')
    return None


def run_tree(tree: Path, state: Path) -> tuple[list[dict], dict[str, float]]:
    """Stored memories (export rows, metadata decoded) after run --distill then backfill."""
    config = tree_config(tree, state)
    if config is None:
        return [], {}
    (state / "config.toml").write_text(config)
    seconds = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for step in (["run", "--distill"], ["backfill"]):
        started = time.monotonic()
        out = subprocess.run([*DISTILL, "--state-dir", str(state), *step], capture_output=True, text=True, env=env)
        seconds[" ".join(step)] = time.monotonic() - started
        last = [ln for ln in out.stdout.splitlines() if ln.strip()][-1:] or [out.stderr.strip()[-300:]]
        print(f"  distill {' '.join(step)}: exit {out.returncode}: {last[0]}")
    dump = state / "export.json"
    out = subprocess.run([*DISTILL, "--state-dir", str(state), "memories", "export", "-o", str(dump)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:  # nothing stored: the table was never made
        print(f"  memories export: exit {out.returncode}: {out.stderr.strip()[-200:]}")
        return [], seconds
    rows = json.loads(dump.read_text())["memories"]
    for r in rows:
        if isinstance(r.get("metadata"), str):
            r["metadata"] = json.loads(r["metadata"])
    return rows, seconds


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def group_of(kind: str) -> str:
    return PITFALLS if kind == "pitfall" else STATEMENTS


def relative(file: str, tree: Path) -> str:
    try:
        return str(Path(file).relative_to(tree))
    except ValueError:
        return file


def score(tree_name: str, tree: Path, rows: list[dict], labels: dict[str, dict]) -> tuple[Counter, Counter, list]:
    tally: Counter = Counter()
    causes: Counter = Counter()
    unlabelled = []
    for r in rows:
        md = r["metadata"]
        label = labels.get(md.get("content_hash", ""))
        group = group_of(md.get("kind", ""))
        verdict = label["label"] if label else "unlabelled"
        tally[(group, verdict)] += 1
        if verdict == "junk":
            causes[label.get("cause") or "?"] += 1
        if not label:
            prov = md.get("provenance", {})
            unlabelled.append({"tree": tree_name, "hash": md.get("content_hash"), "kind": md.get("kind"),
                               "files": [relative(f, tree) for f in prov.get("files", [])],
                               "entry_ids": prov.get("entryIds", [])})
    return tally, causes, unlabelled


def recall(tree_name: str, tree: Path, rows: list[dict], wanted: list[dict]) -> tuple[int, int, Counter, Counter]:
    """(found, listed) for the recall list of this tree, also per kind group."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        for f in r["metadata"].get("provenance", {}).get("files", []):
            by_file[relative(f, tree)].append(r["text"].lower())
    found = listed = 0
    per_found: Counter = Counter()
    per_listed: Counter = Counter()
    for item in wanted:
        tree_of, _, file = item.get("file", "").partition("/")
        if item.get("kind") in (None, "none") or item.get("tree", tree_of) != tree_name:
            continue  # "none": the reader kept nothing from that session
        group = group_of(item.get("kind", ""))
        listed += 1
        per_listed[group] += 1
        entities = [e.lower() for e in item.get("entities", []) if e]
        texts = by_file.get(file if "tree" not in item else item["file"], [])
        if any(e in t for e in entities for t in texts):
            found += 1
            per_found[group] += 1
    return found, listed, per_found, per_listed


def line(tally: Counter, group: str) -> str:
    n = {v: tally[(group, v)] for v in ("useful", "partly", "junk", "unlabelled")}
    total = sum(n.values())
    labelled = total - n["unlabelled"]
    share = (f" (of labelled: useful {n['useful'] / labelled:.0%}, junk {n['junk'] / labelled:.0%})"
             if labelled else "")
    return (f"{group}: {total} stored: {n['useful']} useful, {n['partly']} partly, {n['junk']} junk, "
            f"{n['unlabelled']} unlabelled{share}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=Path, default=Path(os.environ.get("DISTILL_REAL_TREES", "/work/trees")))
    ap.add_argument("--only", default="", help="comma-separated tree names (default: every folder in --trees)")
    ap.add_argument("--labels", type=Path, default=DATA / "labels.jsonl")
    ap.add_argument("--recall", type=Path, default=DATA / "recall.jsonl")
    ap.add_argument("--keep", type=Path, help="keep each tree's state directory (and export.json) under this folder")
    args = ap.parse_args()
    if not args.trees.is_dir():
        print(f"no session trees at {args.trees}: nothing to score (set --trees or DISTILL_REAL_TREES to a local "
              "copy of the public trees named in this file's docstring)")
        return 0
    only = {t for t in args.only.split(",") if t}
    trees = sorted(p for p in args.trees.iterdir() if p.is_dir() and (not only or p.name in only))
    labels = {row["hash"]: row for row in read_jsonl(args.labels)}
    wanted = read_jsonl(args.recall)
    print(f"labels: {len(labels)} from {args.labels}; recall list: {len(wanted)} from {args.recall}")
    total: Counter = Counter()
    all_causes: Counter = Counter()
    all_unlabelled: list = []
    rec = [0, 0, Counter(), Counter()]
    with tempfile.TemporaryDirectory(prefix="real-quality-") as tmp:
        base = args.keep or Path(tmp)
        for tree in trees:
            print(f"\n== {tree.name}")
            state = base / tree.name
            rows, seconds = run_tree(tree, state)
            tally, causes, unlabelled = score(tree.name, tree, rows, labels)
            for group in (PITFALLS, STATEMENTS):
                print("  " + line(tally, group))
            if causes:
                print("  junk by cause: " + ", ".join(f"{c} {n}" for c, n in causes.most_common()))
            found, listed, pf, pl = recall(tree.name, tree, rows, wanted)
            if listed:
                print(f"  recall: {found} of {listed} listed memories found "
                      + ", ".join(f"({g}: {pf[g]}/{pl[g]})" for g in (PITFALLS, STATEMENTS) if pl[g]))
            if seconds:
                print("  seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
            total.update(tally)
            all_causes.update(causes)
            all_unlabelled += unlabelled
            rec[0] += found
            rec[1] += listed
            rec[2].update(pf)
            rec[3].update(pl)
    print("\n== all trees")
    for group in (PITFALLS, STATEMENTS):
        print("  " + line(total, group))
    stored = sum(total.values())
    labelled = stored - sum(n for (_, v), n in total.items() if v == "unlabelled")
    useful = sum(n for (_, v), n in total.items() if v == "useful")
    junk = sum(n for (_, v), n in total.items() if v == "junk")
    print(f"  all: {stored} stored, {labelled} labelled: {useful} useful, {junk} junk"
          + (f" (useful {useful / labelled:.0%}, junk {junk / labelled:.0%} of labelled)" if labelled else ""))
    if all_causes:
        print("  junk by cause: " + ", ".join(f"{c} {n}" for c, n in all_causes.most_common()))
    if rec[1]:
        print(f"  recall: {rec[0]} of {rec[1]} listed memories found "
              + ", ".join(f"({g}: {rec[2][g]}/{rec[3][g]})" for g in (PITFALLS, STATEMENTS) if rec[3][g]))
    if all_unlabelled:
        print(f"\nunlabelled ({len(all_unlabelled)}):")
        for u in all_unlabelled:
            print("  " + json.dumps(u, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
