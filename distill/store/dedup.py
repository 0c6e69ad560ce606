"""The duplicate decision the store makes on every write.

Two keys, two questions:

* ``content_hash`` answers "is this the same text?" — case, width, whitespace, punctuation and
  the trailing ``Keywords (zh): …`` line do not count (the keywords are a search aid, and two
  runs may phrase them differently).
* ``is_near_duplicate`` answers "is this the same fact?" for the nearest rows the store found
  by cosine. A small embedder scores "use uv instead of pip" and "use poetry instead of pip"
  *higher* than a paraphrase or a translation, and puts unrelated memories from the same
  project above 0.9, so cosine only shortlists. The decision also needs a lexical guard
  (``distill.store.lexical_guard``): the two texts must not disagree about an entity (tool, path,
  identifier, proper noun), a number or version, a negation, or a polar pair
  (always/never, enable/disable, before/after); and they must share enough of their wording.

The normalisation feeds a hash that is stored in every row's metadata: changing it makes
old rows miss the exact-duplicate check, so change it only together with a re-hash.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from ..config import DedupThresholds
from . import lexical_guard as guard

_KEYWORDS_LINE = re.compile(r"(?:\A|\n)[ \t]*keywords[ \t]*\(zh\)[ \t]*:[^\n]*\s*\Z", re.IGNORECASE)
# punctuation is folded unless it sits inside a Latin token ("3.11", "a_b", "core.autocrlf=input")
_KEEP_INSIDE = re.compile(r"(?<=[A-Za-z0-9])[._\-/:+=#@](?=[A-Za-z0-9])")
# full-width sentence punctuation ends a phrase; NFKC alone would glue "决定：use" into "决定:use"
_FULL_WIDTH_BREAK = str.maketrans({c: c + " " for c in "：，；！？（）"})


def strip_keywords(text: str) -> str:
    """The memory body: the text without a final ``Keywords (zh): …`` line (after NFKC)."""
    body = unicodedata.normalize("NFKC", text.translate(_FULL_WIDTH_BREAK)).strip()
    return _KEYWORDS_LINE.sub("", body).strip()


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


def is_near_duplicate(new_text: str, old_text: str, cosine: float, thresholds: DedupThresholds) -> bool:
    """Same fact: cosine clears the threshold for the pair's languages, and the lexical
    guard finds no conflict and enough shared wording."""
    floor = min(thresholds.cosine, thresholds.cosine_cross if thresholds.cosine_cross is not None else 1.0)
    if cosine < floor:
        return False
    if content_hash(new_text) == content_hash(old_text):
        return True
    return guard.agrees(guard.profile(strip_keywords(new_text)), guard.profile(strip_keywords(old_text)), cosine, thresholds)
