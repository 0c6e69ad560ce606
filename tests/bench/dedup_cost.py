"""What the lexical guard costs in its worst case for English–Chinese pairs: every Chinese
memory of tests/relevance_corpus.py against 16 English ones, all at a cosine inside the band
where the guard reads the texts (above ``cosine_cross``, under ``cosine``).

    python tests/bench/dedup_cost.py

"cold" includes loading the dictionary (once per process); "warm" is every later pair.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from distill.store.dedup import DEFAULT_THRESHOLDS, Evidence, judge  # noqa: E402
from tests.relevance_corpus import corpus  # noqa: E402


def main() -> None:
    texts = list(corpus().values())
    zh = [t for t in texts if sum("\u4e00" <= ch <= "\u9fff" for ch in t.split("\n")[0]) >= 4]
    en = [t for t in texts if t not in zh][:16]
    thresholds = DEFAULT_THRESHOLDS["local"]
    band = (thresholds.cosine_cross + thresholds.cosine) / 2
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        for a in zh:
            for b in en:
                judge(Evidence(a, b), band, thresholds)
        print(f"{label}: {time.perf_counter() - t0:.2f} s for {len(zh)} x {len(en)} English-Chinese pairs at cosine {band:.3f}")


if __name__ == "__main__":
    main()
