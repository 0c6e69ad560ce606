"""Scoring the lifecycle decision (``distill.store.relate``) on ``tests/data/lifecycle_pairs.jsonl``.

Each line is an (old, new) pair labelled ``update`` / ``contradiction`` / ``duplicate`` /
``distinct``; round 1 was written and committed before the rule existed, round 2 after it.
The decision for a pair is ``relate(new, [old])`` with the pair's cosine under the real local
model, as the store would take it with ``old`` the nearest stored row.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from distill.store.calibration import LabelledPair, pair_cosines
from distill.store.dedup import DEFAULT_THRESHOLDS
from distill.store.dedup_index import Candidate
from distill.store.relate import Relation, relate

PAIRS = Path(__file__).parent / "data" / "lifecycle_pairs.jsonl"
EXPECTED: dict[str, Relation] = {"update": "supersedes", "contradiction": "contradicts",
                                 "duplicate": "same", "distinct": "distinct"}
OLD_ID = "00000000-0000-4000-8000-000000000001"


@dataclass
class Pair:
    old: str
    new: str
    label: str
    lang: str
    kind: str
    round: int


def load(path: Path = PAIRS) -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cosines(pairs: list[Pair], embedder, cache: Path | None) -> list[float]:
    as_labelled = [LabelledPair(a=p.old, b=p.new, duplicate=p.label == "duplicate", kind="mixed", lang=p.lang)
                   for p in pairs]
    return pair_cosines(as_labelled, embedder, cache)


@dataclass
class Report:
    pairs: int = 0
    confusion: Counter = field(default_factory=Counter)  # (label, decided)
    errors: list[str] = field(default_factory=list)

    def precision(self, relation: Relation) -> float:
        said = sum(n for (_, d), n in self.confusion.items() if d == relation)
        right = sum(n for (lab, d), n in self.confusion.items() if d == relation and EXPECTED[lab] == relation)
        return right / said if said else 1.0

    def recall(self, relation: Relation) -> float:
        label = next(k for k, v in EXPECTED.items() if v == relation)
        total = sum(n for (lab, _), n in self.confusion.items() if lab == label)
        right = self.confusion[(label, relation)]
        return right / total if total else 1.0

    @property
    def updates_dropped(self) -> int:
        """Updates decided "same": the new rule thrown away as a duplicate of the old."""
        return self.confusion[("update", "same")]

    def summary(self) -> dict:
        return {"pairs": self.pairs, "updates_dropped_as_duplicate": self.updates_dropped,
                **{f"{r}_{m}": round(getattr(self, m)(r), 3)
                   for r in ("same", "supersedes", "contradicts") for m in ("precision", "recall")},
                "confusion": {f"{lab}->{d}": n for (lab, d), n in sorted(self.confusion.items())}}


Judged = Callable[[Pair], dict[str, tuple[Relation, str]] | None]


def capable_model(pairs: list[Pair], sent):
    """A fake model's answer, as a capable model would give it: the labelled relation of the
    pair it was shown (read back from the prompt). This measures the plumbing (the call, its
    bounds, the validation, the store acting on the answer), not a model. A prompt that names
    no labelled pair is answered "distinct" and counted in ``answer.unmatched``."""
    by_texts = {(p.old.strip(), p.new.strip()): EXPECTED[p.label] for p in pairs}

    def answer(rec):
        _, user = sent(rec)
        m = re.search(r"OLD \(stored [^)]*\):\n(.*)\n\nNEW \(stated [^)]*\):\n(.*)\Z", user, re.S)
        relation = by_texts.get((m.group(1).strip(), m.group(2).strip())) if m else None
        if relation is None:
            answer.unmatched += 1  # type: ignore[attr-defined]
        return ("json", {"relation": relation or "distinct", "reason": "read both"})
    answer.unmatched = 0  # type: ignore[attr-defined]
    return answer


def evaluate(pairs: list[Pair], cos: list[float], judged: Judged | None = None) -> Report:
    thresholds = DEFAULT_THRESHOLDS["local"]
    report = Report(pairs=len(pairs))
    for pair, c in zip(pairs, cos, strict=True):
        decision = relate(pair.new, [Candidate(OLD_ID, pair.old, c)], thresholds,
                          judged=judged(pair) if judged else None)
        report.confusion[(pair.label, decision.relation)] += 1
        if decision.relation != EXPECTED[pair.label]:
            report.errors.append(f"{pair.label} -> {decision.relation} [{pair.lang}/{pair.kind}] cos={c:.3f} "
                                 f"({decision.reason}): {pair.old!r} | {pair.new!r}")
    return report
