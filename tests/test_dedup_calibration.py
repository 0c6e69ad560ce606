"""Precision and recall of the near-duplicate decision on the labelled calibration set.

Run with ``-s`` to see the figures. The thresholds were tuned on the even-numbered pairs
(tests/bench/calibrate_dedup.py); the odd-numbered half is reported separately, so the
figures are not only the ones the thresholds were fitted to.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from distill.store.calibration import DEFAULT_THRESHOLDS, LabelledPair, Scores, load_pairs, score, split
from distill.store.dedup import is_near_duplicate

PAIRS = Path(__file__).parent / "data" / "dedup_pairs.jsonl"
SEED_COSINE = 0.90  # what memory-lancedb-pro and the Memory MCP server use alone


@pytest.fixture(scope="module")
def labelled() -> tuple[list[LabelledPair], list[float]]:
    from distill.store.embedders import LocalEmbedder

    pairs = load_pairs(PAIRS)
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vecs = LocalEmbedder().passages(texts)
    row = dict(zip(texts, vecs))
    return pairs, [float(row[p.a] @ row[p.b]) for p in pairs]


def guarded(pair: LabelledPair, cos: float) -> bool:
    return is_near_duplicate(pair.a, pair.b, cos, DEFAULT_THRESHOLDS["local"])


def pure_cosine(pair: LabelledPair, cos: float) -> bool:
    return cos >= SEED_COSINE


def report(name: str, s: Scores) -> None:
    print(f"\n{name}: {s.human()}")


def test_the_set_is_large_balanced_and_varied():
    pairs = load_pairs(PAIRS)
    assert len(pairs) >= 200
    dup = sum(p.duplicate for p in pairs)
    assert 0.4 <= dup / len(pairs) <= 0.6
    assert set(Counter(p.kind for p in pairs)) == {
        "paraphrase", "translation", "entity", "number", "version", "negation", "contradiction", "unrelated", "mixed",
        "opening", "predicate",
    }
    assert set(Counter(p.lang for p in pairs)) == {"en", "zh", "mixed"}
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)


def test_guarded_decision_reaches_090_precision_and_recall(labelled):
    pairs, cos = labelled
    s = score(pairs, cos, guarded)
    report(f"cosine + lexical guard {DEFAULT_THRESHOLDS['local'].model_dump()}", s)
    for name, idx in zip(("tuning half", "held-out half"), split(pairs)):
        report(f"  {name}", score([pairs[i] for i in idx], [cos[i] for i in idx], guarded))
    for line in s.errors:
        print("   ", line)
    assert s.precision >= 0.90, s.errors
    assert s.recall >= 0.90, s.errors


def test_pure_cosine_at_the_seed_threshold_is_measured(labelled):
    pairs, cos = labelled
    s = score(pairs, cos, pure_cosine)
    report(f"pure cosine >= {SEED_COSINE}", s)
    assert s.tp + s.fp + s.fn + s.tn == len(pairs)


def test_every_near_miss_kind_is_mostly_kept_apart(labelled):
    """No class of near-miss may slip through wholesale (a bug in one rule would): at most
    a fifth of any kind is merged."""
    pairs, cos = labelled
    for kind in ("entity", "number", "version", "negation", "contradiction", "unrelated", "mixed"):
        idx = [i for i, p in enumerate(pairs) if p.kind == kind]
        merged = [pairs[i] for i in idx if guarded(pairs[i], cos[i])]
        assert len(merged) <= 0.2 * len(idx), (kind, merged)
