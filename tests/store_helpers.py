"""Shared pieces for the store tests: settings in a temp dir, a deterministic embedder for
process-heavy tests, and a table built the way memory-lancedb-pro builds it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from distill.config import load_settings
from distill.store.dedup import normalise


def settings_for(tmp_path: Path, **overrides):
    return load_settings(db=str(tmp_path / "db"), state_dir=str(tmp_path / "state"), **overrides)


class HashEmbedder:
    """Unit vectors seeded by the normalised text: equal texts → equal vectors, others ≈ orthogonal.

    Stands in for the model where a test is about locking, files or processes, not meaning.
    """

    def __init__(self, dim: int = 384, name: str = "test:hash"):
        self._dim = dim
        self.name = name
        self.calls = 0

    @property
    def dim(self) -> int:
        return self._dim

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(normalise(text).encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self._dim), np.float32)

    def query(self, text: str) -> np.ndarray:
        return self._vec(text)


def plugin_schema(dim: int) -> pa.Schema:
    """What LanceDB's Node client infers from the plugin's seed row: JS numbers are float64,
    the ``vector`` column becomes FixedSizeList<Float32>, everything nullable."""
    return pa.schema([
        pa.field("id", pa.utf8()),
        pa.field("text", pa.utf8()),
        pa.field("vector", pa.list_(pa.field("item", pa.float32(), True), dim)),
        pa.field("category", pa.utf8()),
        pa.field("scope", pa.utf8()),
        pa.field("importance", pa.float64()),
        pa.field("timestamp", pa.float64()),
        pa.field("metadata", pa.utf8()),
    ])


def make_plugin_table(db_path: Path, dim: int, rows: list[dict], *, fts: bool = True):
    """Create ``memories`` as memory-lancedb-pro does: seed row ``__schema__``, delete it,
    then its own default-tokenizer FTS index on ``text``."""
    import lancedb
    from lancedb.index import FTS

    db = lancedb.connect(str(db_path))
    seed = {"id": "__schema__", "text": "", "vector": [0.0] * dim, "category": "other", "scope": "global",
            "importance": 0.0, "timestamp": 0.0, "metadata": "{}"}
    table = db.create_table("memories", data=pa.Table.from_pylist([seed], schema=plugin_schema(dim)))
    table.delete("id = '__schema__'")
    if rows:
        table.add(pa.Table.from_pylist(rows, schema=plugin_schema(dim)))
    if fts:
        table.create_index("text", config=FTS())
    return table
