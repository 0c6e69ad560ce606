"""The LanceDB table: open as it is (or create), check the vector size, build conforming rows.

Tables made by memory-lancedb-pro (LanceDB's Node client infers ``importance`` and
``timestamp`` as float64) and the Memory MCP server exist in the wild. We never alter an
existing table's columns or types: rows are cast to whatever the table has. New tables get
``timestamp`` int64 (Unix ms) and ``importance`` float64.

New tables are written in ``store_file_format`` (default 2.0, what memory-lancedb-pro's
pinned Node client writes itself; Python LanceDB's own default, 2.2, makes that client panic).

Full-text search: a table has at most one FTS index on ``text`` and distill never replaces
one it did not make. On a table with none, a writer creates one with the ICU tokenizer
(which segments Chinese into words). memory-lancedb-pro's pinned client cannot read an
index this LanceDB writes (index format 2), so on its next start it replaces it with its
own ``simple`` one, which distill then keeps; Chinese search on such a table is completed
by :mod:`distill.store.fts`.
"""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path
from typing import Any, overload

import lancedb
import pyarrow as pa

from ..errors import ConfigError, SchemaMismatch

COLUMNS = ("id", "text", "vector", "category", "scope", "importance", "timestamp", "metadata")
CJK_TOKENIZERS = ("icu", "icu/split", "ngram")
FTS_TOKENIZER = "icu"


def new_schema(dim: int) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.utf8()),
        pa.field("text", pa.utf8()),
        pa.field("vector", pa.list_(pa.field("item", pa.float32()), dim)),
        pa.field("category", pa.utf8()),
        pa.field("scope", pa.utf8()),
        pa.field("importance", pa.float64()),
        pa.field("timestamp", pa.int64()),
        pa.field("metadata", pa.utf8()),
    ])


@overload
def connect(db_path: "Path | str", *, storage_options: dict[str, str] | None = None) -> "lancedb.DBConnection": ...
@overload
def connect(db_path: "Path | str", *, create: bool,
            storage_options: dict[str, str] | None = None) -> "lancedb.DBConnection | None": ...
def connect(db_path: "Path | str", *, create: bool = True,  # noqa: E302
            storage_options: dict[str, str] | None = None) -> "lancedb.DBConnection | None":
    """``read_consistency_interval=0``: every read sees the latest commit of any process (of any
    host, on an object store).

    ``db_path`` is a local folder or an object-store URI (``s3://bucket/prefix``). LanceDB reads
    the endpoint, region and credentials of a URI from the standard environment (``AWS_*``);
    ``storage_options`` (the ``storage_options`` setting) override them key by key.

    ``create=False`` (read-only commands, and those that need an existing table): a folder
    that does not exist is not created; None says there is no store there. A URI is never
    created by connecting (an object store has no folders)."""
    if is_uri(db_path):
        try:
            return lancedb.connect(str(db_path), read_consistency_interval=timedelta(0),
                                   storage_options=dict(storage_options or {}) or None)
        except (OSError, ValueError, RuntimeError) as exc:
            why = scrub_credentials(str(exc), storage_options)[:300]
            raise ConfigError(f"cannot open the object store at {db_path}: {why}; check AWS_ENDPOINT_URL, AWS_REGION, "
                              "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_ALLOW_HTTP=true for a plain-http "
                              "endpoint), or the storage_options setting") from None
    if create:
        Path(db_path).mkdir(parents=True, exist_ok=True)
    elif not Path(db_path).is_dir():
        return None
    return lancedb.connect(str(db_path), read_consistency_interval=timedelta(0))


def connect_store(settings, *, create: bool = True) -> "lancedb.DBConnection | None":
    """The configured store (``settings.db`` with its ``storage_options``)."""
    return connect(settings.db, create=create, storage_options=settings.storage_options)


def is_uri(db_path: "Path | str") -> bool:
    """An object-store location (the settings keep those as strings, local folders as Paths)."""
    return isinstance(db_path, str) and "://" in db_path


def table_dir(db_path: "Path | str", table: str) -> Path | None:
    """The table's local folder, to read its files directly; None on an object store."""
    return None if is_uri(db_path) else Path(db_path) / f"{table}.lance"


def table_names(db) -> list[str]:
    result = db.list_tables()
    return list(getattr(result, "tables", result))


def open_table(db, name: str):
    """The table, or None if it (or the store: ``db`` None) does not exist."""
    return db.open_table(name) if db is not None and name in table_names(db) else None


def create_table(db, name: str, dim: int, file_format: str = "2.0"):
    """Create empty in ``file_format``; a concurrent creator winning the race is fine (``exist_ok``)."""
    return db.create_table(name, schema=new_schema(dim), exist_ok=True, storage_options=format_options(file_format))


def format_options(file_format: str) -> dict[str, str]:
    """LanceDB's way to choose the file format of a table it creates (or overwrites)."""
    return {} if file_format == "stable" else {"new_table_data_storage_version": file_format}


def file_formats(table_dir: Path) -> list[str]:
    """The Lance file format versions of every data file on disk (old versions' too)."""
    return file_formats_of(Path(table_dir, "data").glob("*.lance"))


def file_formats_of(paths) -> list[str]:
    """Read from each file's footer (``<major u16><minor u16>LANC``; 0.3 is how Lance spells
    2.0, 0.1 the legacy format)."""
    import struct

    seen: set[str] = set()
    for path in paths:
        try:
            with open(path, "rb") as f:
                f.seek(-8, 2)
                tail = f.read(8)
        except OSError:
            continue
        if tail[4:] != b"LANC":
            continue
        major, minor = struct.unpack("<HH", tail[:4])
        seen.add({(0, 3): "2.0", (0, 1): "0.1"}.get((major, minor), f"{major}.{minor}"))
    return sorted(seen)


def vector_dim(schema: pa.Schema) -> int:
    if "vector" not in schema.names:
        raise SchemaMismatch("the memories table has no 'vector' column; it was not made by "
                             "memory-lancedb-pro, the Memory MCP server or distill")
    vtype = schema.field("vector").type
    if not pa.types.is_fixed_size_list(vtype):
        raise SchemaMismatch(f"the memories table's 'vector' column is {vtype}, expected a fixed-size list of floats")
    return vtype.list_size


def check_columns(schema: pa.Schema, table: str) -> None:
    missing = [c for c in ("id", "text", "vector") if c not in schema.names]
    if missing:
        raise SchemaMismatch(f"table {table!r} lacks column(s) {', '.join(missing)}; "
                             "point DISTILL_DB / DISTILL_TABLE at a memories table")


def dim_mismatch(table: str, table_dim: int, embedder: str, embed_dim: int) -> SchemaMismatch:
    from .embedders import KNOWN_EMBEDDERS

    known = KNOWN_EMBEDDERS.get(table_dim)
    usual = f" (usually {known[0]}:{known[1]}; `distill memories doctor` names the settings)" if known else ""
    return SchemaMismatch(
        f"table {table!r} holds {table_dim}-d vectors but embedder {embedder} makes {embed_dim}-d vectors; "
        f"nothing was written. Configure the embedder the table was built with{usual}, or rebuild the "
        f"table for this one with `distill memories reembed`"
    )


def rows_to_arrow(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Cast rows to the table's own schema; columns we do not know about get nulls."""
    arrays = []
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if field.name == "timestamp" and (pa.types.is_integer(field.type)):
            values = [None if v is None else int(v) for v in values]
        elif field.name == "importance" or (field.name == "timestamp" and pa.types.is_floating(field.type)):
            values = [None if v is None else float(v) for v in values]
        if pa.types.is_fixed_size_list(field.type):
            arrays.append(_vectors(values, field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _vectors(values: list, vtype: pa.FixedSizeListType) -> pa.Array:
    import numpy as np

    dim = vtype.list_size
    mat = np.asarray(values, dtype=np.float32)
    if mat.shape != (len(values), dim):
        raise SchemaMismatch(f"refusing to write vectors of shape {mat.shape}; the table needs {dim}-d")
    if not np.isfinite(mat).all() or (np.abs(mat).sum(axis=1) == 0).any():
        raise SchemaMismatch("refusing to write a zero or non-finite vector")
    flat = pa.array(mat.ravel(), type=vtype.value_type)
    return pa.FixedSizeListArray.from_arrays(flat, type=vtype)


def as_ms(value: Any) -> int:
    """Timestamps are ms; a plugin float or a stray seconds value becomes int ms."""
    if value is None:
        return 0
    try:
        v = float(value)
    except (TypeError, ValueError):
        return 0
    if not math.isfinite(v):
        return 0
    if 0 < v < 1e11:  # seconds (before year 5138 in ms terms)
        v *= 1000
    return int(v)


def fts_index(table):
    for idx in table.list_indices():
        if str(idx.index_type).upper() == "FTS" and list(idx.columns) == ["text"]:
            return idx
    return None


def index_tokenizer(idx) -> str:
    details = getattr(idx, "index_details", None) or {}
    return str(details.get("base_tokenizer") or "simple")


def splits_cjk(tokenizer: str | None) -> bool:
    return tokenizer is not None and (tokenizer in CJK_TOKENIZERS or tokenizer.startswith(("jieba", "lindera")))


def ensure_fts(table) -> bool:
    """Create the FTS index on ``text`` (ICU) when the table has none; never replace one.

    Returns whether an index was created."""
    from lancedb.index import FTS

    if fts_index(table) is not None:
        return False
    table.create_index(
        "text",
        config=FTS(base_tokenizer=FTS_TOKENIZER, with_position=False, stem=True, remove_stop_words=False),
        replace=False,
    )
    return True


def recorded_embedder(metadata_values) -> str | None:
    """The embedder the rows say made them (distill records ``metadata.embedder``)."""
    import json

    for raw in metadata_values:
        try:
            name = json.loads(raw or "{}").get("embedder")
        except (ValueError, AttributeError, TypeError):
            continue
        if name:
            return str(name)
    return None


def table_embedder(table, sample: int = 200) -> str | None:
    if "metadata" not in table.schema.names:
        return None
    rows = table.search().select(["metadata"]).limit(sample).to_arrow()
    return recorded_embedder(rows["metadata"].to_pylist())


def scrub_credentials(text: str, storage_options: dict[str, str] | None) -> str:
    """``text`` with every credential the store was given (settings, AWS environment) masked."""
    import os

    secrets = [v for k, v in (storage_options or {}).items() if _secret_key(k)]
    secrets += [os.environ[k] for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN") if os.environ.get(k)]
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _secret_key(name: str) -> bool:
    name = name.lower()
    return any(w in name for w in ("secret", "token", "password", "key")) and "key_id" not in name


def shared_table_state(settings, newest: int = 200):
    """Rows, version and the hosts that wrote the newest ``newest`` rows, newest host first."""
    from ..model import HostSeen, SharedTable
    from .memory import MemoryStore

    out = SharedTable(db=str(settings.db), table=settings.table)
    try:
        store = MemoryStore.open_existing(settings, check_embedder=False)
        if store is None:
            out.error = "no table yet (nothing stored)"
            return out
        out.rows, out.version = store.count(), int(store.table.version)
        seen: dict[str, list[int]] = {}
        for row in store.list(limit=newest):
            for src in row.metadata.get("sources") or []:
                if isinstance(src, dict) and src.get("host"):
                    seen.setdefault(str(src["host"]), []).append(int(src.get("seen_at") or 0))
        out.hosts = sorted((HostSeen(host=h, last_seen_ms=max(v), sources=len(v)) for h, v in seen.items()),
                           key=lambda h: -h.last_seen_ms)
    except Exception as exc:  # noqa: BLE001 - status reports an unreachable store, it does not fail on it
        out.error = scrub_credentials(f"{type(exc).__name__}: {exc}", settings.storage_options)[:500]
    return out
