"""Precision and recall of the near-duplicate decision on the labelled calibration set.

Run with ``-s`` to see the figures. The thresholds were tuned on one half
(tests/bench/calibrate_dedup.py; ``calibration.split`` says which) and are held to their
targets on the other.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgspec
import pytest

from distill.atomic import write_bytes
from distill.cli.render import render
from distill.store.calibration import LabelledPair, Scores, load_pairs, pair_cosines, score, split
from distill.store.dedup import DEFAULT_THRESHOLDS, is_near_duplicate

PAIRS = Path(__file__).parent / "data" / "dedup_pairs.jsonl"
SEED = Path(__file__).parent / "data" / "dedup_vectors.npz"  # refresh: copy .pytest_cache/d/dedup-calibration/vectors.npz
SEED_COSINE = 0.90  # what memory-lancedb-pro and the Memory MCP server use alone


@pytest.fixture(scope="module")
def labelled(request) -> tuple[list[LabelledPair], list[float]]:
    """Cosines from the real local model. Its vectors are cached in pytest's cache directory
    under the model's fingerprint and each text's hash (``pair_cosines``), so only a new or
    edited pair, or a changed model, is embedded again: ~35–85 s the first time, <1 s after.
    A fresh checkout starts from ``SEED``, the same cache as the bundled model gave it; it is
    used only while the model's fingerprint matches, so CI still measures the real model."""
    from distill.store.embedders import LocalEmbedder

    pairs = load_pairs(PAIRS)
    cache = request.config.cache.mkdir("dedup-calibration") / "vectors.npz"
    if not cache.exists() and SEED.exists():
        write_bytes(cache, SEED.read_bytes(), durable=False)  # atomic: another xdist worker may be reading it
    return pairs, pair_cosines(pairs, LocalEmbedder(), cache)


def guarded(pair: LabelledPair, cos: float) -> bool:
    return is_near_duplicate(pair.a, pair.b, cos, DEFAULT_THRESHOLDS["local"])


def pure_cosine(pair: LabelledPair, cos: float) -> bool:
    return cos >= SEED_COSINE


def report(name: str, s: Scores) -> None:
    print(f"\n{name}: {render(s)}")


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


def test_precision_comes_first_on_the_held_out_half(labelled):
    """A wrong merge loses a memory, a missed one costs a row. The held-out half is the
    latest round's block, written before the rule ran on it (``calibration.split``). The
    floors are what the rule reached there when it was first scored (round 10: precision
    0.891, recall 0.577), less a margin. The issue's target is not met on round 10's block
    (round 9's met precision, not recall): docs/dedup.md, "Round 10"."""
    pairs, cos = labelled
    tune, held = split(pairs)
    s = score([pairs[i] for i in held], [cos[i] for i in held], guarded)
    report(f"held-out half, cosine + lexical guard {msgspec.structs.asdict(DEFAULT_THRESHOLDS['local'])}", s)
    report("  tuning half", score([pairs[i] for i in tune], [cos[i] for i in tune], guarded))
    report("  all", score(pairs, cos, guarded))
    for line in s.errors:
        print("   ", line)
    assert s.precision >= 0.85, s.errors
    assert s.recall >= 0.52, s.errors


def test_pure_cosine_at_the_seed_threshold_is_measured(labelled):
    pairs, cos = labelled
    s = score(pairs, cos, pure_cosine)
    report(f"pure cosine >= {SEED_COSINE}", s)
    assert s.tp + s.fp + s.fn + s.tn == len(pairs)


def test_every_near_miss_kind_is_mostly_kept_apart(labelled):
    """No class of near-miss may slip through wholesale (a bug in one rule would): at most
    a fifth of any kind is merged."""
    pairs, cos = labelled
    for kind in ("entity", "number", "version", "negation", "contradiction", "unrelated", "mixed", "opening", "predicate"):
        idx = [i for i, p in enumerate(pairs) if p.kind == kind]
        merged = [pairs[i] for i in idx if guarded(pairs[i], cos[i])]
        assert len(merged) <= 0.2 * len(idx), (kind, merged)


def test_the_latest_rounds_block_is_held_out_and_every_earlier_pair_tunes():
    """Once a round adds a block written before the rule ran on it, the halves earlier rounds
    reported on (and scored often) become tuning pairs; ``split_before`` still draws them."""
    from distill.store.calibration import split_before

    def pair(n: int, **kw) -> LabelledPair:
        return LabelledPair(a=f"a{n}", b=f"b{n}", duplicate=True, kind="paraphrase", lang="en", **kw)

    pairs = [pair(0), pair(1), pair(2, split="held-out"), pair(3, split="held-out", round=4), pair(4, split="tune", round=4)]
    assert split(pairs) == ([0, 1, 2, 4], [3])
    assert split(pairs[:3]) == ([0], [1, 2])  # before round 4: even lines tune, a pair's own split wins
    assert split_before(pairs, 4) == ([0], [1, 2])
    # a fifth round's block takes over: round 4's held-out pair now tunes
    pairs.append(pair(5, split="held-out", round=5))
    assert split(pairs) == ([0, 1, 2, 3, 4], [5])
    assert split_before(pairs, 5) == ([0, 1, 2, 4], [3])
    # and a sixth: round 5's block tunes too
    pairs.append(pair(6, split="held-out", round=6))
    assert split(pairs) == ([0, 1, 2, 3, 4, 5], [6])
    # and a seventh
    pairs.append(pair(7, split="held-out", round=7))
    assert split(pairs) == ([0, 1, 2, 3, 4, 5, 6], [7])
    # and an eighth
    pairs.append(pair(8, split="held-out", round=8))
    assert split(pairs) == ([0, 1, 2, 3, 4, 5, 6, 7], [8])
    # and a ninth
    pairs.append(pair(9, split="held-out", round=9))
    assert split(pairs) == ([0, 1, 2, 3, 4, 5, 6, 7, 8], [9])
    # and a tenth
    pairs.append(pair(10, split="held-out", round=10))
    assert split(pairs) == ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10])
    assert split_before(pairs, 6) == ([0, 1, 2, 3, 4], [5])
    on_file = load_pairs(PAIRS)
    tune, held = split(on_file)
    latest = max(p.round for p in on_file)
    assert held and all(on_file[i].round == latest for i in held)
    assert all(on_file[i].round < latest for i in tune) and any(on_file[i].round == latest - 1 for i in tune)
