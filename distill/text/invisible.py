"""What a person sees is what an agent reads: code points that draw nothing, or that reorder
what is drawn, are taken out of a memory before it is stored.

A memory is shown to a person (``distill memories list``) and read by agents. Bidi controls
(U+202A-202E, U+2066-2069, U+200E/200F, U+061C) make the two differ: "run ``rm -rf`` U+202E
``… ataD``" reads one way in a terminal and another to a model. Zero-width characters
(U+200B, U+2060, U+FEFF, …), Unicode tag characters (U+E0000-E007F, which spell hidden ASCII)
and the supplementary variation selectors (U+E0100-E01EF, which can smuggle bytes) hide text
outright, and split a word so that a rule looking for ``rm -rf`` misses ``r\u200bm -rf``.

Removed: every format character (Unicode category Cf, which holds all of the above but the
variation selectors), the Hangul and Khmer fillers that render blank, and variation selectors
after ASCII (an emoji's U+FE0F stays). Kept: ZWJ / ZWNJ between two non-ASCII characters,
where emoji sequences (👩‍💻) and Persian or Indic words need them.
"""

from __future__ import annotations

import re
import unicodedata

_JOINERS = "\u200c\u200d"
_FILLERS = "\u115f\u1160\u17b4\u17b5\u3164\uffa0"
# a cheap gate: any code point that may be invisible (all of Cf lies in these ranges or is rare)
_MAYBE = re.compile(r"[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u08e2\u115f\u1160\u17b4\u17b5\u180e"
                    r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
                    r"\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                    r"\U000e0000-\U000e007f\U000e0100-\U000e01ef]")


def visible(text: str) -> tuple[str, int]:
    """``text`` without its invisible code points, and how many were removed."""
    if not _MAYBE.search(text):
        return text, 0
    out: list[str] = []
    removed = 0
    n = len(text)
    for i, ch in enumerate(text):
        if _hidden(ch, text[i - 1] if i else "", text[i + 1] if i + 1 < n else ""):
            removed += 1
        else:
            out.append(ch)
    return "".join(out), removed


def _hidden(ch: str, before: str, after: str) -> bool:
    o = ord(ch)
    if ch in _JOINERS:
        return not (before and after and ord(before) > 127 and ord(after) > 127)
    if 0xFE00 <= o <= 0xFE0F:  # variation selectors 1-16: an emoji's presentation, or hidden after ASCII
        return not before or ord(before) < 128
    if 0xE0100 <= o <= 0xE01EF or ch in _FILLERS:
        return True
    return unicodedata.category(ch) == "Cf"
