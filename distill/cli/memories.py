"""``distill memories list|show|history|search|supersede|restore|stats|forget|export|import|reembed|compact|converge|doctor|migrate``.

Nothing heavy is imported here at module level: LanceDB and the embedder load inside the
handlers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import ConfigError, DistillError
from . import command

CATEGORY_CHOICES = ["preference", "fact", "decision", "entity", "other"]


def register(sub: Any) -> None:
    group = sub.add_parser("memories", help="inspect and manage the shared memory table",
                           description="Inspect and manage the shared LanceDB memory table.")
    msub = group.add_subparsers(dest="memories_command", metavar="ACTION")
    msub.required = True

    p = command(msub, "list", handle_list, "list memories, newest first")
    _filters(p)
    p.add_argument("--since", help="only memories stored since: YYYY-MM-DD, ISO time, or 7d / 12h / 30m ago")
    p.add_argument("--limit", type=positive_int, default=50, help="at most this many (default 50)")
    p.add_argument("--full", action="store_true", help="whole text and provenance of each memory")
    _history_flag(p)

    p = command(msub, "show", handle_show, "one memory in full, with where it came from and its history")
    _id(p)

    _id(command(msub, "history", handle_history,
                "a memory's chain, oldest first: what it superseded, what superseded it, what contradicts it"))

    p = command(msub, "supersede", handle_supersede,
                "mark OLD as replaced by NEW (both stored): OLD is kept as history and no longer recalled")
    p.add_argument("old", help="id (prefix) of the memory that no longer holds")
    p.add_argument("--by", required=True, metavar="NEW", help="id (prefix) of the memory that replaces it")

    _id(command(msub, "restore", handle_restore,
                "make an archived or superseded memory current again (recalled as before)"))

    p = command(msub, "search", handle_search,
                "search memories: hybrid shows only relevant hits, scored 0-100 %% (vector: cosine, fts: BM25)")
    p.add_argument("query", help="what to look for (any language)")
    p.add_argument("--mode", choices=["vector", "fts", "hybrid"], default="hybrid")
    _filters(p)
    p.add_argument("--limit", type=positive_int, default=10, help="at most this many (default 10)")
    _history_flag(p)

    command(msub, "stats", handle_stats, "counts by scope and category, size on disk")

    p = command(msub, "forget", handle_forget, "delete one memory by id (prefix of at least 8 characters)")
    _id(p)

    p = command(msub, "export", handle_export, "write memories as memory-pro export JSON")
    _filters(p)
    p.add_argument("--output", "-o", help="file to write (default: standard output)")
    _history_flag(p)

    p = command(msub, "import", handle_import, "import a memory-pro export JSON file (deduplicated)")
    p.add_argument("file", help="JSON file: {\"memories\": [{\"text\", \"category\", \"importance\", ...}]}")
    p.add_argument("--scope", help="put every entry in this scope, as `memory-pro import --scope` does "
                   "(global, agent:<id>, custom:<name>, ...); without it each entry keeps its own scope")
    p.add_argument("--dry-run", action="store_true", help="report what would be added; write nothing")

    p = command(msub, "reembed", handle_reembed,
                "rebuild every vector with another embedder (new table, then swap; old kept as backup)")
    p.add_argument("--embedder", choices=["local", "openai", "gemini"], required=True)
    p.add_argument("--model", help="embedding model (openai / gemini)")
    p.add_argument("--base-url", help="embedding endpoint (openai-compatible / gemini)")
    p.add_argument("--dimensions", type=int, help="requested vector size")
    p.add_argument("--task", help="Jina task for stored texts, e.g. retrieval.passage")

    command(msub, "compact", handle_compact, "merge small fragments and refresh indexes (keeps recent versions)")

    p = command(msub, "converge", handle_converge,
                "fold duplicates that hosts sharing the table stored at the same moment (union of provenance)")
    p.add_argument("--all", action="store_true", help="check every row (default: the last store_converge_window_minutes)")

    command(msub, "doctor", handle_doctor,
            "the table's file format, indexes and embedder, and whether memory-lancedb-pro can read it (read-only)")
    command(msub, "migrate", handle_migrate,
            "rewrite the table in the Lance file format memory-lancedb-pro reads (store_file_format; keeps a backup)")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scope", help="global or agent:<id>")
    p.add_argument("--category", choices=CATEGORY_CHOICES)


def _id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the id or an unambiguous prefix (>= 8 characters)")


def _history_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--include-history", action="store_true",
                   help="also memories that are no longer current (superseded, invalidated by the plugin, archived)")


def positive_int(value: str) -> int:
    """``--limit``: a whole number of at least 1 (0 or less would print nothing, or be ignored)."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number: give 1 or more")
    return n


def _scope(args) -> str | None:
    """``--scope``, checked before the store is opened: a usage error names the flag."""
    from ..store.models import check_scope

    if args.scope is None:
        return None
    try:
        return check_scope(args.scope)
    except ValueError as exc:
        raise ConfigError(f"--scope: {exc}") from None


def _open(settings, *, embeds: bool = True, read_only: bool = False):
    from ..store.memory import MemoryStore

    return MemoryStore.open(settings, check_embedder=embeds, read_only=read_only)


# ---------------------------------------------------------------- results
class RowsResult(BaseModel):
    count: int
    memories: list[dict]
    full: bool = False


class SearchResult(BaseModel):
    query: str
    mode: str
    floor: float | None
    count: int
    memories: list[dict]


class ShowResult(BaseModel):
    memory: dict
    provenance: dict
    chain: list[dict] = []  # the memory's history, oldest first (itself included)


class HistoryResult(BaseModel):
    id: str
    count: int
    memories: list[dict]
    full: bool = True


class SupersedeResult(BaseModel):
    superseded: dict
    by: dict


class RestoreResult(BaseModel):
    restored: dict
    note: str | None = None


class ForgetResult(BaseModel):
    forgotten: dict


class ExportResult(BaseModel):
    output: str | None
    count: int
    document: dict | None = None


class CompactResult(BaseModel):
    size_bytes_before: int
    size_bytes_after: int
    version: int


# ---------------------------------------------------------------- handlers
def handle_list(settings, args) -> RowsResult:
    from ..store.search import parse_since

    scope = _scope(args)
    rows = _open(settings, embeds=False, read_only=True).list(scope=scope, category=args.category,
                                since_ms=parse_since(args.since), limit=args.limit,
                                include_history=args.include_history)
    return RowsResult(count=len(rows), memories=[r.model_dump() for r in rows], full=args.full)


def handle_show(settings, args) -> ShowResult:
    from ..store.search import provenance_of

    store = _open(settings, embeds=False, read_only=True)
    row = store.get(args.id)
    chain = store.history(row.id)
    return ShowResult(memory=row.model_dump(), provenance=provenance_of(row.metadata),
                      chain=[r.model_dump() for r in chain] if len(chain) > 1 else [])


def handle_history(settings, args) -> HistoryResult:
    rows = _open(settings, embeds=False, read_only=True).history(args.id)
    return HistoryResult(id=rows[0].id if len(rows) == 1 else args.id, count=len(rows),
                         memories=[r.model_dump() for r in rows])


def handle_supersede(settings, args) -> SupersedeResult:
    old, new = _open(settings, embeds=False).supersede(args.old, args.by)
    return SupersedeResult(superseded=old.model_dump(), by=new.model_dump())


def handle_restore(settings, args) -> RestoreResult:
    from ..store.lifecycle import is_current

    store = _open(settings, embeds=False)
    row = store.restore(args.id)
    note = None
    newer = row.metadata.get("superseded_by")
    if isinstance(newer, str):
        try:
            replacement = store.get(newer)
        except DistillError:
            replacement = None
        if replacement is not None and is_current(replacement.metadata, replacement.timestamp):
            note = (f"{newer} (which superseded it) is still current too: "
                    f"`distill memories supersede {newer[:8]} --by {row.id[:8]}` to make this one the rule again")
    return RestoreResult(restored=row.model_dump(), note=note)


def handle_search(settings, args) -> SearchResult:
    from ..store.search import RELEVANCE_FLOOR

    scope = _scope(args)
    hits = _open(settings, read_only=True).search(args.query, mode=args.mode, scope=scope,
                                  category=args.category, limit=args.limit,
                                  include_history=args.include_history)
    return SearchResult(query=args.query, mode=args.mode, floor=RELEVANCE_FLOOR if args.mode == "hybrid" else None,
                        count=len(hits), memories=[h.model_dump() for h in hits])


def handle_stats(settings, args):
    return _open(settings, embeds=False, read_only=True).stats()


def handle_forget(settings, args) -> ForgetResult:
    return ForgetResult(forgotten=_open(settings, embeds=False).forget(args.id).model_dump())


def handle_export(settings, args) -> ExportResult:
    from ..atomic import write_bytes
    from ..store.interchange import dumps

    scope = _scope(args)
    doc = _open(settings, embeds=False, read_only=True).export(scope=scope, category=args.category,
                                                               include_history=args.include_history)
    if args.output:  # as `memory-pro export --output`: the JSON, no trailing newline
        out = Path(args.output)
        try:
            write_bytes(out, dumps(doc).encode("utf-8"))
        except OSError as exc:
            hint = (f"it is a folder: give a file name, e.g. {out / 'memories.json'}" if out.is_dir()
                    else "give a file in a folder you can write to")
            raise ConfigError(f"cannot write the export to {out} ({exc.strerror or exc}); nothing was written: "
                              f"{hint}") from None
        return ExportResult(output=args.output, count=doc["count"])
    return ExportResult(output=None, count=doc["count"], document=doc)


def handle_import(settings, args):
    import orjson

    path = Path(args.file)
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"cannot read import file {path}: {exc.strerror}") from exc
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    scope = _scope(args)
    if args.dry_run:  # decisions only: open nothing for writing, take no lock, create no table
        from ..store.memory import MemoryStore

        store = MemoryStore.open_existing(settings) or MemoryStore.empty(settings)
    else:
        store = _open(settings)
    from ..progress import RowProgress

    show = RowProgress("import", 0, "memories")
    report = store.import_(data, scope=scope, dry_run=args.dry_run, progress=show.step)
    show.finish()
    report.file = str(path)
    return report


def handle_reembed(settings, args):
    overrides = {"embedder": args.embedder, "embed_model": args.model, "embed_base_url": args.base_url,
                 "embed_dimensions": args.dimensions, "embed_task": args.task}
    new_settings = settings.replace(**{k: v for k, v in overrides.items() if v is not None})
    from ..store import table as tbl
    from ..store.memory import MemoryStore

    db = tbl.connect_store(settings, create=False)
    table = tbl.open_table(db, settings.table)
    if table is None:
        raise ConfigError(f"there is no table {settings.table!r} in {settings.db} to re-embed")
    from ..progress import RowProgress

    store = MemoryStore(settings, db, table)
    show = RowProgress("reembed", 0)
    report = store.reembed(new_settings, progress=show.step)
    show.finish()
    return report


def handle_compact(settings, args) -> CompactResult:
    store = _open(settings, embeds=False)
    before = store.stats().size_bytes
    store.compact()
    after = store.stats()
    return CompactResult(size_bytes_before=before, size_bytes_after=after.size_bytes, version=after.version)


def handle_converge(settings, args):
    from ..store import converge

    return converge.run(_open(settings, embeds=False),
                        window_minutes=None if args.all else settings.store_converge_window_minutes)


def handle_doctor(settings, args):
    from ..store.doctor import diagnose

    return diagnose(settings)


def handle_migrate(settings, args):
    from ..store.doctor import migrate

    return migrate(settings)

