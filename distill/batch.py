"""A batch: the new turns of a run, and exactly which byte ranges of which files they cover.

The keys of the script this replaces (``version``, ``createdAtMs``, ``agents[].agent_id``,
``agents[].messages[].{ts, role, text}``, ``touchedFiles``) are kept so that cron prompts
written for it keep working; provenance is added per message and per file range.

Life of a batch (every step under the state lock, so cron, the daemon and backfill never
interleave):

1. ``create_batch`` writes ``batches/<id>.json``, *then* marks its ranges pending in the
   cursor. A crash in between leaves an unreferenced file, which the next run moves to
   ``batches/aborted/``; its bytes are simply read again.
2. ``commit_batch`` moves the file to ``batches/done/``, *then* advances the cursor. A crash in
   between is finished by the next run or commit (a pending id whose file is in ``done/``).
3. ``abort_batch`` releases the ranges, *then* moves the file to ``batches/aborted/``.

Choices where the issue is silent: a file range that yields no turn at all (only noise,
tool output, headers) is committed at once, without a batch; if no file yields a turn, no
batch is written (``noop``). Files with a pending range wait; the others go on.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from .atomic import move, write_bytes
from .config import Settings
from .cursor import (HEAD_BYTES, Cursor, FileEntry, SeenTurns, file_key, head_hash, new_entry, now_ms,
                     turn_digest)
from .errors import DistillError
from .lock import FileLock
from .model import Batch, BatchProgress, BatchResult, FileRange, LastRun, RunSummary, TurnLimits, decode, to_builtins
from .tail import TailReader


# --- the state lock ---------------------------------------------------------------------

_held: dict[tuple[str, int], int] = {}


@contextmanager
def state_lock(settings: Settings) -> Iterator[None]:
    """Hold ``<state>/.lock``. Re-entrant within a thread, so a caller (the pipeline) may hold
    it around several of the functions here. Waits ``settings.state_lock_wait`` seconds, then
    raises LockBusy naming the holder's pid."""
    ident = (str(settings.lock_path), threading.get_ident())
    if _held.get(ident):
        _held[ident] += 1
        try:
            yield
        finally:
            _held[ident] -= 1
        return
    lock = FileLock(settings.lock_path, purpose="distill run / commit / init / backfill")
    lock.acquire(timeout=settings.state_lock_wait)
    _held[ident] = 1
    try:
        yield
    finally:
        _held.pop(ident, None)
        lock.release()


# --- paths --------------------------------------------------------------------------------

def _done_dir(settings: Settings) -> Path:
    return settings.batches_dir / "done"


def _aborted_dir(settings: Settings) -> Path:
    return settings.batches_dir / "aborted"


def _new_batch_id() -> str:
    # os.urandom, not `secrets`: importing that (hmac, random) costs more than a no-op run
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def load_batch(path: Path) -> Batch:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DistillError(f"batch file {path} does not exist") from None
    return decode(data, Batch, f"batch file {path} is not a distill batch: {{error}}")


def _cursor_path_of(settings: Settings, batch: Batch) -> Path:
    return Path(batch.cursor_path) if batch.cursor_path else settings.cursor_path.absolute()


def pending_batches(settings: Settings, cursor_path: Path | None = None) -> list[Path]:
    """Batch files whose ranges are pending in the cursor, oldest first (read-only, no lock)."""
    cursor = Cursor.load(Path(cursor_path or settings.cursor_path))
    out = []
    for bid in sorted(cursor.pending_batch_ids()):
        p = settings.batches_dir.absolute() / f"{bid}.json"
        if p.exists():
            out.append(p)
    return out


# --- create -------------------------------------------------------------------------------

class _Reader:
    """One run's walk over the files: reads the new tails and collects turns and ranges."""

    def __init__(self, settings: Settings, cursor: Cursor, batch_id: str,
                 read_limit: Callable[[str], int | None] | None):
        self.settings = settings
        self.cursor = cursor
        self.seen = SeenTurns(cursor.path)
        self.batch_id = batch_id
        self.read_limit = read_limit
        self.counters: Counter = Counter()
        self.messages: dict[str, list[dict]] = {}  # per agent: BatchMessage fields (see _message)
        self.ranges: list[FileRange] = []
        self.released: list[str] = []
        self.errors: list[str] = []
        self.capped: set[str] = set()
        self.dirty = False
        self._by_path: dict[str, str] | None = None
        self.files = 0
        self.bytes = 0

    # one discovered file
    def visit(self, key: str, path: str, agent: str, fmt: str, st: os.stat_result) -> None:
        entry = self.cursor.files.get(key)
        moved = False
        if entry is None:
            entry = new_entry(path, agent, None if fmt == "auto" else fmt)
            self._replaces(key, entry, path)
            self.cursor.files[key] = entry
            self.dirty = True
        elif entry["path"] != path:
            moved = True
            self.counters["renamed"] += 1
            entry["path"], entry["agent"] = path, agent
            entry.pop("archived", None)
            self.dirty = True
        if entry["pending"]:
            self.counters["files_waiting_on_pending"] += 1
            return
        if entry["size"] == st.st_size and entry["mtime"] == st.st_mtime_ns:
            return
        if agent in self.capped:
            return
        self.read(key, entry, final=False, moved=moved)

    def _replaces(self, key: str, entry: FileEntry, path: str) -> None:
        """A new inode at a tracked path: the file was rewritten by write-then-rename. Its turns
        already committed under the old inode are not distilled again."""
        if self._by_path is None:
            self._by_path = {e["path"]: k for k, e in self.cursor.files.items()}
        old = self._by_path.get(path)
        if old is None or old == key:
            return
        self.seen.copy(old, key)
        entry["rewritten"] = True
        self.counters["replaced"] += 1

    # a tracked file the walk did not find
    def missing(self, key: str) -> None:
        entry = self.cursor.files[key]
        path = entry["path"]
        st = _stat(path)
        if st is not None and file_key(st) == key:
            if entry.get("archived"):
                self._finish_archive(key, entry, st)
            return  # still there, only out of scope now (allow-list, source roots)
        from .discover import archive_of

        archive = None if entry.get("archived") else archive_of(path, key)
        if archive is None:
            if not _listable(os.path.dirname(path)):
                self.counters["folder_missing"] += 1  # an unmounted or unreadable root is not a deletion: keep it
                return
            self._forget(key, "deleted")
            return
        self.counters["archived"] += 1
        entry["path"], entry["archived"] = archive, True
        self.dirty = True
        st = _stat(archive)
        if st is not None:
            self._finish_archive(key, entry, st)

    def _finish_archive(self, key: str, entry: FileEntry, st: os.stat_result) -> None:
        if entry.get("pending"):
            return
        if entry["offset"] < st.st_size and entry["agent"] not in self.capped:
            self.read(key, entry, final=True, moved=False)
        if not entry.get("pending") and entry["offset"] >= st.st_size:
            self._forget(key, "archive_finished")

    def _forget(self, key: str, why: str) -> None:
        released = self.cursor.drop(key)
        self.seen.drop(key)
        self.counters[why] += 1
        self.released += released
        self.dirty = True

    def read(self, key: str, entry: FileEntry, *, final: bool, moved: bool) -> None:
        path = entry["path"]
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.counters["vanished"] += 1
            return
        try:
            st = os.fstat(fd)
            if file_key(st) != key:
                return  # replaced between the walk and the open: next run sees it
            self._check_head(key, entry, fd, st.st_size, moved)
            if not entry.get("format") and not self._detect(entry, fd, st):
                return
            self._read_tail(key, entry, fd, st, final)
        finally:
            os.close(fd)

    def _check_head(self, key: str, entry: FileEntry, fd: int, size: int, moved: bool) -> None:
        why = None
        if size < entry["offset"]:
            why = "truncated"
        elif entry.get("headLen") and head_hash(fd, entry["headLen"]) != entry.get("head"):
            why = "rewritten"
        if why is None:
            return
        self.counters[why] += 1
        self.dirty = True
        if moved:
            # a new file that got a freed inode: nothing was read from it
            self.seen.drop(key)
            fresh = new_entry(entry["path"], entry["agent"], entry.get("format"))
            entry.clear()
            entry.update(fresh)
            return
        entry.update(offset=0, skip=False, head="", headLen=0, size=-1, rewritten=True)

    def _detect(self, entry: FileEntry, fd: int, st: os.stat_result) -> bool:
        from .sources import detect_format

        head = os.pread(fd, min(st.st_size, 1 << 16), 0)
        nl = head.find(b"\n")
        if nl < 0 and st.st_size > len(head):  # a first line with an image, say: look further, once
            head = os.pread(fd, min(st.st_size, self.settings.max_line_bytes + 1), 0)
            nl = head.find(b"\n")
        if nl < 0:
            if len(head) > self.settings.max_line_bytes:
                self._unknown(entry, st, f"{entry['path']}: first line is longer than max_line_bytes; "
                              "set the format of its source root in config.toml")
            return False  # the first line is not complete yet: wait
        try:
            entry["format"] = detect_format(head[:nl], entry["path"]).name
        except DistillError as exc:
            self._unknown(entry, st, str(exc))
            return False
        self.dirty = True
        return True

    def _unknown(self, entry: FileEntry, st: os.stat_result, message: str) -> None:
        self.counters["unknown_format"] += 1
        self.errors.append(message)
        entry["size"], entry["mtime"] = st.st_size, st.st_mtime_ns  # retried when the file changes
        self.dirty = True

    def _read_tail(self, key: str, entry: FileEntry, fd: int, st: os.stat_result, final: bool) -> None:
        from .sources import get_format

        start = entry["offset"]
        stop = st.st_size
        limit = self.read_limit(key) if self.read_limit else None
        if limit is not None:
            stop = min(stop, limit)
        agent = entry["agent"]
        fmt = get_format(entry["format"])
        parser = fmt.new_parser(agent_id=agent, file=entry["path"], session_id=_session_id(entry["path"]),
                                counters=self.counters, limits=TurnLimits.from_settings(self.settings))
        reader = TailReader(fd, start, stop, max_line=self.settings.max_line_bytes,
                            skip_first=bool(entry.get("skip")), final=final)
        room = self.settings.max_messages_per_agent - len(self.messages.get(agent, ()))
        turns, cap = self._parse(entry["path"], fmt.could_yield_at, parser.feed, reader, room)
        capped = cap is not None
        end, too_long = cap if cap is not None else (reader.end, reader.too_long)
        try:
            turns += parser.finish()
        except Exception as exc:
            self._parser_error(entry["path"], end, exc)
        if too_long:
            self.counters["lines_too_long"] += too_long
        skip = reader.in_long_line and not capped
        if entry.get("rewritten") and turns:
            turns = self._drop_seen(key, turns)
        if capped:
            self.capped.add(agent)
            self.counters["agent_message_cap_reached"] += 1
        else:
            entry["size"], entry["mtime"] = (st.st_size, st.st_mtime_ns) if stop == st.st_size else (-1, 0)
        head_len = min(HEAD_BYTES, max(end, start))
        entry["head"], entry["headLen"] = head_hash(fd, head_len), head_len
        self.dirty = True
        if end == start and skip == bool(entry.get("skip")):
            return
        self.files += 1
        self.bytes += end - start
        if not turns:
            entry["offset"], entry["skip"] = end, skip  # nothing to distill: done at once
            return
        entry["pending"] = {self.batch_id: [start, end, int(skip)]}
        self.ranges.append(FileRange(path=entry["path"], dev=st.st_dev, inode=st.st_ino, start=start,
                                     end=end, agent_id=agent, skip_line=skip))
        mtime_ms = st.st_mtime_ns // 1_000_000
        out = self.messages.setdefault(agent, [])
        path = entry["path"]
        out += [_message(key, path, t, mtime_ms) for t in turns]
        bad = sum(1 for t in turns if t.ts and not 0 < t.ts <= MAX_TS_MS)
        if bad:
            self.counters["bad_timestamp"] += bad

    def _parse(self, path: str, could_yield_at: Callable, feed: Callable, reader: TailReader,
               room: int) -> tuple[list, tuple[int, int] | None]:
        """The turns of the reader's lines, and where they stop if ``room`` fills up: ``(end,
        lines skipped as too long before it)``, or None when every line was read.

        The bytes pre-test scans whole blocks first; the few lines it keeps are copied out and
        decoded a batch at a time, not one by one between scans (each block scan pushes the
        parser's code and data out of the CPU caches: interleaving measured 10-15% slower)."""
        turns: list = []
        held: list[tuple[bytes, int, int, int]] = []
        size = 0
        for buf, i, j, s, e in reader.spans(could_yield_at):
            held.append((buf if i == 0 and j == len(buf) else buf[i:j], s, e, reader.too_long))
            size += j - i
            if size >= _HELD_BYTES or len(held) >= _HELD_LINES:
                cap = self._feed(path, feed, held, turns, room)
                if cap is not None:
                    return turns, cap
                held, size = [], 0
        return turns, self._feed(path, feed, held, turns, room)

    def _feed(self, path: str, feed: Callable, held: list[tuple[bytes, int, int, int]], turns: list,
              room: int) -> tuple[int, int] | None:
        """Decode the held lines in order; ``(end, too_long)`` of the one that fills ``room``."""
        for line, s, e, too_long in held:
            try:
                got = feed(line, s, e)
            except Exception as exc:  # a parser bug must not stall every later run on this line
                self._parser_error(path, s, exc)
                continue
            if got:
                turns += got
                if len(turns) >= room:
                    return e, too_long
        return None

    def _parser_error(self, path: str, offset: int, exc: Exception) -> None:
        self.counters["parser_error"] += 1
        if self.counters["parser_error"] <= 5:
            self.errors.append(f"{path} at byte {offset}: the {type(exc).__name__} parser error "
                               f"'{exc}' skipped this line; please report it")

    def _drop_seen(self, key: str, turns: list) -> list:
        seen = self.seen.load(key)
        kept = [t for t in turns if turn_digest(t.role, t.text) not in seen]
        self.counters["turns_already_read"] += len(turns) - len(kept)
        return kept


def _message(key: str, path: str, t, mtime_ms: int) -> dict:
    """A ``BatchMessage`` as the plain dict it is written as, in its field order. Not a model:
    the turn is validated already, the batch file is validated when it is loaded, and building
    a model per turn was a tenth of a run."""
    ts = t.ts if 0 < t.ts <= MAX_TS_MS else mtime_ms  # 0, or outside int64 / year 1970-9999: unknown
    return {"id": f"{key}:{t.start}", "ts": ts, "role": t.role, "text": t.text,
            "sessionId": t.session_id, "file": path, "start": t.start, "end": t.end, "entryId": t.entry_id,
            "author": t.author}


# the last millisecond of year 9999: a later or negative timestamp is bad input, and beyond
# int64 it could not even be written to the batch file
MAX_TS_MS = 253_402_300_799_999

# how many pre-tested lines are held before they are decoded (memory stays flat: a few MiB)
_HELD_BYTES = 4 << 20
_HELD_LINES = 512


def _listable(folder: str) -> bool:
    try:
        with os.scandir(folder):
            return True
    except OSError:
        return False


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _session_id(path: str) -> str:
    name = os.path.basename(path)
    return name.split(".jsonl", 1)[0] if ".jsonl" in name else Path(name).stem


def create_batch(settings: Settings, *, only_files: set[Path] | None = None,
                 file_filter: Callable[[Path, os.stat_result], bool] | None = None,
                 cursor_path: Path | None = None,
                 read_limit: Callable[[str], int | None] | None = None) -> BatchResult:
    """Read every new complete line, write a batch of the turns, mark its ranges pending.

    ``only_files``: read just these transcripts (the daemon's per-session task).
    ``file_filter(path, stat)``: skip files it rejects (backfill's --agent/--since).
    ``cursor_path``: use another cursor file (backfill); the batch records it for ``commit``.
    ``read_limit(key)``: read a file (``"<dev>:<inode>"``) no further than this offset.
    """
    t0 = time.monotonic()
    cpath = Path(cursor_path or settings.cursor_path).absolute()
    with state_lock(settings):
        cursor = Cursor.load(cpath)
        reader = _Reader(settings, cursor, _new_batch_id(), read_limit)
        reader.released += _reconcile(settings, cursor, reader.counters)
        reader.dirty |= bool(reader.released) or reader.counters["commit_finished"] > 0
        only_keys, only_paths = _only(only_files)
        found: set[str] = set()
        for sf in _walk(settings, only_files, reader.counters, reader.errors):
            key = sf.key
            if only_keys is not None and key not in only_keys:
                continue
            if file_filter is not None and not file_filter(Path(sf.path), sf.st):
                continue
            found.add(key)
            reader.visit(key, sf.path, sf.agent, sf.format, sf.st)
        if file_filter is None or only_paths is not None:  # a filtered walk cannot tell "gone"
            for key in [k for k in cursor.files if k not in found]:
                if only_paths is None or cursor.files[key]["path"] in only_paths:
                    reader.missing(key)
        result = _finish(settings, cursor, reader, cpath, t0)
    _prune(settings)
    return result


def _walk(settings: Settings, only_files: set[Path] | None, counters: Counter, errors: list[str]) -> Iterator:
    """Just the named files when each one is plainly under a root; otherwise the whole walk."""
    from .discover import classify, discover

    if only_files is not None:
        picked = [classify(settings, p) for p in only_files if os.path.exists(p)]
        if all(picked):
            return iter(sorted(picked, key=lambda sf: sf.path))
    return discover(settings, counters, errors)


def _only(only_files: set[Path] | None) -> tuple[set[str] | None, set[str] | None]:
    if only_files is None:
        return None, None
    keys, paths = set(), set()
    for p in only_files:
        paths.add(os.path.abspath(p))
        st = _stat(str(p))
        if st is not None:
            keys.add(file_key(st))
    return keys, paths


def _finish(settings: Settings, cursor: Cursor, reader: _Reader, cpath: Path, t0: float) -> BatchResult:
    turns = sum(len(m) for m in reader.messages.values())
    batch_file = None
    if turns:
        batch = Batch(
            batch_id=reader.batch_id,
            created_at_ms=now_ms(),
            touched_files=[r.path for r in reader.ranges],
            ranges=reader.ranges,
            counters=dict(reader.counters),
            cursor_path=None if cpath == settings.cursor_path.absolute() else str(cpath),
        )
        data = to_builtins(batch)
        data["agents"] = [{"agentId": a, "messages": m} for a, m in sorted(reader.messages.items())]
        batch_file = settings.batches_dir.absolute() / f"{reader.batch_id}.json"
        try:
            import orjson  # here: a run with nothing new writes no batch and need not load it

            write_bytes(batch_file, orjson.dumps(data, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            raise DistillError(f"cannot write batch file {batch_file}: {exc}; nothing was marked pending, "
                               "fix the problem (disk space, permissions) and run again") from exc
    if reader.dirty:
        cursor.save()
    pending = [str(settings.batches_dir.absolute() / f"{b}.json") for b in sorted(cursor.pending_batch_ids())]
    action = "created" if batch_file else ("pending" if pending else "noop")
    summary = RunSummary(action=action, files=reader.files, bytes=reader.bytes, turns=turns,
                         seconds=time.monotonic() - t0, counters=dict(reader.counters))
    return BatchResult(action=action, batch_file=str(batch_file) if batch_file else None, batch_files=pending,
                       cursor_path=str(cpath), summary=summary, released=sorted(set(reader.released)),
                       errors=reader.errors)


# --- reconcile half-finished steps ----------------------------------------------------------

def _reconcile(settings: Settings, cursor: Cursor, counters: Counter) -> list[str]:
    """Finish a commit or abort that a crash interrupted; return the batch ids released."""
    released = []
    pending = cursor.pending_batch_ids()
    if not pending and not _has_json(settings.batches_dir):
        return released
    for bid in sorted(pending):
        if (settings.batches_dir / f"{bid}.json").exists():
            continue
        done = _done_dir(settings) / f"{bid}.json"
        if done.exists():
            _apply_commit(cursor, load_batch(done))
            counters["commit_finished"] += 1
        else:
            _release(cursor, bid)
            released.append(bid)
            counters["batch_file_gone"] += 1
    try:
        tops = [e for e in os.scandir(settings.batches_dir) if e.name.endswith(".json") and e.is_file()]
    except FileNotFoundError:
        tops = []
    for e in tops:
        bid = e.name[: -len(".json")]
        if bid in pending:
            continue
        try:
            batch = load_batch(Path(e.path))
        except DistillError:
            continue  # not ours to move
        if _cursor_path_of(settings, batch) == cursor.path:
            move(Path(e.path), _aborted_dir(settings) / e.name)  # created, never recorded: re-read
            counters["orphan_batches"] += 1
    return released


def _has_json(folder: Path) -> bool:
    try:
        return any(n.endswith(".json") for n in os.listdir(folder))
    except FileNotFoundError:
        return False


def _release(cursor: Cursor, batch_id: str) -> tuple[int, int]:
    """Forget a batch's pending ranges; (files, bytes) released."""
    files = nbytes = 0
    for _, entry in cursor.entries_pending_on(batch_id):
        start, end, _skip = entry["pending"].pop(batch_id)
        entry["size"] = -1  # read again next run
        files += 1
        nbytes += end - start
    return files, nbytes


def _apply_commit(cursor: Cursor, batch: Batch) -> tuple[int, int, list[str]]:
    """Advance the cursor over the batch's ranges still pending; (files, bytes, keys)."""
    files = nbytes = 0
    keys = []
    for r in batch.ranges:
        entry = cursor.files.get(r.key)
        pend = entry["pending"].pop(batch.batch_id, None) if entry else None
        if pend is None:
            continue
        entry["offset"], entry["skip"] = pend[1], bool(pend[2])
        files += 1
        nbytes += pend[1] - pend[0]
        keys.append(r.key)
    return files, nbytes, keys


# --- per-chunk progress ----------------------------------------------------------------------

def load_progress(batch_file: Path) -> BatchProgress | None:
    """A batch's chunk progress (``batches/<id>.chunks``), or None if it has none yet."""
    path = progress_path(batch_file)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode(data, BatchProgress, f"chunk progress {path} is damaged ({{error}}); delete it "
                  "to map the whole batch again (the store's dedup keeps memories single)")


def save_progress(progress: BatchProgress, batch_file: Path) -> None:
    write_bytes(progress_path(batch_file), msgspec.json.encode(progress))


def progress_path(batch_file: Path) -> Path:
    return Path(batch_file).with_suffix(".chunks")


def commit_partial(settings: Settings, batch_file: Path, holds: dict[str, int]) -> RunSummary:
    """Commit a batch except where set-aside chunks hold it.

    A cursor is an offset, not a set of ranges, so a file with a held turn advances only to
    that turn's first byte and keeps its pending range from there (the file waits, as with any
    pending batch); every other file of the batch is committed in full. Idempotent."""
    if not holds:
        return commit_batch(settings, batch_file)
    t0 = time.monotonic()
    with state_lock(settings):
        batch, where = _locate(settings, batch_file)
        if where != "pending":
            raise DistillError(f"batch {batch.batch_id} is {where}; a partial commit needs a pending batch")
        cursor = Cursor.load(_cursor_path_of(settings, batch))
        files = nbytes = 0
        for r in batch.ranges:
            entry = cursor.files.get(r.key)
            pend = entry["pending"].get(batch.batch_id) if entry else None
            if pend is None:
                continue
            if r.key in holds:
                stop = max(pend[0], min(holds[r.key], pend[1]))
                if stop == pend[0]:
                    continue
                nbytes += stop - pend[0]
                entry["offset"], entry["skip"] = stop, False  # a turn starts a line
                pend[0] = stop
            else:
                entry["pending"].pop(batch.batch_id)
                entry["offset"], entry["skip"] = pend[1], bool(pend[2])
                nbytes += pend[1] - pend[0]
            files += 1
        if files:
            cursor.save()
    return RunSummary(action="partial", files=files, bytes=nbytes, seconds=time.monotonic() - t0)


# --- commit / abort -------------------------------------------------------------------------

def _locate(settings: Settings, batch_file: Path) -> tuple[Batch, str]:
    """Find a batch wherever its life has taken it: ("pending" | "done" | "aborted", batch)."""
    path = Path(batch_file)
    candidates = [path]
    name = path.name if path.suffix == ".json" else f"{path.name}.json"
    candidates += [settings.batches_dir / name, _done_dir(settings) / name, _aborted_dir(settings) / name]
    for p in candidates:
        if p.is_file():
            batch = load_batch(p)
            for where, folder in (("done", _done_dir(settings)), ("aborted", _aborted_dir(settings))):
                if (folder / f"{batch.batch_id}.json").exists():
                    return batch, where
            return batch, "pending"
    raise DistillError(f"batch file {batch_file} does not exist (nor under {settings.batches_dir})")


def commit_batch(settings: Settings, batch_file: Path) -> RunSummary:
    """Mark a batch's ranges committed: its memories are stored. Idempotent."""
    t0 = time.monotonic()
    with state_lock(settings):
        batch, where = _locate(settings, batch_file)
        cursor = Cursor.load(_cursor_path_of(settings, batch))
        if where == "aborted":
            raise DistillError(
                f"batch {batch.batch_id} was aborted (or never recorded), so its ranges were released and "
                "will be read again by the next `distill run`; it cannot be committed"
            )
        if where == "pending":
            if batch.batch_id not in cursor.pending_batch_ids():
                move(settings.batches_dir / f"{batch.batch_id}.json", _aborted_dir(settings) / f"{batch.batch_id}.json")
                raise DistillError(
                    f"batch {batch.batch_id} is not pending in {cursor.path}: either a run crashed before "
                    "recording it (its bytes will be read again by `distill run`), or its transcript was "
                    "deleted and the range released; nothing to commit, it was moved to batches/aborted/"
                )
            progress = load_progress(settings.batches_dir / f"{batch.batch_id}.json")
            held = progress.with_status("failed") if progress else {}
            if held:
                raise DistillError(
                    f"batch {batch.batch_id} has {len(held)} set-aside chunk(s) whose memories are not stored "
                    f"(see `distill status`): run `distill retry` to try them again, or `distill retry --drop` "
                    "to give them up, which commits the batch")
            move(settings.batches_dir / f"{batch.batch_id}.json", _done_dir(settings) / f"{batch.batch_id}.json")
        progress_path(settings.batches_dir / f"{batch.batch_id}.json").unlink(missing_ok=True)
        files, nbytes, keys = _apply_commit(cursor, batch)
        if keys:
            cursor.save()
            _remember_turns(SeenTurns(cursor.path), batch, set(keys))
    turns = sum(len(a.messages) for a in batch.agents)
    return RunSummary(action="committed", files=files, bytes=nbytes, turns=turns if keys else 0,
                      seconds=time.monotonic() - t0)


def _remember_turns(seen: SeenTurns, batch: Batch, keys: set[str]) -> None:
    by_key: dict[str, list[bytes]] = {}
    for agent in batch.agents:
        for m in agent.messages:
            key = m.id.rsplit(":", 1)[0]
            if key in keys:
                by_key.setdefault(key, []).append(turn_digest(m.role, m.text))
    for key, digests in by_key.items():
        seen.add(key, digests)


def abort_batch(settings: Settings, batch_file: Path) -> RunSummary:
    """Release a batch's pending ranges: the next run reads those bytes again."""
    t0 = time.monotonic()
    with state_lock(settings):
        batch, where = _locate(settings, batch_file)
        if where == "done":
            raise DistillError(f"batch {batch.batch_id} is already committed; it cannot be aborted")
        files = nbytes = 0
        if where == "pending":
            cursor = Cursor.load(_cursor_path_of(settings, batch))
            files, nbytes = _release(cursor, batch.batch_id)
            if files:
                cursor.save()
            move(settings.batches_dir / f"{batch.batch_id}.json", _aborted_dir(settings) / f"{batch.batch_id}.json")
            progress_path(settings.batches_dir / f"{batch.batch_id}.json").unlink(missing_ok=True)
    return RunSummary(action="aborted", files=files, bytes=nbytes, seconds=time.monotonic() - t0)


# --- housekeeping -------------------------------------------------------------------------

def record_last_run(settings: Settings, summary: RunSummary, batch_file: str | None = None) -> None:
    """What `distill status` shows as the last run; recorded once, by whoever ran it: the
    ``run`` command for a batch it cut, :func:`distill.pipeline.run_distill` for its total.

    Informational only, so not fsynced: a no-op run stays cheap."""
    last = LastRun(at_ms=now_ms(), action=summary.action, batch_file=batch_file, summary=summary)
    write_bytes(settings.state_dir / "last-run.json", msgspec.json.encode(last), durable=False)


def _prune(settings: Settings) -> None:
    """Drop committed and aborted batch files older than ``batch_retention_days``, and chunk
    progress whose batch is gone (a batch released because its transcript was deleted)."""
    cutoff = time.time() - settings.batch_retention_days * 86400
    try:
        leftovers = [e for e in os.scandir(settings.batches_dir) if e.name.endswith(".chunks")]
    except FileNotFoundError:
        leftovers = []
    for e in leftovers:
        if not os.path.exists(e.path[: -len(".chunks")] + ".json"):
            try:
                os.unlink(e.path)
            except OSError:
                pass
    for folder in (_done_dir(settings), _aborted_dir(settings)):
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for e in entries:
            try:
                if e.name.endswith(".json") and e.stat().st_mtime < cutoff:
                    os.unlink(e.path)
            except OSError:
                pass
