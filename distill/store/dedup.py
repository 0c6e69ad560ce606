"""What a duplicate is: the one place the store's writes, ``MemoryStore.check_duplicate``
(and the MCP ``check_duplicate`` tool over it) and the calibration get their answer from.

A new memory is a duplicate of a stored row of the same scope when

1. **exact** — both have the same ``content_hash``: case, width, whitespace, punctuation and
   the trailing ``Keywords (zh): …`` line do not count (the keywords are a search aid, and
   two runs may phrase them differently); or
2. **near** — one of its ``NEAREST`` rows by cosine passes ``judge``: the cosine clears the
   floor for the pair (``floor_for``), the lexical guard (``lexical_guard``) finds no conflict
   (an entity, number, negation or polar word one side contradicts or lacks), and they share
   enough wording. A small embedder scores "use uv instead of pip" and "use poetry instead of
   pip" *higher* than a paraphrase, and puts unrelated memories of one project above 0.9, so
   cosine only shortlists. Above memory-lancedb-pro's own duplicate threshold
   (``PLUGIN_COSINE``) shared wording is not asked for: only a contradiction keeps two rows.

Precision comes first: a wrong merge loses a memory, a missed one costs a row.
docs/dedup.md has the rule, the calibration and its figures.

The normalisation feeds a hash that is stored in every row's metadata: changing it makes
old rows miss the exact-duplicate check, so change it only together with a re-hash.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Protocol

from ..config import DedupThresholds
from ..text.keywords import without_keywords
from . import lexical_guard as guard

# Rows of the scope each new memory is compared with. A Chinese translation can rank below
# several same-language rows (their cosines run higher), so look past the first few; rows
# under the cosine floor cost nothing (the guard never reads them).
NEAREST = 16

# memory-lancedb-pro's memory_store refuses a write when the nearest row of the scope scores
# > 0.98, its score being 1 / (1 + cosine distance): cosine > 1 - (1/0.98 - 1) ≈ 0.9796.
# Above it distill merges too — unless the guard finds the texts contradict (docs/dedup.md).
PLUGIN_SCORE = 0.98
PLUGIN_COSINE = 2 - 1 / PLUGIN_SCORE

# Calibrated per embedder (docs/dedup.md): ``local`` on tests/data/dedup_pairs.jsonl by
# tests/bench/calibrate_dedup.py; ``openai`` and ``gemini`` not calibrated (no network here).
DEFAULT_THRESHOLDS: dict[str, DedupThresholds] = {
    "local": DedupThresholds(cosine=0.92, lexical=0.5, cosine_cross=0.84, lexical_zh=0.3),
    "openai": DedupThresholds(cosine=0.90, lexical=0.3, cosine_cross=0.85),
    "gemini": DedupThresholds(cosine=0.90, lexical=0.3, cosine_cross=0.85),
}

# punctuation is folded unless it sits inside a Latin token ("3.11", "a_b", "core.autocrlf=input")
_KEEP_INSIDE = re.compile(r"(?<=[A-Za-z0-9])[._\-/:+=#@](?=[A-Za-z0-9])")
# full-width sentence punctuation ends a phrase; NFKC alone would glue "决定：use" into "决定:use"
_FULL_WIDTH_BREAK = str.maketrans({c: c + " " for c in "：，；！？（）"})


def strip_keywords(text: str) -> str:
    """The memory body: the text without a final ``Keywords (zh): …`` line (after NFKC)."""
    body = unicodedata.normalize("NFKC", text.translate(_FULL_WIDTH_BREAK)).strip()
    return without_keywords(body)


def normalise(text: str) -> str:
    """Body without the keywords line; NFKC, casefolded, whitespace and punctuation folded."""
    body = strip_keywords(text).casefold()
    kept = {m.start() for m in _KEEP_INSIDE.finditer(body)}
    folded = "".join(" " if _is_punct(ch) and i not in kept else ch for i, ch in enumerate(body))
    return " ".join(folded.split())


def _is_punct(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return (cat.startswith("P") and ch not in "#%&@") or cat in ("Sk", "So")


def content_hash(text: str) -> str:
    """sha256 hex of ``normalise(text)``: the exact-duplicate key within a scope."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def lexical_similarity(a: str, b: str) -> float:
    """How much wording two memories share, 0–1 (see ``guard.lexical_similarity``)."""
    return guard.lexical_similarity(guard.profile(strip_keywords(a)), guard.profile(strip_keywords(b)))


class Evidence:
    """What the texts of a pair say, whatever the thresholds. Each part is read when first
    asked for: ``judge`` checks the cosine floor before the guard reads the texts, and most
    neighbours stop there (the calibration reads every part once and tries every threshold)."""

    def __init__(self, new_text: str, old_text: str) -> None:
        self.texts = (new_text, old_text)
        self.a, self.b = guard.profile(strip_keywords(new_text)), guard.profile(strip_keywords(old_text))
        self.cross = self.a.cjk_dominant != self.b.cjk_dominant  # one English, one Chinese
        self.zh = self.a.cjk_dominant and self.b.cjk_dominant  # both Chinese

    @cached_property
    def anchored(self) -> bool:
        """Both name the same entity or number, or (English vs Chinese) the Chinese words
        mean most of what the English ones say."""
        return bool(guard.shared_names(self.a, self.b)) or (
            self.cross and (guard.translates(self.a, self.b) or bool(guard.translated_names(self.a, self.b))))

    @cached_property
    def same_text(self) -> bool:
        return content_hash(self.texts[0]) == content_hash(self.texts[1])

    @cached_property
    def conflicts(self) -> tuple[str, ...]:
        """Why they cannot be one memory (``guard.conflicts``)."""
        return () if self.same_text else tuple(guard.conflicts(self.a, self.b))

    @cached_property
    def lexical(self) -> float:
        """Shared wording, 0–1."""
        return 1.0 if self.same_text else guard.lexical_similarity(self.a, self.b)


def floor_for(ev: Evidence, thresholds: DedupThresholds) -> float:
    """The cosine a pair must reach. Translations embed further apart than paraphrases, so
    they get ``cosine_cross`` — but only when both name the same entity or number: a Chinese
    and an English memory that share nothing named are held to the same-language floor
    (cross-language cosines of unrelated rules reach 0.88 with the local model)."""
    if ev.cross and ev.anchored and thresholds.cosine_cross is not None:
        return thresholds.cosine_cross
    return thresholds.cosine


def contradictions(a: str, b: str) -> tuple[str, ...]:
    """Why two texts cannot be one memory, whatever their cosine (empty when nothing
    contradicts): for callers without vectors, such as the distiller's reduce step."""
    return Evidence(a, b).conflicts


def judge(ev: Evidence, cosine: float, thresholds: DedupThresholds) -> tuple[bool, str]:
    """(same memory?, why) for one pair."""
    floor = floor_for(ev, thresholds)
    if cosine < floor:
        bare = ev.cross and not ev.anchored
        return False, f"cosine {cosine:.3f} < {floor:.3f}" + (" (a translation naming nothing in common)" if bare else "")
    if ev.same_text:
        return True, "exact"
    if ev.conflicts:
        return False, "; ".join(ev.conflicts)
    if cosine > PLUGIN_COSINE:
        return True, f"near:{cosine:.3f}"
    lexical = thresholds.lexical_zh if ev.zh and thresholds.lexical_zh is not None else thresholds.lexical
    if not ev.cross and ev.lexical < lexical:
        return False, f"shared wording {ev.lexical:.2f} < {lexical:.2f}"
    return True, f"near:{cosine:.3f}"


def is_near_duplicate(new_text: str, old_text: str, cosine: float, thresholds: DedupThresholds) -> bool:
    """Would ``judge`` merge this one pair at this cosine?"""
    return judge(Evidence(new_text, old_text), cosine, thresholds)[0]


class Neighbour(Protocol):
    id: str
    text: str
    cosine: float


@dataclass(frozen=True)
class Verdict:
    """The answer for one new memory. ``id`` is the row it duplicates, or, when it is
    distinct, the nearest row it was compared with (None when the scope has none);
    ``reason`` says why ("exact", "near:0.953", or what kept the nearest row apart);
    ``relation``: a distinct text that would supersede or contradict ``id`` (``check_duplicate``)."""

    decision: Literal["duplicate", "distinct"]
    id: str | None
    reason: str
    cosine: float | None = None
    relation: Literal["supersedes", "contradicts"] | None = None

    @property
    def duplicate(self) -> bool:
        return self.decision == "duplicate"


def decide(text: str, neighbours: Iterable[Neighbour], thresholds: DedupThresholds,
           exact_id: str | None = None) -> Verdict:
    """Is ``text`` a duplicate of a stored row? ``exact_id`` is a row of the scope with the
    same ``content_hash`` (the store keeps them in a hash map); ``neighbours`` are the scope's
    nearest rows by cosine, any order: the ``NEAREST`` closest are judged, closest first."""
    if exact_id is not None:
        return Verdict("duplicate", exact_id, "exact", 1.0)
    # below every floor the guard need not read the texts (most neighbours, most of the time)
    lowest = min(x for x in (thresholds.cosine, thresholds.cosine_cross) if x is not None)
    nearest: Verdict | None = None
    for n in sorted(neighbours, key=lambda n: -n.cosine)[:NEAREST]:
        if n.cosine < lowest:
            why = f"cosine {n.cosine:.3f} < {lowest:.3f}"
            return nearest or Verdict("distinct", n.id, why, n.cosine)
        same, why = judge(Evidence(text, n.text), n.cosine, thresholds)
        if same:
            return Verdict("duplicate", n.id, why, n.cosine)
        nearest = nearest or Verdict("distinct", n.id, why, n.cosine)
    return nearest or Verdict("distinct", None, "nothing stored in this scope to compare with")
