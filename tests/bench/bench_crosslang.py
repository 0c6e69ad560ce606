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
import re
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


_KIND = {"pitfall": "fact", "坑": "fact", "rule": "decision", "规则": "decision", "decision": "decision",
         "决定": "decision", "preference": "preference", "偏好": "preference", "fact": "fact", "事实": "fact"}


def load_set(path: Path) -> dict:
    """A set in this bench's shape, or in the blind labeller's (questions with ``expect`` and no
    ``direction``, memories without ``category``): the direction is the question's language to
    the language of the memories it expects, or ``unrelated`` when it expects none; a memory's
    category is read from its leading word (Pitfall:, 规则：…), ``other`` if none."""
    data = json.loads(path.read_text(encoding="utf-8"))
    lang = {m["id"]: m.get("lang") or ("zh" if re.search(r"[\u4e00-\u9fff]{4}", m["text"]) else "en")
            for m in data["memories"]}
    for m in data["memories"]:
        if "category" not in m:
            lead = re.split(r"[:：]", m["text"], maxsplit=1)[0].strip().lower()
            m["category"] = _KIND.get(lead, "other")
    for q in data["questions"]:
        if "relevant" not in q:
            q["relevant"] = list(q.get("expect") or [])
        if "direction" not in q:
            q["direction"] = (f"{q['lang']}->{lang[q['relevant'][0]]}" if q["relevant"] else "unrelated")
    return data


async def ask(env: dict[str, str], questions: list[dict], spelling: str) -> tuple[list[list[tuple[str, float]]], list[dict]]:
    """(text, score) of the hits for each question, and every stored fact (to print keyword lines)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "distill", "mcp"], env=env)
    answers = []
    async with Client(params, read_timeout_seconds=300) as client:
        for q in questions:
            limit = {"top_k": 3} if spelling == "memory-mcp" else {"limit": 3}
            res = await client.call_tool("recall", {"query": q["q"], **limit})
            if res.is_error:
                raise SystemExit(f"recall failed for {q['q']!r}: {res.content}")
            answers.append([(h["text"], h["score"]) for h in res.structured_content["hits"]][:3])
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
    data = load_set(args.set)
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

        def memory_id(text: str) -> str:
            """The set's id of a stored text (the store may put a caution note before it)."""
            b = body(text)
            return id_of.get(b) or next((i for known, i in id_of.items() if known in b), "?")
        found: dict[str, list[float]] = defaultdict(list)
        empty: dict[str, list[bool]] = defaultdict(list)
        for q, hits in zip(data["questions"], answers):
            ids = [memory_id(t) for t, _ in hits]
            shown = [f"{i}:{score:.2f}" for i, (_, score) in zip(ids, hits)]
            if q["direction"] == "unrelated":
                empty[q["lang"]].append(not ids)
                if ids and args.verbose:
                    print(f"  unrelated hit  {q['q']!r} -> {shown}")
                continue
            hit = bool(set(ids[:3]) & set(q["relevant"]))
            found[q["direction"]].append(hit)
            if not hit and args.verbose:
                print(f"  miss  {q['direction']}  {q['q']!r} wants {q['relevant']} got {shown}")
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
