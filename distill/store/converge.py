"""Several hosts writing one table: content ids, writes that keep the dedup decision, and the
pass that merges what two hosts added at the same moment.

On one host the store's lock makes check-then-insert atomic (:mod:`distill.store.memory`).
Hosts share no lock: each decides against the version it read, and LanceDB's commit protocol
orders the commits (a conflicting commit is retried from the new version). What keeps the
table right across hosts:

- **Content ids.** A new row's id is derived from its scope and content hash
  (:func:`content_id`), and new rows are written with ``merge_insert`` on ``id`` that only
  inserts: a replayed or concurrent exact duplicate is the same row, and the writer that finds
  its row already there folds its provenance into it (:func:`commit_rows`).
- **The pass** (:func:`converge`): rows with the same id twice (two inserts that committed at
  once) become one, and a recent row that the dedup rule calls a duplicate of an older row of
  its scope is folded into it — the union of their provenance in one commit that updates the
  older row and deletes the newer. Every host picks the same row to keep (the older by
  ``timestamp``, then id), so two hosts running it at once agree. It runs right after a write
  that found another host's commit between its read and its own, from housekeeping (with
  compaction), and as ``distill memories converge``.
- **Conflicts.** A commit LanceDB gives up on (a concurrent compaction rewrote the fragments a
  duplicate's update touches) is decided again from the new version (:func:`retrying`).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from pydantic import BaseModel

from . import provenance as prov
from . import table as tbl
from .dedup import NEAREST, content_hash, decide

if TYPE_CHECKING:
    from .memory import MemoryStore

T = TypeVar("T")
CONFLICT_ATTEMPTS = 5


class ConvergeReport(BaseModel):
    db: str
    table: str
    checked: int = 0  # recent rows compared with the older rows of their scope
    merged: int = 0  # near or exact duplicates folded into an older row
    copies: int = 0  # extra rows of an id stored twice, folded into one
    version: int = 0


def content_id(scope: str, chash: str) -> str:
    """The id of a new row: the same memory in the same scope gets the same id on every host."""
    digest = hashlib.sha256(f"distill-row\0{scope}\0{chash}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def is_conflict(exc: BaseException) -> bool:
    """LanceDB's commit conflicts reach Python as OSError/RuntimeError naming the conflict."""
    return isinstance(exc, (OSError, RuntimeError, ValueError)) and "conflict" in str(exc).lower()


def retrying(attempt: Callable[[], T], on_conflict: Callable[[], None]) -> T:
    """``attempt()``; after a commit conflict, ``on_conflict()`` (forget what was read) and again."""
    for n in range(CONFLICT_ATTEMPTS):
        try:
            return attempt()
        except Exception as exc:
            if not is_conflict(exc) or n == CONFLICT_ATTEMPTS - 1:
                raise
            on_conflict()
            time.sleep(0.05 * (n + 1))
    raise AssertionError("unreachable")


class Commit(BaseModel):
    versions: list[int] = []
    taken: list[str] = []  # new rows another writer had already stored under the same id


def commit_rows(table, new_rows: list[dict[str, Any]], updates: dict[str, dict[str, Any]],
                rows_by_id: Callable[[list[str]], list[dict[str, Any]]]) -> Commit:
    """Insert ``new_rows`` where their id is absent, then update the rows in ``updates``
    (id -> new metadata). A new row whose id is already there (another host stored the same
    memory first) is not written again; its provenance is added to the stored row's."""
    out = Commit()
    schema = table.schema
    if new_rows:
        result = (table.merge_insert("id").when_not_matched_insert_all()
                  .execute(tbl.rows_to_arrow(new_rows, schema)))
        out.versions.append(int(result.version))
        if int(result.num_inserted_rows) < len(new_rows):
            updates = dict(updates)
            for row in rows_by_id([r["id"] for r in new_rows]):
                mine = next(r for r in new_rows if r["id"] == row["id"])
                folded = prov.merged(prov.parse(row.get("metadata")), prov.parse(mine["metadata"]))
                if folded is not None:
                    out.taken.append(row["id"])
                    updates[row["id"]] = folded
    if updates:
        rows = rows_by_id(sorted(updates))
        for r in rows:
            r["metadata"] = prov.dump(updates[r["id"]])
        if rows:
            result = table.merge_insert("id").when_matched_update_all().execute(tbl.rows_to_arrow(rows, schema))
            out.versions.append(int(result.version))
    return out


def converge(store: "MemoryStore", *, ids: list[str] | None = None, since_ms: int | None = None) -> ConvergeReport:
    """Fold duplicates that writers on different hosts stored at once. The caller holds the
    store's write lock. ``ids``: check these rows (a write's own new rows); else every row
    with a ``timestamp`` from ``since_ms`` on (None: every row)."""
    table = store.table
    report = ConvergeReport(db=str(store.settings.db), table=store.settings.table)
    report.copies = _fold_copies(table)
    store.index.version = None
    store.index.refresh(table)
    keys = table.search().select(["id", "timestamp"]).to_arrow()
    order = {i: (tbl.as_ms(t), i) for i, t in zip(keys["id"].to_pylist(), keys["timestamp"].to_pylist())}
    if ids is None:
        subjects = [i for i, key in order.items() if since_ms is None or key[0] >= since_ms]
    else:
        subjects = [i for i in ids if i in order]
    subjects.sort(key=lambda i: order[i])
    meta = {r["id"]: prov.parse(r.get("metadata")) for r in store._rows_by_id(subjects, ["id", "metadata"])}
    thresholds = store.settings.dedup_thresholds()
    gone: set[str] = set()
    folds: dict[str, list[str]] = {}  # kept id -> ids folded into it
    for s in subjects:
        scope = store.index.scope_of.get(s)
        if scope is None or not prov.history_of(meta.get(s, {})) or not _active(meta[s]):
            continue  # rows distill did not write (no sources), and history, are left as they are
        report.checked += 1
        sidx = store.index.scope(scope)
        text, vec = sidx.row(s)

        def older(other: str, s: str = s) -> bool:
            return other != s and other not in gone and order.get(other, (0, other)) < order[s]

        near = [c for c in sidx.nearest(vec[None, :], NEAREST + 1)[0] if older(c.id)]
        same = sorted((i for i in sidx.by_hash.get(content_hash(text), []) if older(i)), key=order.__getitem__)
        verdict = decide(text, near, thresholds, exact_id=same[0] if same else None)
        if verdict.duplicate and verdict.id is not None:
            folds.setdefault(verdict.id, []).append(s)
            gone.add(s)
    if folds:
        report.merged = _fold(store, table, folds, meta)
    report.version = int(table.version)
    if report.merged or report.copies:
        store.index.version = None
    return report


def _fold(store: "MemoryStore", table, folds: dict[str, list[str]], meta: dict[str, dict[str, Any]]) -> int:
    """One commit: each kept row gets the union of provenance, the rows folded into it go."""
    kept = {r["id"]: r for r in store._rows_by_id(sorted(folds))}
    rows, losers = [], []
    for keep_id, folded in folds.items():
        row = kept.get(keep_id)
        if row is None or not _active(prov.parse(row.get("metadata"))):
            continue  # gone meanwhile, or history: nothing to fold into
        md = prov.parse(row.get("metadata"))
        for other in folded:
            md = prov.merged(md, meta[other]) or md
        row["metadata"] = prov.dump(md)
        rows.append(row)
        losers += folded
    if not rows:
        return 0
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in losers)
    (table.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete(f"id IN ({quoted})")
     .execute(tbl.rows_to_arrow(rows, table.schema)))
    return len(losers)


def _fold_copies(table) -> int:
    """Rows sharing one id (two hosts inserted the same memory in the same instant): the first
    keeps the union of their provenance, the others are deleted (two commits: a crash between
    them leaves a copy that the next pass folds, and loses nothing)."""
    data = table.search().with_row_id(True).select(["id"]).to_arrow()
    twice = [i for i, n in Counter(data["id"].to_pylist()).items() if n > 1 and i is not None]
    removed = 0
    for row_id in twice:
        q = row_id.replace("'", "''")
        rows = sorted(table.search().where(f"id = '{q}'").with_row_id(True).select(["id", "metadata"])
                      .limit(1000).to_list(), key=lambda r: r["_rowid"])
        if len(rows) < 2:
            continue
        md = prov.parse(rows[0].get("metadata"))
        for r in rows[1:]:
            md = prov.merged(md, prov.parse(r.get("metadata"))) or md
        table.update(where=f"id = '{q}' AND _rowid = {int(rows[0]['_rowid'])}", values={"metadata": prov.dump(md)})
        table.delete(f"id = '{q}' AND _rowid IN ({', '.join(str(int(r['_rowid'])) for r in rows[1:])})")
        removed += len(rows) - 1
    return removed


def _active(md: dict[str, Any]) -> bool:
    """Not history (the lifecycle fields memory-lancedb-pro and distill share)."""
    return not md.get("invalidated_at") and not md.get("superseded_by") and md.get("state") != "archived"


def run(store: "MemoryStore", *, window_minutes: float | None) -> ConvergeReport:
    """The pass as housekeeping and ``distill memories converge`` run it: rows of the last
    ``window_minutes`` (None: every row), under the write lock."""
    since = None if window_minutes is None else int((time.time() - window_minutes * 60) * 1000)
    with store._lock(store.settings):
        return converge(store, since_ms=since)


def interleaved(before: int | None, versions: list[int]) -> bool:
    """Did another writer commit between our read (``before``) and our own commits?"""
    return before is None or not versions or versions != list(range(before + 1, before + 1 + len(versions)))
