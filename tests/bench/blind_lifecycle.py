"""The blind lifecycle pairs through the real store (rule path, default settings).

    python tests/bench/blind_lifecycle.py [tests/data/blind_lifecycle.jsonl] [--json]

``tests/data/blind_lifecycle.jsonl`` holds 40 (old, new) pairs labelled update /
contradiction / duplicate / distinct, written by someone who never saw the code. For each
pair a fresh table in a temp dir: ``MemoryStore.add`` stores ``old``, then ``new`` (one scope,
the category its ``kind_of_memory`` gets from the distiller, the local embedder, ``llm`` =
``rules``), and the decision is read from the second ``AddOutcome``: ``duplicate`` = same,
``relation`` = supersedes / contradicts, otherwise distinct. The same pairs are also put to
``relate`` alone (tests/lifecycle_eval.py, as tests/bench/lifecycle_pairs.py does), so a
difference between the store and the decision function shows.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from distill.config import load_settings  # noqa: E402
from distill.distiller.schema import CATEGORY_OF_KIND  # noqa: E402
from distill.store import MemoryDraft, MemoryStore  # noqa: E402
from distill.store.embedders import LocalEmbedder  # noqa: E402
from lifecycle_eval import EXPECTED, Pair, Report, cosines, evaluate  # noqa: E402

SET = ROOT / "tests" / "data" / "blind_lifecycle.jsonl"
LABELS = ("update", "contradiction", "duplicate", "distinct")
RELATIONS = ("same", "supersedes", "contradicts", "distinct")


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def through_store(entry: dict, embedder) -> tuple[str, str | None]:
    """(relation, reason) the store gives ``new`` with ``old`` stored before it."""
    category = CATEGORY_OF_KIND[entry["kind_of_memory"]]
    with tempfile.TemporaryDirectory(prefix="blind-life-") as tmp:
        s = load_settings(db=str(Path(tmp) / "db"), state_dir=str(Path(tmp) / "state"), llm="rules")
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
    files = [a for a in argv if not a.startswith("--")]
    entries = load(Path(files[0]) if files else SET)
    emb = LocalEmbedder()
    store = Report(pairs=len(entries), confusion=Counter())
    for e in entries:
        relation, reason = through_store(e, emb)
        store.confusion[(e["label"], relation)] += 1
        if relation != EXPECTED[e["label"]]:
            store.errors.append(f"{e['id']} {e['label']} -> {relation} [{e['lang']}/{e['kind_of_memory']}] "
                                f"({reason}): {e['old']!r} | {e['new']!r}")
    pairs = [Pair(old=e["old"], new=e["new"], label=e["label"], lang=e["lang"], kind=e["kind_of_memory"], round=0)
             for e in entries]
    alone = evaluate(pairs, cosines(pairs, emb, None))
    if "--json" in argv:
        print(json.dumps({"store": figures(store), "relate": figures(alone), "errors": store.errors},
                         ensure_ascii=False, indent=2))
        return
    print(f"store (MemoryStore.add, rule path): {json.dumps(figures(store))}")
    print(matrix(store))
    print("misjudged:")
    for line in store.errors:
        print("   ", line)
    print(f"relate alone (tests/lifecycle_eval.py): {json.dumps(figures(alone))}")
    for line in alone.errors:
        print("   ", line)


if __name__ == "__main__":
    main(sys.argv[1:])
