"""The blind lifecycle pairs through the real store: the rule path, and with ``--llm`` the
LLM path against the fake OpenAI-compatible server.

    python tests/bench/blind_lifecycle.py [--set FILE] [--llm] [--json]

``--set`` (default ``tests/data/blind_lifecycle.jsonl``) holds (old, new) pairs labelled
update / contradiction / duplicate / distinct, written by someone who never saw the code;
``tests/data/blind2_lifecycle.jsonl`` is the second such set, scored once when the code was
final. For each pair a fresh table in a temp dir: ``MemoryStore.add`` stores ``old``, then
``new`` (one scope, the category its ``kind_of_memory`` gets from the distiller, the local
embedder), and the decision is read from the second ``AddOutcome``: ``duplicate`` = same,
``relation`` = supersedes / contradicts, otherwise distinct.

Rule path: ``llm = "rules"``. The same pairs are also put to ``relate`` alone
(tests/lifecycle_eval.py, as tests/bench/lifecycle_pairs.py does), so a difference between
the store and the decision function shows.

``--llm``: ``llm = "openai"`` pointed at tests/fakes' OpenAI-compatible server, scripted to
answer each prompt as a capable model would (the pair's label, read back from the prompt).
That measures the plumbing — which pairs reach the model (the uncertain band), the one
bounded call per pair, the validation, the store acting on the answer — not a model: pairs
outside the band are still decided by the rule, and those are what the figures can miss.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from distill.config import load_settings  # noqa: E402
from distill.distiller.schema import CATEGORY_OF_KIND  # noqa: E402
from distill.store import MemoryDraft, MemoryStore  # noqa: E402
from distill.store.embedders import LocalEmbedder  # noqa: E402
from lifecycle_eval import EXPECTED, Pair, Report, capable_model, cosines, evaluate  # noqa: E402

SET = ROOT / "tests" / "data" / "blind_lifecycle.jsonl"
LABELS = ("update", "contradiction", "duplicate", "distinct")
RELATIONS = ("same", "supersedes", "contradicts", "distinct")


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def through_store(entry: dict, embedder, llm: dict) -> tuple[str, str | None]:
    """(relation, reason) the store gives ``new`` with ``old`` stored before it."""
    category = CATEGORY_OF_KIND[entry["kind_of_memory"]]
    with tempfile.TemporaryDirectory(prefix="blind-life-") as tmp:
        s = load_settings(db=str(Path(tmp) / "db"), state_dir=str(Path(tmp) / "state"), **llm)
        store = MemoryStore.open(s, embedder=embedder)
        [old] = store.add([MemoryDraft(text=entry["old"], category=category, scope="agent:main")])
        [new] = store.add([MemoryDraft(text=entry["new"], category=category, scope="agent:main")])
    if new.status == "duplicate":
        return "same", new.reason
    if new.relation and new.related == old.id:
        return new.relation, new.reason
    return "distinct", new.reason


def figures(report: Report) -> dict:
    c = report.confusion
    return {**report.summary(),
            "contradictions_found": f"{c[('contradiction', 'contradicts')]}/{sum(c[('contradiction', r)] for r in RELATIONS)}",
            "distinct_kept_distinct": f"{c[('distinct', 'distinct')]}/{sum(c[('distinct', r)] for r in RELATIONS)}"}


def matrix(report: Report) -> str:
    lines = ["label \\ decided  " + "".join(f"{r:>13}" for r in RELATIONS)]
    for lab in LABELS:
        lines.append(f"{lab:<16} " + "".join(f"{report.confusion[(lab, r)]:>13}" for r in RELATIONS))
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=SET, help="the labelled pairs (JSONL)")
    ap.add_argument("--llm", action="store_true", help="the LLM path: a scripted capable model on the fake server")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    entries = load(args.set)
    pairs = [Pair(old=e["old"], new=e["new"], label=e["label"], lang=e["lang"], kind=e["kind_of_memory"], round=0)
             for e in entries]
    emb = LocalEmbedder()
    store = Report(pairs=len(entries), confusion=Counter())
    with ExitStack() as stack:
        llm: dict = {"llm": "rules"}
        fake = None
        if args.llm:
            from tests.fakes import FakeOpenAI
            from tests.fakes.openai_server import sent_text

            fake = stack.enter_context(FakeOpenAI())
            fake.default = capable_model(pairs, sent_text)
            llm = {"llm": "openai", "llm_base_url": fake.base_url, "llm_model": "capable-model"}
        for e in entries:
            relation, reason = through_store(e, emb, llm)
            store.confusion[(e["label"], relation)] += 1
            if relation != EXPECTED[e["label"]]:
                store.errors.append(f"{e['id']} {e['label']} -> {relation} [{e['lang']}/{e['kind_of_memory']}] "
                                    f"({reason}): {e['old']!r} | {e['new']!r}")
        calls = len(fake.chat_requests()) if fake else 0
        unmatched = fake.default.unmatched if fake else 0
    path = "LLM path (fake OpenAI-compatible server, scripted capable model)" if args.llm else "rule path"
    alone = None if args.llm else evaluate(pairs, cosines(pairs, emb, None))
    if args.json:
        out = {"set": str(args.set), "path": path, "store": figures(store), "errors": store.errors}
        if args.llm:
            out |= {"model_calls": calls, "prompts_naming_no_pair": unmatched}
        if alone:
            out["relate"] = figures(alone)
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return
    print(f"{args.set} — store (MemoryStore.add, {path}): {json.dumps(figures(store))}")
    if args.llm:
        print(f"model calls: {calls} for {len(entries)} pairs (the rest decided by the rule); "
              f"prompts naming no pair: {unmatched}")
    print(matrix(store))
    print("misjudged:")
    for line in store.errors:
        print("   ", line)
    if alone:
        print(f"relate alone (tests/lifecycle_eval.py): {json.dumps(figures(alone))}")
        for line in alone.errors:
            print("   ", line)


if __name__ == "__main__":
    main(sys.argv[1:])
