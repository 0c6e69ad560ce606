"""Does USE move the trade-off between finding the answer and answering nothing? (by hand)

    python tests/bench/crosslang_frontier.py [--set FILE ...]

USE comes with distill (the search's second opinion). Every question of every set (default: the
own set and the blind sets in tests/data) is asked once with no floor (``search(limit=7,
floor=None)``: the candidates ``recall`` scores). Then, pooled over the sets, for a range of
cut-offs: recall@3 per direction and the share of unrelated questions per language answered
with nothing, first for the shipped relevance, then for a logistic mix of it with USE's cosine,
its rank among the memories, its z-score and its lead over the next memory — fitted with each
set left out and scored on that set. If the mix's rows are no better than the shipped rows at
the same unrelated share, USE adds nothing at the gate. docs/store.md "USE at the gate" records
what it printed.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from crosslang_second_vector import SETS, Use, body, load_set

from distill.store.memory import MemoryStore
from distill.text.keywords import with_keywords
from tests.store_helpers import settings_for

DIRECTIONS = ("zh->en", "en->zh", "en->en", "zh->zh")


def candidates(data: dict, use: Use) -> list[tuple[dict, list[str], np.ndarray]]:
    """Per question: (question, candidate ids, features: 1, shipped score, USE cos, z, lead, USE first)."""
    mems = data["memories"]
    store = MemoryStore.open(settings_for(Path(tempfile.mkdtemp(prefix="frontier-"))))
    store.import_({"memories": [{"text": m["text"], "category": m["category"], "importance": 0.7}
                                for m in mems]}, scope="global")
    id_of = {body(m["text"]): m["id"] for m in mems}
    vecs = np.stack([use(with_keywords(m["text"])) for m in mems])
    out = []
    for q in data["questions"]:
        cos = vecs @ use(q["q"])
        rank = {mems[i]["id"]: r for r, i in enumerate(np.argsort(-cos))}
        at = {m["id"]: float(c) for m, c in zip(mems, cos)}
        ids, rows = [], []
        for h in store.search(q["q"], limit=7, floor=None):
            mid = id_of.get(body(h.text)) or next((i for t, i in id_of.items() if t in body(h.text)), None)
            if mid is None:
                continue
            u = at[mid]
            lead = u - max(c for i, c in at.items() if i != mid)
            ids.append(mid)
            rows.append([1.0, h.score, u, (u - cos.mean()) / (cos.std() + 1e-9), lead, float(rank[mid] == 0)])
        out.append((q, ids, np.array(rows).reshape(-1, 6)))
    return out


def fit(asked: list) -> Callable[[np.ndarray], np.ndarray]:
    """Logistic regression, candidate is a relevant memory or not; plain gradient descent."""
    x = np.vstack([f for _, _, f in asked])
    y = np.concatenate([[i in q["relevant"] for i in ids] for q, ids, _ in asked]).astype(float)
    mu, sd = x[:, 1:].mean(0), x[:, 1:].std(0) + 1e-9

    def norm(f: np.ndarray) -> np.ndarray:
        return np.hstack([f[:, :1], (f[:, 1:] - mu) / sd])
    w, xn = np.zeros(x.shape[1]), norm(x)
    for _ in range(3000):
        w -= 0.5 * xn.T @ (1 / (1 + np.exp(-xn @ w)) - y) / len(y)
    return lambda f: 1 / (1 + np.exp(-norm(f) @ w))


def frontier(scored: list, cuts: np.ndarray) -> list[str]:
    lines = []
    for cut in cuts:
        found, empty = defaultdict(list), defaultdict(list)
        for q, ids, score in scored:
            top = {ids[i] for i in np.argsort(-score)[:3] if score[i] >= cut}
            if q["direction"] == "unrelated":
                empty[q["lang"]].append(not top)
            else:
                found[q["direction"]].append(bool(top & set(q["relevant"])))
        lines.append(f"  cut {cut:.2f}  " + " ".join(f"{d} {np.mean(found[d]):.2f}" for d in DIRECTIONS)
                     + f"  nothing for unrelated en {np.mean(empty['en']):.2f} zh {np.mean(empty['zh']):.2f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, action="append", help="a set file (default: every dev set)")
    args = ap.parse_args()
    if args.set and len(args.set) < 2:
        ap.error("give two sets or more: the mix is fitted with each set left out and scored on it")
    use = Use()
    by_set = {p.name: candidates(load_set(p), use) for p in args.set or SETS}
    shipped = [(q, ids, f[:, 1]) for asked in by_set.values() for q, ids, f in asked]
    mixed = []
    for name, asked in by_set.items():
        model = fit([a for other, rest in by_set.items() if other != name for a in rest])
        mixed.extend((q, ids, model(f) if len(f) else f[:, 0]) for q, ids, f in asked)
    print(f"{sum(len(a) for a in by_set.values())} questions, {len(by_set)} sets")
    print("shipped relevance:")
    print("\n".join(frontier(shipped, np.arange(0.36, 0.62, 0.02))))
    print("shipped + USE (logistic, each set scored by a fit on the others):")
    print("\n".join(frontier(mixed, np.arange(0.20, 0.90, 0.04))))


if __name__ == "__main__":
    main()
