"""``distill memories doctor`` and ``migrate``: what a shared table is, and making it one
that memory-lancedb-pro's pinned client (@lancedb/lancedb 0.26.2) can read.

Doctor only reads: the table's version is the same afterwards. What 0.26.2 reads was
measured with the real client (tests/test_node_interop.py): Lance file formats 2.0 and 2.1
(2.2 panics), and FTS indexes of index format 1 (the ones Node <= 0.26 builds; it ignores
the format-2 indexes Python LanceDB 0.40 builds, then builds its own in their place).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..errors import ConfigError, SchemaMismatch
from . import table as tbl
from .embedders import for_table, known_dim, label

if TYPE_CHECKING:
    from ..config import Settings

PINNED_CLIENT = "@lancedb/lancedb 0.26.2"
PINNED_READS_FORMATS = ("0.1", "2.0", "2.1")


class IndexInfo(BaseModel):
    name: str
    type: str
    columns: list[str]
    tokenizer: str | None = None
    index_version: int | None = None
    made_by: str
    pinned_client_reads: bool


class DoctorReport(BaseModel):
    db: str
    table: str
    rows: int
    version: int
    file_format: str | None  # of the newest data file: what the table writes now
    file_formats_on_disk: list[str]
    indexes: list[IndexInfo]
    vector_dim: int
    recorded_embedder: str | None
    embedder: str | None  # what distill will embed with, given the settings and environment
    embedder_problem: str | None = None
    pinned_client_reads: bool
    advice: list[str] = Field(default_factory=list)


def newest_format(table_dir: Path) -> str | None:
    files = sorted(Path(table_dir, "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)
    if not files:
        return None
    return (tbl.file_formats_of(files[-1:]) or [None])[0]


def index_info(idx) -> IndexInfo:
    kind = str(idx.index_type).upper()
    version = getattr(idx, "index_version", None)
    tokenizer = tbl.index_tokenizer(idx) if kind == "FTS" else None
    if kind == "FTS":
        if tokenizer == tbl.FTS_TOKENIZER:
            made_by = "distill (ICU tokenizer, splits Chinese)"
        elif version == 1:
            made_by = f"memory-lancedb-pro or another LanceDB <= 0.26 client ({tokenizer} tokenizer)"
        else:
            made_by = f"a LanceDB >= 0.27 client ({tokenizer} tokenizer)"
    elif list(idx.columns) in (["scope"], ["category"], ["vector"]):
        made_by = "distill memories compact (search index)"
    else:
        made_by = "unknown"
    return IndexInfo(name=idx.name, type=kind, columns=list(idx.columns), tokenizer=tokenizer,
                     index_version=version, made_by=made_by,
                     pinned_client_reads=not (kind == "FTS" and (version or 1) > 1))


def diagnose(settings: "Settings") -> DoctorReport:
    db = tbl.connect_store(settings, create=False)  # read-only: a missing store is not created
    table = tbl.open_table(db, settings.table)
    if table is None:
        raise ConfigError(f"there is no table {settings.table!r} in {settings.db}: nothing to check")
    table_dir = tbl.table_dir(settings.db, settings.table)
    dim = tbl.vector_dim(table.schema)
    recorded = tbl.table_embedder(table)
    embedder, problem = None, None
    try:
        picked = for_table(settings, dim, recorded)
        embedder = label(picked) + (f" at {picked.embed_base_url}" if picked.embed_base_url else "")
        if known_dim(picked) not in (None, dim):
            problem = str(tbl.dim_mismatch(settings.table, dim, embedder, known_dim(picked)))
    except SchemaMismatch as exc:
        problem = str(exc)
    fmt = newest_format(table_dir) if table_dir else None  # an object store's files are not read here
    indexes = [index_info(i) for i in table.list_indices()]
    reads = fmt in PINNED_READS_FORMATS or fmt is None
    advice = []
    if not reads:
        advice.append(f"{PINNED_CLIENT} panics on Lance {fmt} files: run `distill memories migrate` "
                      f"(rewrites the table in Lance {settings.store_file_format}, keeps a backup table)")
    plugin_has_fts = any(i.type == "FTS" and i.pinned_client_reads for i in indexes)
    for i in indexes:
        if i.type == "FTS" and not i.pinned_client_reads and not plugin_has_fts:
            advice.append(f"{PINNED_CLIENT} cannot read FTS index {i.name} (index format {i.index_version}); "
                          "the plugin replaces it with its own on its next start and distill keeps that one "
                          "(Chinese queries are then completed by a substring scan)")
    if problem:
        advice.append(problem)
    return DoctorReport(
        db=str(settings.db), table=settings.table, rows=table.count_rows(), version=table.version,
        file_format=fmt, file_formats_on_disk=tbl.file_formats(table_dir) if table_dir else [], indexes=indexes, vector_dim=dim,
        recorded_embedder=recorded, embedder=embedder, embedder_problem=problem,
        pinned_client_reads=reads, advice=advice,
    )


class MigrateReport(BaseModel):
    rows: int
    old_format: str | None
    new_format: str
    backup_table: str
    version: int


def migrate(settings: "Settings") -> MigrateReport:
    """Rewrite the table in ``settings.store_file_format`` in one commit, under the write lock.

    A copy goes to ``<table>_backup_<ms>`` first; the live table is then overwritten (readers
    see the old rows or the new, never a mix). Indexes do not survive an overwrite: the FTS
    index is created again (and the plugin replaces it with its own on its next start);
    ``distill memories compact`` rebuilds the search indexes.
    """
    from .memory import MemoryStore

    db = tbl.connect_store(settings, create=False)
    if db is None or tbl.open_table(db, settings.table) is None:
        raise ConfigError(f"there is no table {settings.table!r} in {settings.db} to migrate")
    table_dir = tbl.table_dir(settings.db, settings.table)
    with MemoryStore._lock(settings):
        table = db.open_table(settings.table)
        old = newest_format(table_dir) if table_dir else None
        data = table.to_arrow()
        backup = f"{settings.table}_backup_{int(time.time() * 1000)}"
        db.create_table(backup, data=data, schema=table.schema)
        new = db.create_table(settings.table, data=data, schema=table.schema, mode="overwrite",
                              storage_options=tbl.format_options(settings.store_file_format))
        tbl.ensure_fts(new)
    new_format = (newest_format(table_dir) if table_dir else None) or settings.store_file_format
    return MigrateReport(rows=data.num_rows, old_format=old, new_format=new_format,
                         backup_table=backup, version=new.version)
