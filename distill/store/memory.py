"""MemoryStore: the one way into and out of the shared memories table.

Writes embed outside the lock, then, under ``FileLock(settings.store_lock_path)``, refresh
the dedup copy, decide every draft (exact hash within the scope, then exact-cosine nearest
rows of the scope through the lexical guard, including drafts earlier in the same call)
and commit once: a plain append, or one ``merge_insert`` when duplicates also update their
rows' provenance. Check-then-insert is therefore atomic across every process that writes
through this class (daemon, cron, backfill, CLI).
"""

from __future__ import annotations

import builtins
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np

from ..errors import ConfigError, SchemaMismatch
from ..lock import FileLock
from . import converge
from . import lifecycle as life
from . import provenance as prov
from . import table as tbl
from .dedup import NEAREST, Verdict, content_hash
from .relate import LLM_PAIRS, Decision, band_floor, make_judge, relate
from .dedup_index import DedupIndex, cosines
from .embedders import Embedder, for_table, known_dim, make_embedder
from .embedders import label as embedder_label
from .models import (
    AddOutcome,
    ImportReport,
    MemoryDraft,
    MemoryHit,
    MemoryRow,
    ReembedReport,
    StoreStats,
)
from .scrub import scrub_draft
from ..text.keywords import query_concepts
from . import fts
from .search import RELEVANCE_FLOOR, ROW_COLUMNS, hybrid_search, vector_search, where_clause

if TYPE_CHECKING:
    from ..config import Settings

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="distill-search")


def now_ms() -> int:
    return int(time.time() * 1000)


def _current_then(rows_now: dict[str, tuple[bool, int]], row_id: str, when: int) -> bool:
    """May a text stated at ``when`` supersede or contradict this stored row: it is current,
    and not newer than the statement (``_lifecycle_rows`` read both)."""
    row = rows_now.get(row_id)
    return row is not None and row[0] and row[1] <= when


class MemoryStore:
    def __init__(self, settings: "Settings", db, table, embedder: Embedder | None = None):
        self.settings = settings
        self.db = db
        self.table = table
        self._embedder = embedder
        # table None: :meth:`empty`, a stand-in for a store with no table yet (dry runs only)
        self.dim = tbl.vector_dim(table.schema) if table is not None else self.embedder.dim
        self.index = DedupIndex(self.dim)
        self.redacted: Counter = Counter()  # secrets removed from drafts, by kind
        self.lifecycle: Counter = Counter()  # judge_calls / judge_failed: the model asked about the band
        self._judge: Any = None if settings.llm == "rules" else "unmade"

    # ---------------------------------------------------------------- opening
    @classmethod
    def open(cls, settings: "Settings", *, embedder: Embedder | None = None,
             check_embedder: bool = True, read_only: bool = False) -> "MemoryStore":
        """Open (or create) ``settings.db``/``settings.table`` as it is; refuse a vector-size mismatch.

        ``check_embedder=False`` is for commands that never embed (list, stats, export, forget):
        they work on a table whatever embedder is configured. ``read_only=True`` (list, stats,
        search, show, export, doctor) never creates a table or an index: the table's version
        is the same after as before.
        """
        db = tbl.connect_store(settings, create=not read_only)
        table = tbl.open_table(db, settings.table)
        if table is None and read_only:
            raise ConfigError(f"there is no table {settings.table!r} in {settings.db} yet: nothing has been "
                              "stored (`distill run` or `distill memories import` creates it)")
        if table is None:
            emb = embedder or make_embedder(settings)
            with cls._lock(settings):
                table = tbl.open_table(db, settings.table) or tbl.create_table(
                    db, settings.table, emb.dim, settings.store_file_format)
                tbl.ensure_fts(table)
            embedder = emb
        tbl.check_columns(table.schema, settings.table)
        if embedder is None and check_embedder:
            settings = for_table(settings, tbl.vector_dim(table.schema), tbl.table_embedder(table))
        store = cls(settings, db, table, embedder)
        dim = embedder.dim if embedder is not None else known_dim(settings)
        if check_embedder and dim is not None and dim != store.dim:
            raise tbl.dim_mismatch(settings.table, store.dim, store.embedder_name(), dim)
        if not read_only and tbl.fts_index(table) is None:
            with cls._lock(settings):
                tbl.ensure_fts(table)
        return store

    @classmethod
    def open_existing(cls, settings: "Settings", *, embedder: Embedder | None = None,
                      check_embedder: bool = True) -> "MemoryStore | None":
        """Open read-only (as ``open(read_only=True)``), or None when there is no table yet:
        for readers to whom a store with nothing stored is an empty answer, not an error.
        A missing ``db`` folder is not looked into (connecting would create it)."""
        db = tbl.connect_store(settings, create=False)
        if tbl.open_table(db, settings.table) is None:
            return None
        return cls.open(settings, embedder=embedder, check_embedder=check_embedder, read_only=True)

    @classmethod
    def empty(cls, settings: "Settings", *, embedder: Embedder | None = None) -> "MemoryStore":
        """A store with no table, for a dry run where none exists yet: every decision is taken
        against nothing stored (drafts of the same call still dedup each other); writing raises."""
        return cls(settings, None, None, embedder)

    @staticmethod
    def _lock(settings: "Settings") -> FileLock:
        return FileLock(settings.store_lock_path, purpose="writing to the memory store").acquire(
            timeout=settings.store_lock_timeout)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.settings)
        return self._embedder

    def embedder_name(self) -> str:
        if self._embedder is not None:
            return self._embedder.name
        return embedder_label(self.settings)

    def _passages(self, texts: list[str]) -> np.ndarray:
        vecs = self.embedder.passages(texts)
        if vecs.shape[1] != self.dim:
            raise tbl.dim_mismatch(self.settings.table, self.dim, self.embedder.name, vecs.shape[1])
        return vecs

    # ---------------------------------------------------------------- writing
    def add(self, drafts: list[MemoryDraft], *, replaces: str | None = None) -> list[AddOutcome]:
        """Store what is new, record provenance on what is not; one commit per call.

        A new memory that restates a stored one with another value supersedes it (the old row
        is kept as history, see :mod:`.lifecycle`); ``replaces`` (an id or prefix, one draft)
        says so for it: a person's or an agent's correction."""
        drafts = [d if isinstance(d, MemoryDraft) else MemoryDraft.model_validate(d) for d in drafts]
        if replaces is not None:
            if len(drafts) != 1:
                raise ValueError("replaces names the row one new memory supersedes: pass one draft")
            return self._add(drafts, replaces=self._one_by_prefix(replaces)["id"])
        return self._add(drafts)

    def check(self, drafts: list[MemoryDraft]) -> list[AddOutcome]:
        """What ``add`` would decide for these drafts right now; writes nothing."""
        drafts = [d if isinstance(d, MemoryDraft) else MemoryDraft.model_validate(d) for d in drafts]
        return self._add(drafts, dry_run=True)

    def check_duplicate(self, text: str, scope: str = "global") -> Verdict:
        """The decision :meth:`add` would make for one memory text (the rule path), writing
        nothing: ``Verdict(decision, id, reason)`` — the row it duplicates, the current row it
        would supersede or contradict (a "distinct" answer: it would be stored), or the nearest
        row it was compared with and what kept them apart. A caller that checks before it
        remembers (the Memory MCP server's protocol) is never told a newer rule is a duplicate
        of the one it replaces. Like every check it takes no write lock (see :meth:`_refresh`)."""
        draft = scrub_draft(MemoryDraft(text=text, scope=scope), self.redacted)
        vec = self._passages([draft.text])
        self._refresh()
        thresholds = self.settings.dedup_thresholds()
        pool = self._existing_candidates([draft], vec)[0]
        rows_now, now = self._lifecycle_rows([pool], band_floor(thresholds), None), now_ms()
        exact_id = self.index.scope(draft.scope).exact(content_hash(draft.text))
        decision = relate(draft.text, pool, thresholds, exact_id=exact_id,
                          current=lambda row_id: _current_then(rows_now, row_id, now))
        if decision.relation == "same":
            return Verdict("duplicate", decision.id, decision.reason, decision.cosine)
        if decision.relation == "distinct":
            return Verdict("distinct", decision.id, decision.reason, decision.cosine)
        return Verdict("distinct", decision.id, f"{decision.relation} {decision.id}: {decision.reason}",
                       decision.cosine, relation=decision.relation)

    def _refresh(self) -> None:
        """Bring the dedup copy up to the table's latest commit. Checks and dry runs call this
        without the write lock: the lock only orders writers (check-then-insert); a read sees one
        committed version whatever a writer is doing, so a check never writes the lock file and
        never waits up to ``store_lock_timeout`` behind a writer. Its answer is the one for the
        latest commit, as a check made a moment earlier or later would give."""
        if self.table is not None:
            self.index.refresh(self.table)

    def _add(self, drafts: list[MemoryDraft], *, ids: list[str | None] | None = None,
             timestamps: list[int | None] | None = None, dry_run: bool = False,
             replaces: str | None = None) -> list[AddOutcome]:
        if not drafts:
            return []
        drafts = [scrub_draft(d, self.redacted) for d in drafts]
        vecs = self._passages([d.text for d in drafts])
        ids = ids or [None] * len(drafts)
        timestamps = timestamps or [None] * len(drafts)
        if dry_run:  # decisions only: no lock, nothing written (see _refresh)
            self._refresh()
            return self._decide_and_write(drafts, vecs, ids, timestamps, dry_run=True)
        if self.table is None:
            raise ConfigError(f"there is no table {self.settings.table!r} in {self.settings.db} to write to")
        judged = self._judge_band(drafts, vecs) if replaces is None else {}
        with self._lock(self.settings):
            def attempt() -> list[AddOutcome]:
                self.index.refresh(self.table)
                return self._decide_and_write(drafts, vecs, ids, timestamps, dry_run, judged=judged, replaces=replaces)

            return converge.retrying(attempt, on_conflict=self._forget_version)

    def _judge_band(self, drafts, vecs) -> dict[int, dict[str, tuple[Any, str]]]:
        """With an LLM configured: the model's relation for each draft and its nearest stored row
        in the uncertain band, asked before the write lock is taken (a call takes seconds). A row
        written meanwhile by another process is decided by the rule."""
        if self._judge is None:
            return {}
        if self._judge == "unmade":
            self._judge = make_judge(self.settings)
        self._refresh()
        floor = band_floor(self.settings.dedup_thresholds())
        out: dict[int, dict[str, tuple[Any, str]]] = {}
        asked = 0
        for i, cands in enumerate(self._existing_candidates(drafts, vecs)):
            sidx = self.index.scope(drafts[i].scope)
            if sidx.exact(content_hash(drafts[i].text)) is not None:
                continue
            near = [c for c in cands if c.cosine >= floor]
            if not near or asked >= LLM_PAIRS:
                continue
            best = max(near, key=lambda c: c.cosine)
            asked += 1
            self.lifecycle["judge_calls"] += 1
            answer = self._judge(drafts[i].text, best.text)
            if answer is None:
                self.lifecycle["judge_failed"] += 1
                continue
            out[i] = {best.id: answer}
        return out

    def _decide(self, i, d, pool, thresholds, exact_id, current, judged, replaces) -> Decision:
        if replaces is not None:
            return Decision("supersedes", replaces, "replaces (given)")
        return relate(d.text, pool, thresholds, exact_id=exact_id, current=current, judged=judged.get(i))

    def _decide_and_write(self, drafts, vecs, ids, timestamps, dry_run, *, judged=None,
                          replaces: str | None = None) -> list[AddOutcome]:
        thresholds = self.settings.dedup_thresholds()
        hashes = [content_hash(d.text) for d in drafts]
        candidates = self._existing_candidates(drafts, vecs)
        rows_now = self._lifecycle_rows(candidates, band_floor(thresholds), replaces)
        now = now_ms()
        outcomes: list[AddOutcome] = []
        new_rows: list[dict[str, Any]] = []
        targets: list[tuple[str, int]] = []  # (existing row id, draft index)
        batch: dict[str, list[int]] = {}  # scope -> indices of drafts added by this call
        row_ids: dict[int, str] = {}
        intra = cosines(vecs, vecs)
        batch_md: dict[str, dict[str, Any]] = {}
        ties: list[tuple[str, str, Decision, int]] = []  # (new row id, old row id, decision, draft index)
        replaced: set[str] = set()  # rows superseded by this call
        for i, d in enumerate(drafts):
            sidx = self.index.scope(d.scope)
            target, reason, decision = None, None, None
            row_id = ids[i] or converge.content_id(d.scope, hashes[i])  # the same memory: the same id on every host
            if ids[i] and (ids[i] in self.index.all_ids or ids[i] in batch_md):
                target, reason = ids[i], "id"
            else:
                pool = candidates[i] + _batch_candidates(batch.get(d.scope, []), intra[i], row_ids, drafts)
                when = timestamps[i] or now

                def current(row_id: str, when: int = when) -> bool:
                    if row_id in replaced:
                        return False
                    if row_id in batch_md:
                        return True
                    return _current_then(rows_now, row_id, when)

                decision = self._decide(i, d, pool, thresholds, sidx.exact(hashes[i]), current,
                                        judged or {}, replaces)
                if decision.relation == "same":
                    target, reason = decision.id, decision.reason
                elif row_id in self.index.all_ids:  # its content id is a row edited since (by the plugin)
                    target, reason = row_id, "id"
                elif decision.relation == "supersedes" and decision.id:
                    replaced.add(decision.id)
            if target is not None:
                outcomes.append(AddOutcome(status="duplicate", id=target, reason=reason))
                if target in batch_md:
                    merged = prov.with_duplicate(batch_md[target], d.metadata, hashes[i], now, host=self.host)
                    batch_md[target] = merged or batch_md[target]
                else:
                    targets.append((target, i))
                continue
            batch_md[row_id] = prov.for_new_row(d.metadata, hashes[i], self.embedder.name, now, host=self.host)
            if decision is not None and decision.relation in ("supersedes", "contradicts") and decision.id:
                ties.append((row_id, decision.id, decision, i))
            batch.setdefault(d.scope, []).append(i)
            row_ids[i] = row_id
            new_rows.append({"id": row_id, "text": d.text, "vector": vecs[i], "category": d.category,
                             "scope": d.scope, "importance": d.importance,
                             "timestamp": timestamps[i] if timestamps[i] else now})
            self.index.put(row_id, d.scope, d.text, vecs[i], hashes[i])
            outcomes.append(AddOutcome(status="added", id=row_id))
        for new_id, old_id, decision, _ in ties:
            kind = decision.relation
            outcome = next(o for o in outcomes if o.id == new_id and o.status == "added")
            outcome.relation, outcome.related, outcome.reason = kind, old_id, decision.reason  # type: ignore[assignment]
        if dry_run:
            for r in new_rows:
                self.index.drop(r["id"])
            return outcomes
        updates = self._duplicate_updates(targets, drafts, hashes, now)
        self._tie(ties, batch_md, updates, drafts, now)
        aside = self._fold_access(updates) if new_rows or updates else None
        for r in new_rows:
            r["metadata"] = prov.dump(batch_md[r["id"]])
        try:
            self._write(new_rows, updates)
        except BaseException:
            for r in new_rows:
                self.index.drop(r["id"])
            self.index.version = None
            raise
        life.AccessLog.done(aside)
        return outcomes

    def _lifecycle_rows(self, candidates, floor: float, replaces: str | None) -> dict[str, tuple[bool, int]]:
        """id → (current?, its timestamp) for the stored rows a draft could supersede or contradict."""
        wanted = sorted({c.id for cands in candidates for c in cands if c.cosine >= floor} | (
            {replaces} if replaces else set()))
        if not wanted or self.table is None:
            return {}
        at = now_ms()
        out = {}
        for r in self._rows_by_id(wanted, ["id", "metadata", "timestamp"]):
            ts = tbl.as_ms(r.get("timestamp"))
            out[r["id"]] = (life.lifecycle_of(prov.parse(r.get("metadata")), ts).current_at(at), ts)
        return out

    def _tie(self, ties, batch_md, updates, drafts, now) -> None:
        """Write each supersede / contradiction into both rows' metadata (the plugin's keys)."""
        if not ties:
            return
        stored = {r["id"]: r for r in self._rows_by_id(
            sorted({old for _, old, _, _ in ties if old not in batch_md}), ["id", "metadata", "timestamp", "category"])}
        for new_id, old_id, decision, i in ties:
            if decision.relation == "contradicts":
                batch_md[new_id] = life.contradicting(batch_md[new_id], other=old_id)
                continue
            row = stored.get(old_id)
            old_md = batch_md.get(old_id) or updates.get(old_id) or prov.parse(row.get("metadata") if row else None)
            key = life.chain_fact_key(old_md, tbl.as_ms(row.get("timestamp")) if row else now,
                                      (row or {}).get("category") or drafts[i].category, "", old_id)
            batch_md[new_id] = life.superseding(batch_md[new_id], replaces=old_id, fact_key=key, at=now)
            patched = life.superseded(old_md, by=new_id, fact_key=key, at=now)
            if old_id in batch_md:
                batch_md[old_id] = patched
            elif row is not None:
                updates[old_id] = patched

    def _fold_access(self, updates: dict[str, dict[str, Any]]) -> Path | None:
        """Fold the recalls counted since the last write into this commit (see ``AccessLog``)."""
        tally, aside = self.access_log().take()
        if not tally:
            return aside
        rows = {r["id"]: r for r in self._rows_by_id(sorted(tally), ["id", "metadata", "timestamp"])}
        for row_id, (count, last) in tally.items():
            row = rows.get(row_id)
            if row is None:
                continue  # forgotten since
            base = updates.get(row_id, prov.parse(row.get("metadata")))
            updates[row_id] = life.with_access(base, tbl.as_ms(row.get("timestamp")), count, last)
        return aside

    def access_log(self) -> life.AccessLog:
        return life.AccessLog(self.settings.state.access_log(self.settings.table))

    def _existing_candidates(self, drafts, vecs) -> list[list]:
        """Nearest stored rows per draft, one matrix product per scope."""
        out: list[list] = [[] for _ in drafts]
        by_scope: dict[str, list[int]] = {}
        for i, d in enumerate(drafts):
            by_scope.setdefault(d.scope, []).append(i)
        for scope, idx in by_scope.items():
            for i, cands in zip(idx, self.index.scope(scope).nearest(vecs[idx], NEAREST)):
                out[i] = cands
        return out

    def _duplicate_updates(self, targets, drafts, hashes, now) -> dict[str, dict[str, Any]]:
        if not targets:
            return {}
        current = {r["id"]: prov.parse(r.get("metadata")) for r in self._rows_by_id(
            sorted({t for t, _ in targets}), ["id", "metadata"])}
        updates: dict[str, dict[str, Any]] = {}
        for target, i in targets:
            base = updates.get(target, current.get(target))
            if base is None:
                continue  # the row vanished under us (deleted by a writer outside the lock)
            merged = prov.with_duplicate(base, drafts[i].metadata, hashes[i], now, host=self.host)
            if merged is not None:
                updates[target] = merged
        return updates

    def _rows_by_id(self, ids: list[str], columns: list[str] | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in chunk)
            q = self.table.search().where(f"id IN ({quoted})").limit(len(chunk) * 4 + 10)
            if columns:
                q = q.select(columns)
            out.extend(q.to_list())
        return out

    def _write(self, new_rows: list[dict[str, Any]], updates: dict[str, dict[str, Any]]) -> None:
        """Commit (see :func:`converge.commit_rows`); when another host committed between our read
        and our commit, fold at once what it may have added alongside ours (:func:`converge.converge`)."""
        if not new_rows and not updates:
            return
        before = self.index.version
        commit = converge.commit_rows(self.table, new_rows, updates, self._rows_by_id)
        if converge.interleaved(before, commit.versions):
            self.index.version = None
            if new_rows:
                converge.converge(self, ids=[r["id"] for r in new_rows])
        else:
            self.index.version = commit.versions[-1]  # only our commits since the copy was read
        self._maybe_compact()

    def _forget_version(self) -> None:
        self.index.version = None

    @property
    def host(self) -> str:
        return prov.host_name(self.settings.host)

    def _maybe_compact(self) -> None:
        """Small appends pile up as small fragments; fold them in once there are many."""
        stats = self.table.stats()
        small = (stats.get("fragment_stats") or {}).get("num_small_fragments", 0)
        if small >= self.settings.store_compact_small_fragments:
            self._optimize(build_index=False)  # building an ANN index can take minutes: not here

    # ---------------------------------------------------------------- reading
    def search(self, query: str, *, mode: Literal["vector", "fts", "hybrid"] = "hybrid",
               scope: str | list[str] | None = None, category: str | None = None, limit: int = 10,
               floor: float | None = RELEVANCE_FLOOR, include_history: bool = False,
               count_use: bool = False) -> list[MemoryHit]:
        """``hybrid`` scores are 0-1 relevance and hits under ``floor`` are left out (search.py).

        Only current rows (:mod:`.lifecycle`) unless ``include_history``; among those, the order
        is relevance times the plugin's decay boost (use and recency). ``count_use`` (MCP
        recall) counts each returned hit as one use, in the access log, not the table."""
        where = where_clause(scope, category)
        limit = max(1, int(limit))
        if mode == "fts":
            def found(n: int) -> list[MemoryHit]:
                return fts.search(self.table, query, where, n)
        else:
            concepts = _POOL.submit(query_concepts, query) if mode == "hybrid" else None  # the dictionary loads meanwhile
            qvec = self.embedder.query(query)
            if len(qvec) != self.dim:
                raise tbl.dim_mismatch(self.settings.table, self.dim, self.embedder.name, len(qvec))

            def found(n: int) -> list[MemoryHit]:
                if concepts is None:
                    return vector_search(self.table, qvec, where, n)
                return hybrid_search(self.table, query, qvec, where, n, floor=floor, pool=_POOL,
                                     concepts=concepts.result())
        pending = self.access_log().pending()
        raw = found(limit)
        hits = life_rank(raw, pending, include_history=include_history)
        if len(hits) < len(raw) == limit:  # history rows took places: look deeper once
            hits = life_rank(found(limit + 2 * (len(raw) - len(hits)) + 10), pending)
        hits = hits[:limit]
        if count_use:
            self.access_log().record([h.id for h in hits])
        return hits

    def list(self, *, scope: str | list[str] | None = None, category: str | None = None, since_ms: int | None = None,
             limit: int | None = 50, include_history: bool = False) -> list[MemoryRow]:
        """Newest first; current rows only unless ``include_history``."""
        ts_float = _ts_is_float(self.table.schema)
        where = where_clause(scope, category, since_ms, ts_is_float=ts_float)
        if limit is None:
            q = self.table.search().select(ROW_COLUMNS)
            rows = (q.where(where) if where else q).to_list()
            if not include_history:
                rows = [r for r in rows if _current(r)]
        else:  # find the newest ids on small columns, then read only those rows
            q = self.table.search().select(["id", "timestamp", "metadata"])
            keys = (q.where(where) if where else q).to_list()
            if not include_history:
                keys = [k for k in keys if _current(k)]
            keys.sort(key=lambda r: -tbl.as_ms(r.get("timestamp")))
            rows = self._rows_by_id([k["id"] for k in keys[: max(0, int(limit))]], ROW_COLUMNS)
        rows.sort(key=lambda r: (-tbl.as_ms(r.get("timestamp")), r["id"]))
        return [_row(r) for r in rows]

    def count(self) -> int:
        return self.table.count_rows()

    def stats(self) -> StoreStats:
        data = self.table.search().select(["scope", "category"]).to_arrow()
        by_scope: dict[str, int] = {}
        by_cat: dict[str, int] = {}
        for s, c in zip(data["scope"].to_pylist(), data["category"].to_pylist()):
            by_scope[s or "global"] = by_scope.get(s or "global", 0) + 1
            by_cat[c or "other"] = by_cat.get(c or "other", 0) + 1
        return StoreStats(
            db=str(self.settings.db), table=self.settings.table, total=data.num_rows, by_scope=by_scope,
            by_category=by_cat, vector_dim=self.dim, embedder=self.embedder_name(),
            size_bytes=_table_size(self.table, tbl.table_dir(self.settings.db, self.settings.table)),
            version=self.table.version,
        )

    # ---------------------------------------------------------------- forgetting
    def get(self, id_prefix: str) -> MemoryRow:
        """One memory by its id or an unambiguous prefix of at least 8 characters."""
        return _row(self._one_by_prefix(id_prefix))

    def forget(self, id_prefix: str) -> MemoryRow:
        """Delete one memory by an id prefix of at least 8 characters; refuse an ambiguous one."""
        with self._lock(self.settings):
            row = self._one_by_prefix(id_prefix)
            self.table.delete(f"id = '{row['id']}'")
            self.index.drop(row["id"])
        return _row(row)

    def _one_by_prefix(self, id_prefix: str) -> dict[str, Any]:
        prefix = id_prefix.strip().lower()
        if len(prefix) < 8 or not all(c in "0123456789abcdef-" for c in prefix):
            raise SchemaMismatch(f"{id_prefix!r} is not an id prefix: give at least 8 hex characters "
                                 "of an id shown by `distill memories list`")
        rows = self.table.search().where(f"id LIKE '{prefix}%'").select(ROW_COLUMNS).limit(50).to_list()
        if not rows:
            raise SchemaMismatch(f"no memory id starts with {prefix!r}")
        if len({r['id'] for r in rows}) > 1:
            shown = ", ".join(sorted({r["id"] for r in rows})[:5])
            raise SchemaMismatch(f"{prefix!r} matches {len(rows)} memories ({shown}); give a longer prefix")
        return rows[0]

    # ---------------------------------------------------------------- lifecycle (see lifecycle.py)
    def supersede(self, old_prefix: str, new_prefix: str) -> tuple[MemoryRow, MemoryRow]:
        """A person's correction: ``new`` replaces ``old`` (both stored). Nothing is deleted."""
        with self._lock(self.settings):
            old, new = self._one_by_prefix(old_prefix), self._one_by_prefix(new_prefix)
            if old["id"] == new["id"]:
                raise SchemaMismatch(f"{old_prefix!r} and {new_prefix!r} are the same memory: name two")
            at = now_ms()
            old_md, new_md = prov.parse(old.get("metadata")), prov.parse(new.get("metadata"))
            key = life.chain_fact_key(old_md, tbl.as_ms(old.get("timestamp")), old.get("category") or "other",
                                      old.get("text") or "", old["id"])
            updates = {old["id"]: life.superseded(old_md, by=new["id"], fact_key=key, at=at),
                       new["id"]: life.superseding(new_md, replaces=old["id"], fact_key=key, at=at)}
            self._write([], updates)
        return _row({**old, "metadata": prov.dump(updates[old["id"]])}), _row({**new, "metadata": prov.dump(updates[new["id"]])})

    def restore(self, id_prefix: str) -> MemoryRow:
        """Make an archived or superseded row current again (the history links stay)."""
        with self._lock(self.settings):
            row = self._one_by_prefix(id_prefix)
            md = life.restored(prov.parse(row.get("metadata")))
            self._write([], {row["id"]: md})
        return _row({**row, "metadata": prov.dump(md)})

    def history(self, id_prefix: str, limit: int = 50) -> "builtins.list[MemoryRow]":
        """The row's chain, oldest first: what it superseded and what superseded it, following
        ``supersedes`` / ``superseded_by`` both ways, then the rows related to any of them
        (``contradicts``)."""
        start = self._one_by_prefix(id_prefix)
        rows = {start["id"]: start}
        frontier = [start]
        while frontier and len(rows) < limit:
            links: set[Any] = set()
            for r in frontier:
                md = prov.parse(r.get("metadata"))
                links |= {md.get("supersedes"), md.get("superseded_by")}
                links |= {rel["targetId"] for rel in life.relations_of(md)}
            links = {x for x in links if isinstance(x, str) and x not in rows}
            frontier = self._rows_by_id(sorted(links), ROW_COLUMNS) if links else []
            rows.update((r["id"], r) for r in frontier)
        mention = " OR ".join(f"metadata LIKE '%{i.replace(chr(39), chr(39) * 2)}%'" for i in rows)
        pointing = [r for r in self.table.search().where(mention).select(ROW_COLUMNS).to_list()
                    if r["id"] not in rows and any(
                        rel["targetId"] in rows for rel in life.relations_of(prov.parse(r.get("metadata"))))]
        rows.update((r["id"], r) for r in pointing[: max(0, limit - len(rows))])

        def order(r: dict[str, Any]) -> tuple[int, int, str]:
            state = life.lifecycle_of(prov.parse(r.get("metadata")), tbl.as_ms(r.get("timestamp")))
            return state.valid_from, state.invalidated_at or 2**62, r["id"]  # a replaced row before its successor
        return [_row(r) for r in sorted(rows.values(), key=order)]

    def fold_access(self) -> int:
        """Write the recalls counted in the access log into the rows; how many rows changed."""
        with self._lock(self.settings):
            updates: dict[str, dict[str, Any]] = {}
            aside = self._fold_access(updates)
            self._write([], updates)
            life.AccessLog.done(aside)
        return len(updates)

    def archive_stale(self, at: int | None = None) -> "builtins.list[str]":
        """Archive the current rows the decay engine calls stale (``state: archived``; never
        deleted, ``restore`` brings one back). Recalls still in the access log count first."""
        at = now_ms() if at is None else at
        with self._lock(self.settings):
            updates: dict[str, dict[str, Any]] = {}
            aside = self._fold_access(updates)
            rows = self.table.search().select(["id", "metadata", "timestamp", "importance"]).to_list()
            archived: builtins.list[str] = []
            for r in rows:
                md = updates.get(r["id"]) or prov.parse(r.get("metadata"))
                ts = tbl.as_ms(r.get("timestamp"))
                state = life.lifecycle_of(md, ts)
                importance = float(r.get("importance") if r.get("importance") is not None else 0.7)
                if state.current_at(at) and life.is_stale(state, importance, ts, at):
                    updates[r["id"]] = life.archived(md, at=at, reason="stale: unused and old (decay engine)")
                    archived.append(r["id"])
            self._write([], updates)
            life.AccessLog.done(aside)
        return archived

    # ---------------------------------------------------------------- interchange
    def export(self, *, scope: str | None = None, category: str | None = None,
               include_history: bool = False) -> dict[str, Any]:
        """Current rows only unless ``include_history`` (then every row, as ``memory-pro export``)."""
        from .interchange import export_document, export_rows

        rows = export_rows(self.table, scope, category)
        if not include_history:
            rows = [r for r in rows if _current(r)]
        return export_document(rows, scope, category)

    def import_(self, data: dict[str, Any], *, scope: str | None = None, dry_run: bool = False,
                progress: "Callable[[int, int], None] | None" = None) -> ImportReport:
        """``progress(done, total)`` after each chunk of entries."""
        from .interchange import parse_document

        entries, report = parse_document(data, scope)
        report.dry_run = dry_run
        for start in range(0, len(entries), 256):
            if progress is not None:
                progress(start, len(entries))
            chunk = entries[start:start + 256]
            outcomes = self._add([e.draft for e in chunk], ids=[e.id for e in chunk],
                                 timestamps=[e.timestamp for e in chunk], dry_run=dry_run)
            report.added += sum(o.status == "added" for o in outcomes)
            report.duplicate += sum(o.status == "duplicate" for o in outcomes)
        if progress is not None:
            progress(len(entries), len(entries))
        return report

    # ---------------------------------------------------------------- housekeeping
    def compact(self) -> None:
        """Fold what hosts stored at once (:mod:`converge`), merge small fragments, update indexes,
        remove versions older than the grace period."""
        with self._lock(self.settings):
            window = self.settings.store_converge_window_minutes
            converge.converge(self, since_ms=now_ms() - int(window * 60_000))
            self._optimize()

    def _optimize(self, *, build_index: bool = True) -> None:
        grace = timedelta(minutes=max(self.settings.store_cleanup_grace_minutes, 1.0))
        self.table.optimize(cleanup_older_than=grace)
        if build_index:
            self._build_indexes()
        self.index.version = None

    def _build_indexes(self) -> None:
        """Search indexes: bitmaps on the filter columns (cheap), and from
        ``store_vector_index_min_rows`` rows an IVF_FLAT index on ``vector`` (no quantisation)."""
        from lancedb.index import Bitmap, IvfFlat

        indexed = {tuple(i.columns) for i in self.table.list_indices()}
        for column in ("scope", "category"):
            if (column,) not in indexed and column in self.table.schema.names:
                self.table.create_index(column, config=Bitmap())
        if ("vector",) not in indexed and self.table.count_rows() >= self.settings.store_vector_index_min_rows:
            self.table.create_index("vector", config=IvfFlat(distance_type="cosine"))

    def reembed(self, new_settings: "Settings", *, embedder: Embedder | None = None,
                progress: "Callable[[int, int], None] | None" = None) -> ReembedReport:
        from .reembed import rebuild

        report = rebuild(self, new_settings, embedder or make_embedder(new_settings), progress)
        self.settings = new_settings
        self._embedder = embedder
        self.table = tbl.open_table(self.db, new_settings.table)
        self.dim = tbl.vector_dim(self.table.schema)
        self.index = DedupIndex(self.dim)
        return report


def _batch_candidates(earlier: list[int], sims: np.ndarray, row_ids: dict[int, str], drafts) -> list:
    """The nearest drafts this same call already decided to add (same scope)."""
    from .dedup_index import Candidate

    if not earlier:
        return []
    idx = np.asarray(earlier)
    best = idx[np.argsort(-sims[idx])[:NEAREST]]
    return [Candidate(row_ids[j], drafts[j].text, float(sims[j])) for j in best]


def _current(r: dict[str, Any], at: int | None = None) -> bool:
    return life.is_current(prov.parse(r.get("metadata")), tbl.as_ms(r.get("timestamp")), at)


def life_rank(hits: list[MemoryHit], pending: dict[str, tuple[int, int]], *,
              include_history: bool = False) -> list[MemoryHit]:
    """Leave out rows that are not current (unless asked), then order by relevance times the
    decay engine's boost, counting the uses still waiting in the access log."""
    at = now_ms()
    ranked = []
    for h in hits:
        state = life.lifecycle_of(h.metadata, h.timestamp)
        if not include_history and not state.current_at(at):
            continue
        md = h.metadata
        if h.id in pending:
            md = life.with_access(md, h.timestamp, *pending[h.id])
            state = life.lifecycle_of(md, h.timestamp)
        ranked.append((h.score * life.search_boost(state, h.importance, h.timestamp, at), h))
    ranked.sort(key=lambda p: (-p[0], p[1].id))
    return [h for _, h in ranked]


def _row(r: dict[str, Any]) -> MemoryRow:
    return MemoryRow(
        id=r["id"], text=r.get("text") or "", category=r.get("category") or "other",
        scope=r.get("scope") or "global", importance=float(r.get("importance") or 0.0),
        timestamp=tbl.as_ms(r.get("timestamp")), metadata=prov.parse(r.get("metadata")),
    )


def _ts_is_float(schema) -> bool:
    import pyarrow as pa

    return "timestamp" in schema.names and pa.types.is_floating(schema.field("timestamp").type)


def _table_size(table, local_dir: Path | None) -> int:
    """Bytes of every version's files; on an object store, of the current version's (LanceDB's stats)."""
    if local_dir is not None:
        return _dir_size(local_dir)
    return int((table.stats() or {}).get("total_bytes") or 0)


def _dir_size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file():
                total += p.stat().st_size
        except OSError:
            pass
    return total

