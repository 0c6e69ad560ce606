"""An in-memory copy of what dedup compares against: per scope, each row's content hash,
text and unit vector.

Brute-force cosine inside LanceDB costs a full scan per query (hundreds of ms at 100k
rows); a numpy matrix product over the scope's vectors gives the same exact cosines for a
whole batch in milliseconds. The copy is refreshed from the table at every write-lock hold:
nothing is read when the table version is the one we wrote last; otherwise the ``_rowid``
column tells which rows are new or rewritten (appends, updates, compaction, overwrite) and
only those are fetched, and ids no longer present are dropped (``forget``, other writers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dedup import content_hash

FETCH = ["id", "scope", "text", "vector"]


@dataclass
class Candidate:
    id: str
    text: str
    cosine: float


@dataclass
class ScopeIndex:
    dim: int
    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    by_hash: dict[str, list[str]] = field(default_factory=dict)  # content hash -> live ids
    slot: dict[str, int] = field(default_factory=dict)
    hash_of: dict[str, str] = field(default_factory=dict)
    _vecs: np.ndarray | None = None
    _alive: np.ndarray | None = None
    n: int = 0

    def put(self, id_: str, text: str, h: str, vec: np.ndarray) -> None:
        if id_ in self.slot:
            self.drop(id_)
        if self._vecs is None or self.n == len(self._vecs):
            cap = max(1024, 2 * self.n)
            vecs = np.zeros((cap, self.dim), dtype=np.float32)
            alive = np.zeros(cap, dtype=bool)
            if self._vecs is not None:
                vecs[: self.n] = self._vecs[: self.n]
                alive[: self.n] = self._alive[: self.n]
            self._vecs, self._alive = vecs, alive
        i = self.n
        self._vecs[i] = vec
        self._alive[i] = True
        self.ids.append(id_)
        self.texts.append(text)
        self.slot[id_] = i
        self.hash_of[id_] = h
        self.by_hash.setdefault(h, []).append(id_)
        self.n += 1

    def put_many(self, ids: list[str], texts: list[str], hashes: list[str], vecs: np.ndarray) -> None:
        """Bulk load (ids not yet present): one copy into the matrix instead of one per row."""
        need = self.n + len(ids)
        if self._vecs is None or need > len(self._vecs):
            cap = max(1024, 2 * need)
            grown = np.zeros((cap, self.dim), dtype=np.float32)
            alive = np.zeros(cap, dtype=bool)
            if self._vecs is not None:
                grown[: self.n] = self._vecs[: self.n]
                alive[: self.n] = self._alive[: self.n]
            self._vecs, self._alive = grown, alive
        self._vecs[self.n:need] = vecs
        self._alive[self.n:need] = True
        for k, (id_, text, h) in enumerate(zip(ids, texts, hashes)):
            self.ids.append(id_)
            self.texts.append(text)
            self.slot[id_] = self.n + k
            self.hash_of[id_] = h
            self.by_hash.setdefault(h, []).append(id_)
        self.n = need

    def drop(self, id_: str) -> None:
        i = self.slot.pop(id_, None)
        if i is None:
            return
        self._alive[i] = False
        h = self.hash_of.pop(id_, None)
        same = self.by_hash.get(h)
        if same is not None:
            same.remove(id_)
            if not same:
                del self.by_hash[h]

    def row(self, id_: str) -> tuple[str, np.ndarray]:
        """A live row's text and unit vector."""
        slot = self.slot[id_]
        return self.texts[slot], self._vecs[slot]

    def exact(self, h: str) -> str | None:
        """The id of a live row with this content hash, if any."""
        same = self.by_hash.get(h)
        return same[0] if same else None

    def nearest(self, vecs: np.ndarray, k: int = 5) -> list[list[Candidate]]:
        """Top-``k`` live rows by exact cosine for each query row."""
        if self.n == 0 or not len(vecs):
            return [[] for _ in range(len(vecs))]
        sims = cosines(vecs, self._vecs[: self.n])
        dead = np.flatnonzero(~self._alive[: self.n])
        if len(dead):
            sims[:, dead] = -2.0
        k = min(k, self.n)
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        out = []
        for row, cols in enumerate(top):
            cols = cols[np.argsort(-sims[row, cols])]
            out.append([Candidate(self.ids[c], self.texts[c], float(sims[row, c]))
                        for c in cols if self._alive[c]])
        return out


class DedupIndex:
    def __init__(self, dim: int):
        self.dim = dim
        self.version: int | None = None
        self.rowids = np.zeros(0, dtype=np.uint64)
        self.scope_of: dict[str, str] = {}
        self.scopes: dict[str, ScopeIndex] = {}
        self.all_ids: set[str] = set()  # every id in the table, also rows dedup cannot compare

    def scope(self, name: str) -> ScopeIndex:
        if name not in self.scopes:
            self.scopes[name] = ScopeIndex(self.dim)
        return self.scopes[name]

    def put(self, id_: str, scope: str, text: str, vec: np.ndarray, h: str | None = None) -> None:
        self.all_ids.add(id_)
        old = self.scope_of.get(id_)
        if old is not None and old != scope:
            self.scopes[old].drop(id_)
        self.scope_of[id_] = scope
        self.scope(scope).put(id_, text, h or content_hash(text), vec)

    def drop(self, id_: str) -> None:
        self.all_ids.discard(id_)
        scope = self.scope_of.pop(id_, None)
        if scope is not None:
            self.scopes[scope].drop(id_)

    def refresh(self, table) -> None:
        """Bring the copy up to the table's latest version (see module docstring)."""
        version = table.version
        if version == self.version:
            return
        if not self.scope_of:
            self._load_all(table)
            self.version = version
            return
        current = table.search().with_row_id(True).select(["id"]).to_arrow()
        ids = current["id"].to_pylist()
        rowids = current["_rowid"].to_numpy().astype(np.uint64)
        self.all_ids = set(ids)
        for gone in set(self.scope_of) - self.all_ids:
            self.drop(gone)
        new = np.setdiff1d(rowids, self.rowids, assume_unique=True) if len(self.rowids) else rowids
        if len(new):
            self._load(table, new)
        self.rowids = np.sort(rowids)
        self.version = version

    def _load_all(self, table) -> None:
        data = table.search().with_row_id(True).select(FETCH).to_arrow()
        self.all_ids = set(data["id"].to_pylist())
        self._put_rows(data)
        self.rowids = np.sort(data["_rowid"].to_numpy().astype(np.uint64))

    def _put_rows(self, data) -> None:
        if data.num_rows == 0:
            return
        vecs, ok = _unit(data["vector"])
        ids = data["id"].to_pylist()
        scopes = data["scope"].to_pylist()
        texts = data["text"].to_pylist()
        fresh: dict[str, list[int]] = {}
        for i, (id_, scope, text) in enumerate(zip(ids, scopes, texts)):
            if id_ is None or text is None or not ok[i]:
                continue
            if id_ in self.scope_of:  # rewritten row: replace it
                self.put(id_, scope or "global", text, vecs[i])
            else:
                fresh.setdefault(scope or "global", []).append(i)
        for scope, rows in fresh.items():
            sel = [ids[i] for i in rows]
            self.scope(scope).put_many(sel, [texts[i] for i in rows], [content_hash(texts[i]) for i in rows],
                                       vecs[rows])
            for id_ in sel:
                self.scope_of[id_] = scope
                self.all_ids.add(id_)

    def _load(self, table, rowids: np.ndarray) -> None:
        step = 20_000
        for start in range(0, len(rowids), step):
            chunk = [int(r) for r in rowids[start:start + step]]
            self._put_rows(table.take_row_ids(chunk).select(FETCH).to_arrow())

    def mark_written(self, before: int | None, after: int) -> None:
        """Our own commit: if nobody else committed in between, the copy is already current."""
        if before is not None and self.version == before and after == before + 1:
            self.version = after
        else:
            self.version = None


_blas = None


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` with BLAS on one thread: waking OpenBLAS's thread pool costs more than it
    saves for these shapes, and on a busy machine costs 5-20 ms per call."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    with _blas.limit(limits=1, user_api="blas"):
        return a @ b.T


def _unit(column) -> tuple[np.ndarray, np.ndarray]:
    """Stored vectors as unit float32 rows plus a validity mask (null, zero or non-finite rows
    written elsewhere are never compared against)."""
    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    dim = arr.type.list_size
    n = len(arr)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    values = arr.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    if arr.offset:
        values = values[arr.offset * dim:]
    mat = np.nan_to_num(values[: n * dim].reshape(n, dim), nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(mat, axis=1)
    ok = valid & (norms > 0)
    mat = mat / np.where(ok, norms, 1.0)[:, None]
    return mat.astype(np.float32, copy=False), ok
