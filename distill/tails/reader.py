"""Reading the new tails: complete lines of a transcript from a byte offset, and one run's walk
over every file, the one implementation behind ``distill run`` and ``backfill --dry-run``.

:class:`TailReader` reads one file. A transcript may be gigabytes long and its last line may
still be being written, so:
- only complete lines (ending in ``\\n``) are handed out; an unterminated last line waits for
  the next run (except in an archive, which nobody appends to any more: see ``final``);
- a line longer than ``max_line`` is never held in memory nor waited on: the reader scans
  forward to its newline, counts it once, and moves on. If the file ends inside such a line,
  ``in_long_line`` says so, and the next read (``skip_first=True``) drops the rest of it;
- ``end`` is always a safe resume point: the offset just past the last line handed out
  (or skipped), so a consumer that stops early resumes exactly there.

:class:`TailWalk` reads every discovered file from its cursor entry: renames, archives,
truncation and rewrites, format detection, the per-agent message cap, and the turns of each
new range. The batch ledger (:mod:`distill.tails.ledger`) writes what it collected; a dry
run (``backfill --dry-run``) only counts it, so an estimate cannot drift from a real run.

A walk first visits every discovered file in order, settling its entry (new, renamed,
replaced) without reading content; then it reads them in that order, in this one process (a
forked second reader was measured and removed: see docs/tails.md "One reader").
"""

from __future__ import annotations

import itertools
import os
from collections import Counter, namedtuple
from collections.abc import Callable, Iterator
from pathlib import Path

from ..config import Settings
from ..errors import DistillError, MissingDependency
from ..model import TurnLimits
from .cursor import HEAD_BYTES, Cursor, FileEntry, SeenTurns, file_key, head_hash, new_entry, turn_digest

# Small enough that a block stays in a core's L2 cache while its lines are scanned (a 1 MiB
# block measured twice as slow to read on a 512 KiB-L2 machine); large enough that a read
# costs little per byte.
BLOCK_SIZE = 1 << 18

_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.isspace() counts as space

PARSER_ERRORS_SHOWN = 5  # a run names its first five parser errors; the counter has them all


class TailReader:
    """Iterate the complete lines of ``fd`` in ``[start, stop)``.

    ``lines()`` gives ``(line, start, end)``; ``spans()`` gives the same lines without copying
    them out of the block they were read in (most lines of a transcript are never decoded,
    so copying them would be most of the work). ``line`` excludes the newline; ``[start,
    end)`` includes it. Blank lines are skipped.
    """

    def __init__(self, fd: int, start: int, stop: int, *, max_line: int, skip_first: bool = False,
                 final: bool = False, block_size: int = BLOCK_SIZE):
        self.fd = fd
        self.start = start
        self.stop = stop
        self.max_line = max_line
        self.skip_first = skip_first
        self.final = final
        self.block_size = block_size
        self.end = start
        self.in_long_line = skip_first
        self.too_long = 0

    def lines(self) -> Iterator[tuple[bytes, int, int]]:
        for buf, s, e, start, end in self.spans():
            yield (buf if s == 0 and e == len(buf) else buf[s:e]), start, end

    def spans(self, keep: Callable[[bytes, int, int], bool] | None = None,
              ) -> Iterator[tuple[bytes, int, int, int, int]]:
        """``(buf, s, e, start, end)``: the line is ``buf[s:e]``, its file range ``[start, end)``.

        ``keep(buf, s, e)``: a bytes pre-test run here, on each line in its block; the lines it
        rejects are passed over (they still count as read), which spares handing out the bulk.

        ``buf`` is the block the line was read in: a consumer that keeps a line copies it out
        rather than hold the whole block. A line cut by the end of a block is read again from
        its start with the next block (growing the read up to ``max_line``), so every line is
        whole in one block and never pieced together."""
        off = self.start  # where the block starts in the file
        want = self.block_size
        skipping = self.skip_first
        max_line = self.max_line
        while off < self.stop:
            n = min(want, self.stop - off)
            chunk = os.pread(self.fd, n, off)
            if not chunk:
                break  # the file shrank under us: stop at what is safe
            last = len(chunk) < n or off + len(chunk) >= self.stop  # nothing to read after it
            p = 0
            if skipping:
                i = chunk.find(b"\n")
                if i < 0:
                    off += len(chunk)
                    self.end = off
                    want = self.block_size
                    continue
                skipping = False
                self.in_long_line = False
                p = i + 1
                self.end = off + p
            find = chunk.find
            i = find(b"\n", p)
            while i >= 0:
                s, p = p, i + 1
                self.end = off + p
                if i - s > max_line:
                    self.too_long += 1
                elif i > s and (chunk[s] not in _WHITESPACE or not chunk[s:i].isspace()) and (
                        keep is None or keep(chunk, s, i)):
                    yield chunk, s, i, off + s, self.end
                i = find(b"\n", p)
            rest = len(chunk) - p  # an incomplete line at the end of the block
            if rest == 0:
                off += len(chunk)
                want = self.block_size
            elif rest > max_line:  # too long already: skip to its newline
                self.too_long += 1
                skipping = True
                self.in_long_line = True
                off += len(chunk)
                self.end = off
                want = self.block_size
            elif last:
                if self.final:  # an archive: nobody will complete its last line
                    self.end = off + len(chunk)
                    if not chunk[p:].isspace() and (keep is None or keep(chunk, p, len(chunk))):
                        yield chunk, p, len(chunk), off + p, self.end
                break
            else:  # read it again from its start, further
                off += p
                want = max(self.block_size, min(2 * rest, max_line + 1))


# --- one run's walk over the files ---------------------------------------------------------

class TailWalk:
    """One run's walk over the files: reads the new tails and collects turns and ranges.

    It moves the cursor entries it holds (in memory; the ledger saves them) and marks each
    range it read pending on ``batch_id``. Files are only read; the one thing it writes is
    the digests of committed turns (``seen``), when a file is replaced, truncated or gone —
    :func:`dry_walks` gives it a ``seen`` that keeps those changes in memory.

    A walk on another cursor than the main one (backfill's) drops the turns the main cursor
    committed from the same file (``main_seen``): backfill reads a file up to where the main
    cursor stood when it first met it, which is all of it when the main cursor read it from
    byte 0, and those turns are stored already.
    """

    def __init__(self, settings: Settings, cursor: Cursor, batch_id: str,
                 read_limit: Callable[[str], int | None] | None = None, *, seen: SeenTurns | None = None):
        self.settings = settings
        self.cursor = cursor
        self.seen = seen if seen is not None else SeenTurns(cursor.path)
        main = settings.state.cursor
        self.main_seen = None if cursor.path.absolute() == main.absolute() else SeenTurns(main)
        self.batch_id = batch_id
        self.read_limit = read_limit
        self.counters: Counter = Counter()
        self.messages: dict[str, list[dict]] = {}  # per agent: BatchMessage fields (see _message)
        self.ranges: list[dict] = []  # FileRange fields
        self.released: list[str] = []
        self.errors: list[str] = []
        self.capped: set[str] = set()
        self.dirty = False
        self._by_path: dict[str, str] | None = None
        self.files_read: set[str] = set()  # keys of the files whose range it moved
        self.bytes = 0

    def walk(self, only_files: set[Path] | None = None,
             file_filter: Callable[[Path, os.stat_result], bool] | None = None) -> None:
        """Read the new tails of every discovered file (or of ``only_files``; ``file_filter``
        skips files it rejects), and settle the tracked files the walk did not find."""
        only_keys, only_paths = _only(only_files)
        found: set[str] = set()
        visits: list[_Visit] = []
        for sf in _walk(self.settings, only_files, self.counters, self.errors):
            key = sf.key
            if only_keys is not None and key not in only_keys:
                continue
            if file_filter is not None and not file_filter(Path(sf.path), sf.st):
                continue
            found.add(key)
            v = self.visit(key, sf.path, sf.agent, sf.format, sf.st)
            if v is not None:
                visits.append(v)
        for v in visits:
            self._run(v)
        if file_filter is None or only_paths is not None:  # a filtered walk cannot tell "gone"
            for key in [k for k in self.cursor.files if k not in found]:
                if only_paths is None or self.cursor.files[key]["path"] in only_paths:
                    self.missing(key)

    @property
    def files(self) -> int:
        return len(self.files_read)

    @property
    def turns(self) -> int:
        return sum(len(m) for m in self.messages.values())

    # one discovered file
    def visit(self, key: str, path: str, agent: str, fmt: str, st: os.stat_result) -> _Visit | None:
        """Settle the file's entry (new, renamed, replaced) and say what is left to do for it,
        without reading it: the reads come after every visit, on one core or more."""
        entry = self.cursor.files.get(key)
        moved = False
        counts: tuple[str, ...] = ()
        copy_from = None
        if entry is None:
            entry = new_entry(path, agent, None if fmt == "auto" else fmt)
            copy_from = self._replaces(key, entry, path)
            if copy_from is not None:
                counts = ("replaced",)
            self.cursor.files[key] = entry
            self.dirty = True
        elif entry["path"] != path:
            moved = True
            counts = ("renamed",)
            entry["path"], entry["agent"] = path, agent
            entry.pop("archived", None)
            self.dirty = True
        if entry["pending"]:
            return _Visit(key, entry, agent, moved, copy_from, (*counts, "files_waiting_on_pending"), False, 0)
        if entry["size"] == st.st_size and entry["mtime"] == st.st_mtime_ns:
            return _Visit(key, entry, agent, moved, copy_from, counts, False, 0) if counts else None
        return _Visit(key, entry, agent, moved, copy_from, counts, True, max(st.st_size - entry["offset"], 0))

    def _run(self, v: _Visit) -> None:
        """Finish a visit here, in its turn: what the sequential walk did right after it."""
        for name in v.counts:
            self.counters[name] += 1
        if v.copy_from is not None:
            self.seen.copy(v.copy_from, v.key)
        if v.read and v.agent not in self.capped:
            self.read(v.key, v.entry, final=False, moved=v.moved)

    def _replaces(self, key: str, entry: FileEntry, path: str) -> str | None:
        """A new inode at a tracked path: the file was rewritten by write-then-rename. Its turns
        already committed under the old inode are not distilled again: returns the old key,
        whose digests are copied before the file is read."""
        if self._by_path is None:
            self._by_path = {e["path"]: k for k, e in self.cursor.files.items()}
        old = self._by_path.get(path)
        if old is None or old == key:
            return None
        entry["rewritten"] = True
        return old

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
        except (FileNotFoundError, NotADirectoryError):
            self.counters["vanished"] += 1  # gone between the walk and the open: the next run settles it
            return
        except OSError as exc:
            self._unreadable(path, exc)
            return
        try:
            st = os.fstat(fd)
            if file_key(st) != key:
                return  # replaced between the walk and the open: next run sees it
            self._check_head(key, entry, fd, st.st_size, moved)
            if not entry.get("format") and not self._detect(entry, fd, st):
                return
            self._read_tail(key, entry, fd, st, final)
        except OSError as exc:  # EIO and the like: the entry moves only after a whole read
            self._unreadable(path, exc)
        finally:
            os.close(fd)

    def _unreadable(self, path: str, exc: OSError) -> None:
        """A file that is there but cannot be read: counted and named; its entry stays where it
        was (not taken for deleted), so it is read on from there once it can be."""
        from .discover import printable

        self.counters["file_unreadable"] += 1
        self.errors.append(f"{printable(path)} cannot be read ({exc.strerror or exc}): it was skipped this run; "
                           "fix its permissions (or the disk) and it is read on from where it was")

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
        from ..sources import detect_format

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
        from ..sources import get_format

        start = entry["offset"]
        stop = st.st_size
        limit = self.read_limit(key) if self.read_limit else None
        if limit is not None:
            stop = min(stop, limit)
        agent = entry["agent"]
        fmt = get_format(entry["format"])
        parser = fmt.new_parser(agent_id=agent, file=entry["path"], session_id=_session_id(entry["path"]),
                                counters=self.counters, limits=TurnLimits.from_settings(self.settings))
        if fmt.context_bytes and start > 0:
            parser.recall([line for line in _lines_before(fd, start, fmt.context_bytes) if fmt.could_yield(line)])
        reader = TailReader(fd, start, stop, max_line=self.settings.max_line_bytes,
                            skip_first=bool(entry.get("skip")), final=final)
        room = self.settings.max_messages_per_agent - len(self.messages.get(agent, ()))
        turns, cap = self._parse(entry["path"], fmt.could_yield_at, parser.feed, reader, room)
        capped = cap is not None
        end, too_long = cap if cap is not None else (reader.end, reader.too_long)
        try:
            turns += parser.finish()
        except ImportError as exc:
            raise _missing(entry["path"], exc) from exc
        except Exception as exc:
            self._parser_error(entry["path"], end, exc)
        if too_long:
            self.counters["lines_too_long"] += too_long
        skip = reader.in_long_line and not capped
        if entry.get("rewritten") and turns:
            turns = self._drop_seen(key, turns, self.seen)
        if self.main_seen is not None and turns:
            turns = self._drop_seen(key, turns, self.main_seen)
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
        self.files_read.add(key)
        self.bytes += end - start
        if not turns:
            entry["offset"], entry["skip"] = end, skip  # nothing to distill: done at once
            return
        entry["pending"] = {self.batch_id: [start, end, int(skip)]}
        self.ranges.append({"path": entry["path"], "dev": st.st_dev, "inode": st.st_ino, "start": start,
                            "end": end, "agentId": agent, "skipLine": skip})
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
            except ImportError as exc:  # the install, not the line: skipping would lose every line
                raise _missing(path, exc) from exc
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
        if self.counters["parser_error"] <= PARSER_ERRORS_SHOWN:
            self.errors.append(f"{path} at byte {offset}: the {type(exc).__name__} parser error "
                               f"'{exc}' skipped this line; please report it")

    def _drop_seen(self, key: str, turns: list, committed: SeenTurns) -> list:
        seen = committed.load(key)
        kept = [t for t in turns if turn_digest(t.role, t.text) not in seen]
        self.counters["turns_already_read"] += len(turns) - len(kept)
        return kept


def _lines_before(fd: int, start: int, size: int) -> list[bytes]:
    """The whole lines within ``size`` bytes before ``start`` (a line boundary)."""
    at = max(0, start - size)
    data = os.pread(fd, start - at, at)
    if at > 0:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    return [line for line in data.split(b"\n") if line.strip()]


def _missing(path: str, exc: ImportError) -> MissingDependency:
    return MissingDependency(
        f"reading {path} needs a package that cannot be imported: {exc}. Nothing was read or "
        f"moved; reinstall distill with its dependencies (pip install -e . in a checkout) and run again")


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


class _Visit(namedtuple("_Visit", "key entry agent moved copy_from counts read size")):
    """A discovered file as :meth:`TailWalk.visit` left it: what remains to do, in order.

    ``agent`` as discovered (the cap is checked on it, as before the split); ``copy_from``: a
    replaced file's old key, whose seen digests it inherits; ``counts``: the counters the visit
    raised, raised in its turn (keeps their order); ``size``: bytes to read, about.
    """

    __slots__ = ()


def dry_walks(settings: Settings, cursor: Cursor, *,
              file_filter: Callable[[Path, os.stat_result], bool] | None = None,
              read_limit: Callable[[str], int | None] | None = None) -> Iterator[TailWalk]:
    """The batches a run that distils and commits each one would cut, one walk per batch, with
    nothing written: each batch's ranges are committed in ``cursor`` (in memory: a throw-away
    copy, never saved) before the next walk, so the turns, bytes and chunks are the real run's,
    per-agent message cap included. ``backfill --dry-run`` estimates from it."""
    seen = _ReadOnlySeen(cursor.path)
    for n in itertools.count():
        walk = TailWalk(settings, cursor, f"dry-run-{n}", read_limit, seen=seen)
        walk.walk(None, file_filter)
        yield walk
        if not walk.turns:
            return
        for _key, entry in cursor.entries_pending_on(walk.batch_id):
            _start, end, skip = entry["pending"].pop(walk.batch_id)
            entry["offset"], entry["skip"] = end, bool(skip)
        digests: dict[str, list[bytes]] = {}
        for messages in walk.messages.values():
            for m in messages:
                digests.setdefault(m["id"].rsplit(":", 1)[0], []).append(turn_digest(m["role"], m["text"]))
        for key, ds in digests.items():
            seen.add(key, ds)


class _ReadOnlySeen(SeenTurns):
    """The digests of committed turns as a dry run sees them: read from disk, changed only in
    memory, so that it drops exactly the turns a real run would."""

    def __init__(self, cursor_path: Path):
        super().__init__(cursor_path)
        self._mine: dict[str, set[bytes]] = {}

    def load(self, key: str) -> set[bytes]:
        return self._mine[key] if key in self._mine else super().load(key)

    def add(self, key: str, digests: list[bytes]) -> None:
        self._mine[key] = self.load(key) | set(digests)

    def copy(self, src: str, dst: str) -> None:
        self._mine[dst] = self.load(dst) | self.load(src)

    def drop(self, key: str) -> None:
        self._mine[key] = set()
