"""Per-file read positions: which bytes of which transcript are committed, pending, or new.

A file is known by ``"<dev>:<inode>"``, so a rename keeps its entry. An entry remembers:

- ``path``, ``agent``, ``format``: where it was last seen, whose it is, how to parse it;
- ``offset``: committed — every byte before it is distilled and stored (or held nothing);
- ``pending``: ``{batchId: [start, end, skip]}`` — handed to a batch, not yet committed
  (a file with a pending range waits; ``skip`` = the range ends inside an over-long line);
- ``skip``: the committed offset lies inside an over-long line whose rest is to be skipped;
- ``head`` / ``headLen``: a hash of the file's first ``headLen`` bytes, to notice a file
  rewritten in place (same inode, different content);
- ``size`` / ``mtime``: the stat at which every complete line had been read. If the stat is
  unchanged, the file is skipped without being opened: a no-op run is stat-only;
- ``rewritten``: the file shrank or its head changed and is being re-read from 0; turns whose
  digest is in its *seen* set (see :class:`SeenTurns`) are not distilled a second time;
- ``archived``: the file was renamed to a ``.reset.`` / ``.deleted.`` archive; its unread tail
  is finished from there and then the entry is dropped.

Entries are plain dicts (a 10,000-file cursor must load in a few milliseconds, which a
validating model cannot do); :meth:`Cursor.load` checks the shape and names the file when
it is wrong. It is read and written with orjson; writes go through :mod:`distill.atomic`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, TypedDict

from ..atomic import write_bytes
from ..errors import DistillError, SchemaMismatch
from .state import seen_dir

CURSOR_VERSION = 2
HEAD_BYTES = 4096
# How to start a cursor over, as a damaged cursor's message says it: the main cursor's by
# default; backfill's own cursor passes its own (see distill.tails.ledger.load_cursor).
RESTART = "run `distill init` (start from now) or `distill run` (read everything)"


class FileEntry(TypedDict, total=False):
    path: str
    agent: str
    format: str | None
    offset: int
    skip: bool
    pending: dict[str, list[int]]
    head: str
    headLen: int
    size: int
    mtime: int
    rewritten: bool
    archived: bool


def file_key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def now_ms() -> int:
    return int(time.time() * 1000)


def head_hash(fd: int, length: int) -> str:
    """Hash of the first ``length`` bytes; a different value means the file was rewritten."""
    from hashlib import blake2b  # here and in turn_digest: a no-op run hashes nothing

    return blake2b(os.pread(fd, length, 0), digest_size=12).hexdigest() if length else ""


def new_entry(path: str, agent: str, fmt: str | None) -> FileEntry:
    return {"path": path, "agent": agent, "format": fmt, "offset": 0, "pending": {},
            "head": "", "headLen": 0, "size": -1, "mtime": 0}


class Cursor:
    """The cursor file in memory. Only the holder of the state lock may :meth:`save` it."""

    def __init__(self, path: Path, files: dict[str, FileEntry] | None = None,
                 created_ms: int | None = None):
        self.path = Path(path)
        self.files: dict[str, FileEntry] = files if files is not None else {}
        self.created_ms = created_ms or now_ms()

    @classmethod
    def load(cls, path: Path, *, restart: str = RESTART) -> "Cursor":
        """``restart``: how to start this cursor over, which a damaged cursor's message tells
        after "move it away and" (a command and what it does)."""
        import orjson  # here: a no-op run reads no cursor (distill.tails.ledger) and imports no orjson

        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise SchemaMismatch(f"cannot read cursor {path}: {exc}") from exc
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise SchemaMismatch(
                f"cursor {path} is not valid JSON ({exc}); restore it from a backup, or move it "
                f"away and {restart}"
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
            raise SchemaMismatch(f"cursor {path} has no 'files' object; it was not written by distill")
        if _is_legacy(data):
            return cls(path, migrate_legacy(data["files"]), data.get("createdAtMs"))
        if data.get("version") != CURSOR_VERSION:
            raise SchemaMismatch(
                f"cursor {path} has version {data.get('version')!r}, this distill reads version "
                f"{CURSOR_VERSION}; move it away and {restart}"
            )
        files = data["files"]
        none = type(None)
        for key, entry in files.items():
            # the common case in one expression (a 10,000-entry cursor: ~5 ms); entry_problem says what is wrong
            try:
                if (type(entry["path"]) is str and type(entry["agent"]) is str and type(entry["offset"]) is int
                        and entry["offset"] >= 0 and type(entry["size"]) is int and entry["size"] >= -1
                        and type(entry["mtime"]) is int and type(entry.get("headLen", 0)) is int
                        and 0 <= entry.get("headLen", 0) <= HEAD_BYTES and type(entry.get("head", "")) is str
                        and type(entry.get("format")) in (str, none) and type(entry.get("skip", 0)) in (bool, int)
                        and entry.get("skip", 0) in (0, 1) and "rewritten" not in entry and "archived" not in entry
                        and type(entry["pending"]) is dict and (not entry["pending"] or _ranges_ok(entry["pending"]))):
                    continue
            except (KeyError, TypeError):
                pass
            problem = entry_problem(entry)
            if problem is not None:
                raise SchemaMismatch(
                    f"cursor {path}: entry {key!r} is malformed: {problem}. Fix that field by hand, or delete "
                    f"the entry {key!r} from \"files\" (its transcript is then read again from the start; the "
                    "store's deduplication skips what it already holds); nothing was read or written"
                )
        return cls(path, files, data.get("createdAtMs"))

    def save(self) -> None:
        import orjson

        data: dict[str, Any] = {
            "version": CURSOR_VERSION,
            "createdAtMs": self.created_ms,
            "updatedAtMs": now_ms(),
            "files": self.files,
        }
        try:
            write_bytes(self.path, orjson.dumps(data) + b"\n")
        except OSError as exc:
            raise DistillError(f"cannot write cursor {self.path}: {exc}; the previous cursor is intact, "
                               "fix the problem (disk space, permissions) and run the command again") from exc

    def pending_batch_ids(self) -> set[str]:
        return {bid for e in self.files.values() if e["pending"] for bid in e["pending"]}

    def entries_pending_on(self, batch_id: str) -> list[tuple[str, FileEntry]]:
        return [(k, e) for k, e in self.files.items() if batch_id in (e.get("pending") or ())]

    def drop(self, key: str) -> list[str]:
        """Forget a file; returns the batch ids whose pending range on it is released."""
        entry = self.files.pop(key, None)
        return sorted((entry or {}).get("pending") or ())


_FLAGS = ("skip", "rewritten", "archived")


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one cursor entry (the field and what it must be), or None.

    Every field the read side uses is checked when the cursor is loaded: a wrong one would
    otherwise surface as a traceback deep in a run (or a read from a negative offset).
    :meth:`Cursor.load` checks the common case in one expression and asks here only for
    the message; the two must accept the same entries."""
    if type(entry) is not dict:
        return f"it is {_kind(entry)}, not an object"
    get = entry.get
    for name in ("path", "agent"):
        if type(get(name)) is not str:
            return _field(entry, name, "a string")
    offset, size, head_len = get("offset"), get("size"), get("headLen", 0)
    if type(offset) is not int or offset < 0:
        return _field(entry, "offset", "a byte offset (an integer >= 0)")
    if type(size) is not int or size < -1:
        return _field(entry, "size", "a file size in bytes (an integer >= 0, or -1)")
    if type(get("mtime")) is not int:
        return _field(entry, "mtime", "a modification time in ns (an integer)")
    if type(head_len) is not int or not 0 <= head_len <= HEAD_BYTES:
        return _field(entry, "headLen", f"a length of 0 to {HEAD_BYTES} bytes")
    if type(get("head", "")) is not str:
        return _field(entry, "head", "a hash (a string)")
    if type(get("format")) not in (str, type(None)):
        return _field(entry, "format", "a format name (a string) or null")
    bad = _bad_flag(entry)
    if bad:
        return _field(entry, bad, "true or false")
    pending = get("pending")
    if type(pending) is not dict:
        return _field(entry, "pending", "an object {batchId: [start, end, skip]}")
    for bid, r in pending.items():
        if not _ranges_ok({bid: r}):
            return (f"field 'pending' of batch {bid!r} is {_show(r)}: expected [start, end, skip] "
                    "with 0 <= start <= end and skip 0 or 1")
    return None


def _ranges_ok(pending: dict) -> bool:
    for r in pending.values():
        if not (type(r) is list and len(r) == 3 and type(r[0]) is int and type(r[1]) is int
                and 0 <= r[0] <= r[1] and type(r[2]) in (bool, int) and r[2] in (0, 1)):
            return False
    return True


def _bad_flag(entry: dict) -> str | None:
    return next((f for f in _FLAGS if f in entry and not (type(entry[f]) in (bool, int) and entry[f] in (0, 1))), None)


def _field(entry: dict, name: str, expected: str) -> str:
    if name not in entry:
        return f"field {name!r} is missing (expected {expected})"
    return f"field {name!r} is {_show(entry[name])} (expected {expected})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", type(None): "null"}.get(type(value), _show(value))


def _is_legacy(data: dict) -> bool:
    """A cursor written by memory-lancedb-pro's ``jsonl_distill.py`` (same default state dir)."""
    files = data["files"]
    return data.get("version") == 1 and all(isinstance(e, dict) and "committed" in e and "offset" not in e
                                            for e in files.values())


def migrate_legacy(files: dict[str, Any]) -> dict[str, FileEntry]:
    """Carry over ``jsonl_distill.py``'s committed offsets (keyed by path + inode) to entries keyed
    by device + inode. Its pending batches are dropped: their bytes are simply read again. A file
    that is gone or has another inode now is not carried over."""
    out: dict[str, FileEntry] = {}
    for path, e in files.items():
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_ino != e.get("inode") or not isinstance(e.get("committed"), int):
            continue
        entry = new_entry(path, str(e.get("agentId") or ""), "openclaw")
        entry["offset"] = min(e["committed"], st.st_size)
        out[file_key(st)] = entry
    return out


def turn_digest(role: str, text: str) -> bytes:
    from hashlib import blake2b

    return blake2b(f"{role}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8).digest()


class SeenTurns:
    """Digests of the turns committed from each file, kept beside the cursor.

    Only read when a file is re-read after being truncated or rewritten in place: a turn whose
    (role, text) digest was committed before is not distilled again. Kept out of the cursor so
    the cursor stays small; losing one of these files can only cause a re-distillation, which
    the store's deduplication absorbs, never a loss.
    """

    def __init__(self, cursor_path: Path):
        self.dir = seen_dir(cursor_path)

    def _file(self, key: str) -> Path:
        return self.dir / (key.replace(":", "-") + ".bin")

    def load(self, key: str) -> set[bytes]:
        try:
            raw = self._file(key).read_bytes()
        except FileNotFoundError:
            return set()
        return {raw[i:i + 8] for i in range(0, len(raw) - len(raw) % 8, 8)}

    def add(self, key: str, digests: list[bytes]) -> None:
        if not digests:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self._file(key), "ab") as f:
            f.write(b"".join(digests))

    def copy(self, src: str, dst: str) -> None:
        try:
            raw = self._file(src).read_bytes()
        except FileNotFoundError:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self._file(dst), "ab") as f:
            f.write(raw)

    def drop(self, key: str) -> None:
        try:
            self._file(key).unlink()
        except FileNotFoundError:
            pass
