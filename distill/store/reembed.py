"""Rebuild every vector with another embedder into a new table, then swap it in.

The new vectors are written to ``<table>__reembed`` first (a crash leaves the live table
as it was). The swap happens under the write lock: the old rows are copied to
``<table>_backup_<ms>``, rows written meanwhile are embedded too, and the live table is
overwritten in one commit, so a reader sees either the old table or the new one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa

from ..errors import SchemaMismatch
from . import table as tbl
from .models import ReembedReport

if TYPE_CHECKING:
    from ..config import Settings
    from .embedders import Embedder
    from .memory import MemoryStore


def rebuild(store: "MemoryStore", new_settings: "Settings", embedder: "Embedder",
            progress: "Callable[[int, int], None] | None" = None) -> ReembedReport:
    """``progress(done, total)``: rows embedded so far (the long part)."""
    if new_settings.table != store.settings.table or new_settings.db != store.settings.db:
        raise SchemaMismatch("reembed rebuilds the configured table in place; do not change --db/table with it")
    old_schema = store.table.schema
    name = store.settings.table
    data = store.table.to_arrow()
    vectors = _embed(embedder, data, progress)
    new_dim = vectors.shape[1] if len(vectors) else embedder.dim
    new_schema = _with_dim(old_schema, new_dim)
    staging = f"{name}__reembed"
    if staging in tbl.table_names(store.db):
        store.db.drop_table(staging)
    store.db.create_table(staging, data=_replace_vectors(data, vectors, new_schema), schema=new_schema)
    backup = f"{name}_backup_{int(time.time() * 1000)}"
    with store._lock(store.settings):
        current = store.table.to_arrow()
        known = set(data["id"].to_pylist())
        extra = current.filter(pa.compute.invert(pa.compute.is_in(current["id"], value_set=pa.array(list(known)))))
        staged = store.db.open_table(staging)
        if extra.num_rows:
            staged.add(_replace_vectors(extra, _embed(embedder, extra), new_schema))
        gone = known - set(current["id"].to_pylist())
        for row_id in gone:
            staged.delete(f"id = '{row_id}'")
        store.db.create_table(backup, data=current, schema=old_schema)
        final = staged.to_arrow()
        store.db.create_table(name, data=final, schema=new_schema, mode="overwrite",
                              storage_options=tbl.format_options(new_settings.store_file_format))
        store.db.drop_table(staging)
        tbl.ensure_fts(store.db.open_table(name))
    return ReembedReport(rows=final.num_rows, old_embedder=_old_embedder(data), new_embedder=embedder.name,
                         old_dim=store.dim, new_dim=new_dim, backup_table=backup)


def _old_embedder(data: pa.Table) -> str:
    values = data["metadata"].to_pylist() if "metadata" in data.column_names else []
    return tbl.recorded_embedder(values) or "unknown"


def _embed(embedder: "Embedder", data: pa.Table, progress=None) -> np.ndarray:
    texts = [t or "" for t in data["text"].to_pylist()]
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    parts = []
    for start in range(0, len(texts), EMBED_CHUNK):
        if progress is not None:
            progress(start, len(texts))
        parts.append(embedder.passages(texts[start:start + EMBED_CHUNK]))
    if progress is not None:
        progress(len(texts), len(texts))
    return np.concatenate(parts)


EMBED_CHUNK = 256  # rows per embedder call: progress between calls, the same vectors as one call


def _with_dim(schema: pa.Schema, dim: int) -> pa.Schema:
    i = schema.get_field_index("vector")
    vtype = schema.field("vector").type
    return schema.set(i, pa.field("vector", pa.list_(vtype.value_field, dim), nullable=schema.field("vector").nullable))


def _replace_vectors(data: pa.Table, vectors: np.ndarray, schema: pa.Schema) -> pa.Table:
    vtype = schema.field("vector").type
    flat = pa.array(vectors.astype(np.float32).ravel(), type=vtype.value_type)
    col = pa.FixedSizeListArray.from_arrays(flat, type=vtype)
    out = data.set_column(data.schema.get_field_index("vector"), schema.field("vector"), col)
    return out.cast(schema)
