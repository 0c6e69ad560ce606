"""Cross-language recall through the real MCP server (run by hand).

    python tests/bench/bench_crosslang.py [--verbose] [--keep DIR] [--set FILE]

Imports the 40 memories of ``tests/bench/crosslang_set.json`` (half English, half Chinese, no
keyword line of their own) with ``distill memories import``, starts ``distill mcp`` and asks all
92 questions through the official MCP client's ``recall`` (``top_k=3``). Reports recall@3 per
direction (zh->en, en->zh, en->en, zh->zh) and, per language, the share of unrelated questions
answered with nothing. Also prints the ``Keywords (zh)`` line each English memory was given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SET = HERE / "crosslang_set.json"


def body(text: str) -> str:
    return text.split("\nKeywords")[0].strip()


async def ask(env: dict[str, str], questions: list[dict], spelling: str) -> tuple[list[list[str]], list[dict]]:
    """Texts of the hits for each question, and every stored fact (to print keyword lines)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "distill", "mcp"], env=env)
    answers = []
    async with Client(params, read_timeout_seconds=300) as client:
        for q in questions:
            limit = {"top_k": 3} if spelling == "memory-mcp" else {"limit": 3}
            res = await client.call_tool("recall", {"query": q["q"], **limit})
            if res.is_error:
                raise SystemExit(f"recall failed for {q['q']!r}: {res.content}")
            answers.append([h["text"] for h in res.structured_content["hits"]][:3])
        facts = await client.call_tool("list_facts", {"limit": 200})
    return answers, facts.structured_content["facts"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print every miss and every unrelated hit")
    ap.add_argument("--keep", help="use this directory for the store (kept afterwards)")
    ap.add_argument("--spelling", choices=["memory-mcp", "distill"], default="memory-mcp",
                    help="recall's argument for the hit count: the Memory MCP server's top_k, or distill's limit")
    ap.add_argument("--set", type=Path, default=SET,
                    help="another set in the same shape (e.g. one written blind, kept outside the repository)")
    args = ap.parse_args()
    data = json.loads(args.set.read_text(encoding="utf-8"))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="crosslang-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DISTILL_DB": str(work / "db"), "DISTILL_STATE_DIR": str(work / "state"),
           "PYTHONPATH": str(REPO), "HOME": str(work / "home")}
    try:
        export = work / "import.json"
        export.write_text(json.dumps({"memories": [
            {"text": m["text"], "category": m["category"], "importance": 0.7} for m in data["memories"]]},
            ensure_ascii=False), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "distill", "memories", "import", str(export), "--scope", "global"],
                       env=env, check=True, capture_output=True, text=True)
        answers, facts = anyio.run(ask, env, data["questions"], args.spelling)
        id_of = {body(m["text"]): m["id"] for m in data["memories"]}
        found: dict[str, list[float]] = defaultdict(list)
        empty: dict[str, list[bool]] = defaultdict(list)
        for q, texts in zip(data["questions"], answers):
            ids = [id_of.get(body(t), "?") for t in texts]
            if q["direction"] == "unrelated":
                empty[q["lang"]].append(not ids)
                if ids and args.verbose:
                    print(f"  unrelated hit  {q['q']!r} -> {ids}")
                continue
            hit = bool(set(ids[:3]) & set(q["relevant"]))
            found[q["direction"]].append(hit)
            if not hit and args.verbose:
                print(f"  miss  {q['direction']}  {q['q']!r} wants {q['relevant']} got {ids}")
        if args.verbose:
            for f in facts:
                print("  " + f["text"].splitlines()[-1][:110])
        print(f"{'direction':10} {'questions':>9} {'recall@3':>9}")
        for d in ("zh->en", "en->zh", "en->en", "zh->zh"):
            print(f"{d:10} {len(found[d]):9d} {sum(found[d]) / len(found[d]):9.2f}")
        for lang in ("en", "zh"):
            print(f"unrelated {lang}: {sum(empty[lang])}/{len(empty[lang])} answered with nothing "
                  f"({sum(empty[lang]) / len(empty[lang]):.0%})")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
