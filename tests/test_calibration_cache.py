"""The calibration's vector cache serves the real model's vectors, and only those."""

from __future__ import annotations

import numpy as np
import pytest

from distill.store.calibration import LabelledPair, pair_cosines

PAIRS = [
    LabelledPair(a="Decision: use uv instead of pip.", b="使用 uv 而不是 pip。", duplicate=True, kind="translation", lang="mixed"),
    LabelledPair(a="Rule: never speculate.", b="Rule: never overwrite a vault node.", duplicate=False, kind="opening", lang="en"),
]


class Counting:
    """The real local embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, []

    def passages(self, texts):
        self.seen.extend(texts)
        return self.inner.passages(texts)


@pytest.fixture(scope="module")
def local():
    from distill.store.embedders import LocalEmbedder

    return LocalEmbedder()


def test_second_run_embeds_only_the_probe_and_gives_the_same_cosines(local, tmp_path):
    cache = tmp_path / "v.npz"
    first = Counting(local)
    cold = pair_cosines(PAIRS, first, cache)
    again = Counting(local)
    warm = pair_cosines(PAIRS, again, cache)
    assert len(first.seen) == 1 + 4  # the probe, then the four texts
    assert len(again.seen) == 1  # only the probe that proves the cache is this model's
    assert warm == cold
    direct = local.passages([PAIRS[0].a, PAIRS[0].b])
    assert warm[0] == pytest.approx(float(direct[0] @ direct[1]), abs=1e-6)


def test_a_new_pair_is_embedded_alone(local, tmp_path):
    cache = tmp_path / "v.npz"
    pair_cosines(PAIRS[:1], local, cache)
    c = Counting(local)
    pair_cosines(PAIRS, c, cache)
    assert sorted(c.seen[1:]) == sorted([PAIRS[1].a, PAIRS[1].b])


def test_another_model_does_not_get_this_models_vectors(local, tmp_path):
    cache = tmp_path / "v.npz"
    pair_cosines(PAIRS, local, cache)

    class Other(Counting):
        """Same name, different weights: a rotated vector space."""

        def passages(self, texts):
            self.seen.extend(texts)
            v = self.inner.passages(texts)
            return np.roll(v, 1, axis=1)

    other = Other(local)
    pair_cosines(PAIRS, other, cache)
    assert len(other.seen) == 1 + 4  # the probe differed: everything re-embedded


def test_a_corrupt_cache_is_rebuilt(local, tmp_path):
    cache = tmp_path / "v.npz"
    cache.write_bytes(b"not an npz")
    assert len(pair_cosines(PAIRS, local, cache)) == 2
    c = Counting(local)
    pair_cosines(PAIRS, c, cache)
    assert len(c.seen) == 1
