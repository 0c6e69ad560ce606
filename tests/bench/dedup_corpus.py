"""Wrong merges on a realistic store: write ``tests/relevance_corpus.py`` (~290 memories,
all different by construction) through ``MemoryStore.add`` with the local embedder on a
fresh LanceDB directory, and list every memory that was merged into another.

    python tests/bench/dedup_corpus.py [-v]

Every merge here is a lost memory. Prints them grouped by language pair (en→en, zh→en, …)
and, as the baseline of the same run, how many the seed systems' rule (cosine ≥ 0.90 with
the nearest stored row, nothing else) would have merged.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from distill.config import load_settings  # noqa: E402
from distill.store import MemoryDraft  # noqa: E402
from distill.store.memory import MemoryStore  # noqa: E402
from tests.relevance_corpus import corpus  # noqa: E402


def lang(text: str) -> str:
    return "zh" if sum("\u4e00" <= ch <= "\u9fff" for ch in text.split("\n")[0]) >= 4 else "en"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", "--verbose", action="store_true", help="print every wrong merge")
    args = ap.parse_args()
    texts = list(corpus().values())
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(load_settings(db=f"{tmp}/db", state_dir=f"{tmp}/state"))
        t0 = time.perf_counter()
        outcomes = store.add([MemoryDraft(text=t) for t in texts])
        seconds = time.perf_counter() - t0
        vecs = store.embedder.passages(texts)
    kept = {o.id: t for o, t in zip(outcomes, texts) if o.status == "added"}
    merged = [(t, kept[o.id], o.reason) for o, t in zip(outcomes, texts) if o.status == "duplicate"]
    # the seed rule, replayed in the same order: merge into any earlier kept row at cosine >= 0.90
    seed, kept_idx = 0, []
    for i in range(len(texts)):
        if kept_idx and float((vecs[kept_idx] @ vecs[i]).max()) >= 0.90:
            seed += 1
        else:
            kept_idx.append(i)
    by_pair = Counter(f"{lang(a)}→{lang(b)}" for a, b, _ in merged)
    print(f"{len(texts)} distinct memories written in {seconds:.1f} s: {len(merged)} merged into another "
          f"({dict(by_pair)}); cosine >= 0.90 alone: {seed}")
    if args.verbose:
        for a, b, why in merged:
            print(f"  {why}: {a.splitlines()[0][:90]}\n      into {b.splitlines()[0][:90]}")


if __name__ == "__main__":
    main()
