"""Figures for the lifecycle decision (``distill.store.relate``), rule path.

    python tests/bench/lifecycle_pairs.py

1. ``tests/data/lifecycle_pairs.jsonl`` per round (round 1 written before the rule, round 2
   after it): updates dropped as duplicates, precision and recall of same / supersedes /
   contradicts, and every misjudged pair.
2. The dedup calibration set (``tests/data/dedup_pairs.jsonl``): the store's "same" (what
   ``relate`` merges) against ``dedup.judge`` alone, on the tuning and held-out halves, so a
   change here never costs the dedup figures in docs/dedup.md.

Vectors come from the real local model, cached in tests/bench/out/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from distill.store.calibration import load_pairs, pair_cosines, score, split  # noqa: E402
from distill.store.dedup import DEFAULT_THRESHOLDS, is_near_duplicate  # noqa: E402
from distill.store.dedup_index import Candidate  # noqa: E402
from distill.store.embedders import LocalEmbedder  # noqa: E402
from distill.store.relate import relate  # noqa: E402
from lifecycle_eval import cosines, evaluate, load  # noqa: E402

OUT = ROOT / "tests" / "bench" / "out"


def main() -> None:
    emb = LocalEmbedder()
    pairs = load()
    cos = cosines(pairs, emb, OUT / "lifecycle_vectors.npz")
    for rnd in sorted({p.round for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.round == rnd]
        report = evaluate([pairs[i] for i in idx], [cos[i] for i in idx])
        print(f"round {rnd}: {json.dumps(report.summary())}")
        for e in report.errors:
            print("   ", e)
    report = evaluate(pairs, cos)
    print(f"all: {json.dumps(report.summary())}")

    dedup = load_pairs(ROOT / "tests" / "data" / "dedup_pairs.jsonl")
    seed = ROOT / "tests" / "data" / "dedup_vectors.npz"
    cache = OUT / "dedup_vectors.npz"
    if not cache.exists() and seed.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(seed.read_bytes())
    dcos = pair_cosines(dedup, emb, cache)
    th = DEFAULT_THRESHOLDS["local"]
    tune, held = split(dedup)
    for name, part in (("tune", tune), ("held-out", held)):
        ps, cs = [dedup[i] for i in part], [dcos[i] for i in part]
        alone = score(ps, cs, lambda p, c: is_near_duplicate(p.a, p.b, c, th))
        # the calibration's order: ``a`` is the new memory, ``b`` the stored one
        store = score(ps, cs, lambda p, c: relate(p.a, [Candidate("x", p.b, c)], th).relation == "same")
        print(f"dedup_pairs {name}: dedup.judge P={alone.precision:.3f} R={alone.recall:.3f} | "
              f"store (relate) P={store.precision:.3f} R={store.recall:.3f}")


if __name__ == "__main__":
    main()
