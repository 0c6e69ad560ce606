"""Scoring the duplicate decision on labelled pairs (``tests/data/dedup_pairs.jsonl``).

Used by ``tests/bench/calibrate_dedup.py``, which tunes ``dedup.DEFAULT_THRESHOLDS``, and
by the calibration test. Each round of work on the rule adds a block of pairs written
before the rule ran on them and reports on it; every earlier pair tunes (``split``).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ..atomic import write_bytes

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
    split: Literal["tune", "held-out"] | None = None  # the halves of rounds 1-3 (None: by line number)
    round: int = 0  # the round of work that wrote the pair; 0 for rounds 1-3


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
    """(tune, held-out) line indices. The held-out pairs are the latest round's block, marked
    ``"split": "held-out"`` and written before the rule ran on them; every other pair tunes,
    since earlier held-out halves were scored often enough to have shaped the rule."""
    latest = max((p.round for p in pairs), default=0)

    def side(i: int, p: LabelledPair) -> str | None:
        if latest:
            return p.split if p.round == latest else "tune"
        return p.split or ("tune" if i % 2 == 0 else "held-out")

    tune: list[int] = []
    held: list[int] = []
    for i, p in enumerate(pairs):
        (tune if side(i, p) == "tune" else held).append(i)
    return tune, held


def split_before(pairs: Sequence[LabelledPair], round: int) -> tuple[list[int], list[int]]:
    """The (tune, held-out) halves as rounds before ``round`` drew them, to compare with
    figures recorded then."""
    return split([p for p in pairs if p.round < round])


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


_PROBE = "Decision: use uv instead of pip. 决定：用 uv 代替 pip。"


def pair_cosines(pairs: Sequence[LabelledPair], embedder, cache: Path | None = None) -> list[float]:
    """The cosine of every pair under the real ``embedder`` (texts embedded as passages, as
    the store embeds them).

    Embedding ~840 texts with the local model takes 35–85 s, so the vectors are kept in
    ``cache`` (an ``.npz``), each under the sha256 of its text, and only missing texts are
    embedded. The cache belongs to one model: its key is the embedder's name plus a hash of
    the vector the model gives a probe text *now*, so a changed model or quantisation
    rebuilds it rather than serving another model's vectors."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    model = _model_key(embedder)
    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        try:
            with np.load(cache, allow_pickle=False) as f:
                if str(f["model"]) == model:
                    known = dict(zip(f["keys"].tolist(), f["vecs"]))
        except (OSError, ValueError, KeyError):
            known = {}  # unreadable: rebuild
    keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    missing = [i for i, k in enumerate(keys) if k not in known]
    if missing:
        fresh = embedder.passages([texts[i] for i in missing])
        known.update((keys[i], fresh[j]) for j, i in enumerate(missing))
        if cache is not None:
            buf = io.BytesIO()
            np.savez(buf, model=np.array(model), keys=np.array(keys),
                     vecs=np.stack([known[k] for k in keys]).astype(np.float32))
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(cache, buf.getvalue(), durable=False)
    row = {t: known[k] for t, k in zip(texts, keys)}
    return [float(row[p.a] @ row[p.b]) for p in pairs]


def _model_key(embedder) -> str:
    probe = np.asarray(embedder.passages([_PROBE])[0], dtype=np.float32)
    return f"{embedder.name}:{hashlib.sha256(np.round(probe, 4).tobytes()).hexdigest()[:16]}"
