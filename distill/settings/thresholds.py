"""The near-duplicate thresholds (``Settings.dedup``), a msgspec Struct like every setting."""

import msgspec


class DedupThresholds(msgspec.Struct, kw_only=True):
    """Near-duplicate decision (``distill.store.dedup.judge``; docs/dedup.md says how each is used).

    ``cosine_cross`` applies when one memory is Chinese and the other English and both name
    the same entity or number (translations embed further apart than paraphrases); None
    means ``cosine``, which is also what a translation naming nothing in common must reach.
    ``lexical_zh`` is the shared-wording floor between two Chinese memories (character bigrams
    overlap less than English words); None means ``lexical``."""

    cosine: float = 0.90
    lexical: float = 0.5
    cosine_cross: float | None = None
    lexical_zh: float | None = None
