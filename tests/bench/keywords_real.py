"""Do the memories distilled from real trees carry a Chinese keyword that names them? (by hand)

    python tests/bench/keywords_real.py [--qstate /work/qstate] [--keep DIR]
    python tests/bench/keywords_real.py --export /work/qout/baseline/*.export.json [--show]

Copies each example state directory under ``--qstate`` to a temporary folder (no memory, no
cursor, no batches: a fresh start), runs ``distill run --distill`` (then ``backfill``) there with the
built-in rules distiller, exports what was stored, and counts the memories whose ``Keywords (zh)`` line has
at least one Chinese phrase outside :data:`distill.text.keywords.GENERIC`. Prints the share per
tree and overall, and the generic list it judged by. Prints counts only: the trees are
people's backups, and none of their text is copied anywhere.

``--export FILE…`` instead gives each memory of existing exports (``distill memories export``)
its keyword lines afresh from its body with today's code: the keyword choice measured on the
same real memories whatever the distiller now stores. ``--show`` prints each new keyword line
(to the terminal only) to judge the senses by eye.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from distill.text.keywords import GENERIC, with_keywords  # noqa: E402

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LINE = re.compile(r"^Keywords \(zh\):(.*)$", re.MULTILINE)


def specific(text: str) -> bool:
    m = LINE.search(text)
    words = [w.strip() for w in m.group(1).split(";")] if m else []
    return any(CJK.search(w) and w not in GENERIC for w in words)


def distill(state: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(state), *args],
                          capture_output=True, text=True, timeout=3600, cwd=state)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qstate", default="/work/qstate")
    ap.add_argument("--keep", help="work here (kept) instead of a temporary folder")
    ap.add_argument("--export", nargs="+", type=Path, help="re-keyword the memories of these exports instead")
    ap.add_argument("--show", action="store_true", help="with --export: print each new keyword line")
    args = ap.parse_args()
    if args.export:
        return rekeyword(args.export, args.show)
    work = Path(args.keep or tempfile.mkdtemp(prefix="keywords-real-"))
    total = good = 0
    try:
        for src in sorted(p for p in Path(args.qstate).iterdir() if (p / "config.toml").is_file()):
            state = work / src.name
            shutil.rmtree(state, ignore_errors=True)
            shutil.copytree(src, state, ignore=shutil.ignore_patterns("memory", "cursor*", "batches", "backfill*"))
            ran = distill(state, "run", "--distill")  # no cursor yet: every file is new, read from byte 0
            if ran.returncode == 0:
                ran = distill(state, "backfill")  # anything before a cursor (none here: a no-op)
            if ran.returncode != 0:
                print(f"{src.name}: backfill failed: {ran.stderr.strip()[-300:]}")
                continue
            out = state / "export.json"
            done = distill(state, "memories", "export", "--output", str(out))
            if done.returncode != 0:
                print(f"{src.name}: export failed: {done.stderr.strip()[-300:]}")
                continue
            texts = [m["text"] for m in json.loads(out.read_text(encoding="utf-8"))["memories"]]
            n = sum(specific(t) for t in texts)
            total, good = total + len(texts), good + n
            print(f"{src.name:12} {n:4d} of {len(texts):4d} memories carry a specific Chinese keyword"
                  + (f" ({n / len(texts):.0%})" if texts else ""))
        if total:
            print(f"{'all':12} {good:4d} of {total:4d} ({good / total:.0%})")
        print("generic (not counted): " + " ".join(sorted(GENERIC)))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def rekeyword(exports: list[Path], show: bool) -> int:
    total = good = 0
    for path in exports:
        texts = [with_keywords(LINE.split(m["text"])[0].split("\nKeywords (en):")[0].strip())
                 for m in json.loads(path.read_text(encoding="utf-8"))["memories"]]
        n = sum(specific(t) for t in texts)
        total, good = total + len(texts), good + n
        print(f"{path.name:28} {n:4d} of {len(texts):4d} memories carry a specific Chinese keyword")
        if show:
            for t in texts:
                print("    " + t.splitlines()[-1])
    if total:
        print(f"{'all':28} {good:4d} of {total:4d} ({good / total:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
