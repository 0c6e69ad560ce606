"""The batch ledger: the files and the cursor under each step of a batch's life. A batch: the
new turns of a run, and exactly which byte ranges of which files they cover. Reading them is
:mod:`distill.tails.reader`'s; the life itself (which step follows which, what the pipeline
calls) is drawn and driven in :mod:`distill.tails.life`. Here, under the state lock: create,
reconcile, commit (whole or partial), abort, pending, prune, and the last-run record. Paths
come from :mod:`distill.tails.state`.

The keys of the script this replaces (``version``, ``createdAtMs``, ``agents[].agent_id``,
``agents[].messages[].{ts, role, text}``, ``touchedFiles``) are kept so that cron prompts
written for it keep working; provenance is added per message and per file range.

Every step is under the state lock, so cron, the daemon and backfill never interleave:

1. ``create_batch`` writes ``batches/<id>.json``, *then* marks its ranges pending in the
   cursor. A crash in between leaves an unreferenced file, which the next run moves to
   ``batches/aborted/``; its bytes are simply read again.
2. ``commit_batch`` moves the file to ``batches/done/``, *then* advances the cursor. A crash in
   between is finished by the next run or commit (a pending id whose file is in ``done/``).
3. ``abort_batch`` releases the ranges, *then* moves the file to ``batches/aborted/``.

A batch named by a person (``--batch-file F``) is found by :func:`locate_batch`, which
refuses one this state dir does not hold before anything is locked, moved or written.

Choices where the issue is silent: a file range that yields no turn at all (only noise,
tool output, headers) is committed at once, without a batch; if no file yields a turn, no
batch is written (``noop``). Files with a pending range wait; the others go on.
"""

from __future__ import annotations

import marshal
import os
import time
import zlib
from collections import Counter
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from threading import get_ident
from typing import TYPE_CHECKING

import msgspec

from ..atomic import move, write_bytes
from ..config import Settings
from ..errors import DistillError, SchemaMismatch
from ..lock import FileLock
from ..model import BATCH_VERSION, Batch, BatchProgress, BatchResult, LastRun, RunSummary, decode, encode_json
from . import noopcheck
from .cursor import Cursor, SeenTurns, now_ms, turn_digest
from .discover import Looked, SessionFile, discover, replaying
from .state import check_file, chunks_file, noop_file

if TYPE_CHECKING:
    from .reader import TailWalk


# --- the state lock ---------------------------------------------------------------------

_held: dict[tuple[str, int], int] = {}


class state_lock:
    """``with state_lock(settings):`` holds ``<state>/.lock``. Re-entrant within a thread, so a
    caller (the pipeline) may hold it around several of the functions here. Waits
    ``settings.state_lock_wait`` seconds, then raises LockBusy naming the holder's pid."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._ident = (str(settings.state.lock), get_ident())
        self._lock: FileLock | None = None

    def __enter__(self) -> None:
        if _held.get(self._ident):
            _held[self._ident] += 1
            return
        lock = FileLock(self._settings.state.lock, purpose="distill run / commit / init / backfill")
        lock.acquire(timeout=self._settings.state_lock_wait)
        self._lock = lock
        _held[self._ident] = 1

    def __exit__(self, *exc: object) -> None:
        if self._lock is None:
            _held[self._ident] -= 1
            return
        _held.pop(self._ident, None)
        self._lock.release()


def _new_batch_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def load_batch(path: Path) -> Batch:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DistillError(f"batch file {path} does not exist") from None
    except OSError as exc:
        raise SchemaMismatch(f"cannot read batch file {path}: {exc.strerror}; {_RELEASE.format(path=path)}") from exc
    return decode(data, Batch, f"batch file {path} is not a distill batch: {{error}}; {_RELEASE.format(path=path)}")


_IF_PENDING = "if it is a pending batch"
_RELEASE = _IF_PENDING + (", `distill abort --batch-file {path}` releases its ranges "
                          "(the next run reads those bytes again)")


def unreadable_pending(settings: Settings, cursor: Cursor, *, thorough: bool = True,
                       skip: str | None = None) -> list[str]:
    """A warning for each batch pending in ``cursor`` (but ``skip``) whose file is there but
    cannot be read as a batch: its transcripts wait on it until it is aborted (a missing one is
    released by the next run, see :func:`_reconcile`). Not ``thorough`` (every ``run``): only
    whether the file is one whole JSON object, from its first and last bytes, so a run neither
    decodes every pending batch nor loads the batch model; ``status`` and the distiller read
    them whole."""
    out = []
    for bid in sorted(cursor.pending_batch_ids()):
        path = settings.state.batch(bid).absolute()
        if bid == skip or not path.exists():
            continue
        try:
            if thorough:
                load_batch(path)
            elif not _whole_object(path):
                raise SchemaMismatch(f"batch file {path} is not one whole JSON object (cut short or overwritten); "
                                     f"{_RELEASE.format(path=path)}")
        except DistillError as exc:
            n = len(cursor.entries_pending_on(bid))
            out.append(f"pending batch {bid} is unreadable, {n} file(s) wait on it: {exc}")
    return out


def _whole_object(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64))
            tail = f.read(64)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and tail.rstrip().endswith(b"}")


def _cursor_pending_on(settings: Settings, batch_id: str) -> Cursor | None:
    """The cursor (the main one, or backfill's) in which ``batch_id`` is pending, if any."""
    for path in (settings.state.cursor.absolute(), settings.state.backfill_cursor.absolute()):
        cursor = load_cursor(settings, path)
        if batch_id in cursor.pending_batch_ids():
            return cursor
    return None


BACKFILL_RESTART = ("run `distill backfill` again (this is backfill's own cursor, not the main one: backfill "
                    "then reads the history up to the main cursor again, and the store's dedup keeps "
                    "memories single)")


def load_cursor(settings: Settings, path: Path) -> Cursor:
    """The cursor at ``path``. A damaged one's message says how to start *this* cursor over:
    backfill's own by running backfill again (``distill init`` would mark the main tails read
    and lose backfill's history), the main one by ``distill init`` or ``distill run``."""
    path = Path(path)
    if path.absolute() == settings.state.backfill_cursor.absolute():
        return Cursor.load(path, restart=BACKFILL_RESTART)
    return Cursor.load(path)


def _cursor_path_of(settings: Settings, batch: Batch) -> Path:
    return Path(batch.cursor_path) if batch.cursor_path else settings.state.cursor.absolute()


def pending_batches(settings: Settings, cursor_path: Path | None = None) -> list[Path]:
    """Batch files whose ranges are pending in the cursor, oldest first (read-only, no lock)."""
    cursor = load_cursor(settings, Path(cursor_path or settings.state.cursor))
    out = []
    for bid in sorted(cursor.pending_batch_ids()):
        p = settings.state.batch(bid).absolute()
        if p.exists():
            out.append(p)
    return out


# --- create -------------------------------------------------------------------------------

def create_batch(settings: Settings, *, only_files: set[Path] | None = None,
                 file_filter: Callable[[Path, os.stat_result], bool] | None = None,
                 cursor_path: Path | None = None,
                 read_limit: Callable[[str], int | None] | None = None,
                 printed: Callable[[BatchResult], tuple[str, str]] | None = None) -> BatchResult:
    """Read every new complete line, write a batch of the turns, mark its ranges pending.

    ``only_files``: read just these transcripts (the daemon's per-session task).
    ``file_filter(path, stat)``: skip files it rejects (backfill's --agent/--since).
    ``cursor_path``: use another cursor file (backfill); the batch records it for ``commit``.
    ``read_limit(key)``: read a file (``"<dev>:<inode>"``) no further than this offset.
    ``printed(result)``: what ``distill run`` prints for a result, as text and as JSON (the CLI's
    own output), so that a run that finds nothing lets the no-op check answer the next one.
    """
    t0 = time.monotonic()
    cpath = Path(cursor_path or settings.state.cursor).absolute()
    plain = only_files is None and file_filter is None and read_limit is None and cursor_path is None
    with state_lock(settings):
        discovered = _discovered(settings) if plain else None
        found, seen = discovered if discovered is not None else (None, None)
        files = _listing(settings, found) if found is not None else None
        if files is not None and _noop_unchanged(settings, cpath, files):
            result = BatchResult(action="noop", cursor_path=str(cpath),
                                 summary=RunSummary(action="noop", seconds=time.monotonic() - t0))
            _remember_check(settings, cpath, seen, result, printed)
        else:
            from .reader import TailWalk  # here: a run the no-op answers reads nothing

            cursor = load_cursor(settings, cpath)
            walk = TailWalk(settings, cursor, _new_batch_id(), read_limit)
            walk.released += _reconcile(settings, cursor, walk.counters)
            walk.dirty |= bool(walk.released) or walk.counters["commit_finished"] > 0
            with replaying(settings, found):  # the walk lists what was just listed, not again
                walk.walk(only_files, file_filter)
            result = _finish(settings, cursor, walk, cpath, t0)
            if files is not None:
                _remember_noop(settings, cpath, files, result, seen, printed)
            elif plain:  # discovery had something to report: no check answers the next run
                _remember_check(settings, cpath, None, result, printed)
    _prune(settings)
    return result


# --- the no-op that reads no cursor -----------------------------------------------------
# A walk's outcome depends only on each file's stat (it opens no file whose size and mtime
# match its cursor entry), the cursor, the batch folder and the settings. After a walk that
# found nothing, with nothing pending and nothing to report, all four are kept in
# ``<cursor stem>.noop`` (the listing itself, the settings as a digest); while discovery, the
# cursor file's stat (every save is a new inode), the batch folder's mtime and the settings
# give the same bytes, the next run is the same no-op without decoding the cursor (a third
# of a no-op run over 10,000 files). Anything else (a new, grown, renamed, truncated or
# vanished file; a commit, abort, init or a crash left in batches/) changes them and the
# full walk runs.

_NOOP_VERSION = b"3"


def _discovered(settings: Settings) -> tuple[list[SessionFile], list[Looked | None]] | None:
    """What discovery finds and the folders it looked at, or None if it had something to report
    (a missing root, an unreadable folder): then the walk discovers again and reports it, and
    no digest is kept."""
    counters: Counter = Counter()
    errors: list[str] = []
    seen: list[Looked | None] = []
    found = list(discover(settings, counters, errors, seen))
    return None if counters or errors else (found, seen)


def _listing(settings: Settings, found: list[SessionFile]) -> bytes:
    """Each file's path, inode, size and mtime (its owner and format follow from its path and
    the settings), and the settings' CRC-32 (their repr holds API keys; a checksum will do:
    with every file as the cursor left it, a walk reads nothing whatever the settings say, so
    they are only a second guard). The listing is kept whole, not hashed: comparing ~1 MB with
    the last run's copy costs far less than hashing it (hashlib's import and blake2b over the
    listing were a tenth of a no-op over 10,000 files). The numbers go in as ``marshal`` bytes
    (version 2: no back-references), not as text: formatting 30,000 integers in decimal
    cost as much again."""
    config = zlib.crc32(repr(settings).encode("utf-8", "surrogatepass")).to_bytes(4, "little")
    paths = "\0".join([sf[0] for sf in found]).encode("utf-8", "surrogateescape")
    numbers = attrgetter("st_ino", "st_size", "st_mtime_ns")
    return b"".join([_NOOP_VERSION, config, len(paths).to_bytes(8, "little"), paths,
                     marshal.dumps([numbers(sf[3]) for sf in found], 2)])


def _noop_state(settings: Settings, cpath: Path, files: bytes) -> bytes:
    parts = [files]
    for path in (cpath, settings.state.batches):
        try:
            st = os.stat(path)
            parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            parts.append(b"-")
    return b"\0".join(parts)


def _noop_unchanged(settings: Settings, cpath: Path, files: bytes) -> bool:
    try:
        return noop_file(cpath).read_bytes() == _noop_state(settings, cpath, files)
    except OSError:
        return False


def _remember_noop(settings: Settings, cpath: Path, files: bytes, result: BatchResult,
                   seen: list[Looked | None] | None, printed: Callable[[BatchResult], tuple[str, str]] | None) -> None:
    path = noop_file(cpath)
    clean = (result.action == "noop" and not result.summary.counters and not result.errors
             and not result.released and not result.batch_files)
    try:
        if clean:
            write_bytes(path, _noop_state(settings, cpath, files), durable=False)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass  # only a faster no-op is lost
    _remember_check(settings, cpath, seen if clean else None, result, printed)


def _remember_check(settings: Settings, cpath: Path, seen: list[Looked | None] | None, result: BatchResult,
                    printed: Callable[[BatchResult], tuple[str, str]] | None) -> None:
    """After a clean no-op of ``distill run`` (``printed`` given), what the stdlib no-op check
    compares next time (:mod:`distill.tails.noopcheck`: the same folders, stats and inputs
    mean this no-op again); otherwise none is left."""
    path = check_file(cpath)
    printed_as = None
    if printed is not None and seen is not None and None not in seen and settings.inputs is not None:
        def outputs(seconds: float, at_ms: int) -> tuple[str, str, str]:
            shown = msgspec.structs.replace(result, summary=msgspec.structs.replace(result.summary, seconds=seconds))
            return (*printed(shown), _last_run_json(shown.summary, shown.batch_file, None, at_ms))

        seconds, at = result.summary.seconds, now_ms()
        printed_as = noopcheck.templates(outputs(noopcheck.STAND_IN_SECONDS, noopcheck.STAND_IN_AT_MS),
                                         outputs(seconds, at), seconds, at)
    try:
        if printed_as is None:
            os.unlink(path)
        else:
            noopcheck.record(path, inputs=settings.inputs, probes=[str(cpath), str(settings.state.batches.absolute())],
                             looked=seen, printed=printed_as, last_run=str(settings.state.last_run.absolute()))
    except OSError:
        pass  # none was there, or only a faster no-op is lost


def _finish(settings: Settings, cursor: Cursor, walk: TailWalk, cpath: Path, t0: float) -> BatchResult:
    turns = walk.turns
    batch_file = None
    if turns:
        # model.Batch's JSON from the reader's own dicts (its FileRange dicts, its messages):
        # tests/test_model.py round-trips the file byte for byte.
        data = {"version": BATCH_VERSION, "batchId": walk.batch_id, "createdAtMs": now_ms(),
                "agents": [{"agentId": a, "messages": m} for a, m in sorted(walk.messages.items())],
                "touchedFiles": [r["path"] for r in walk.ranges], "ranges": walk.ranges,
                "counters": dict(walk.counters),
                "cursorPath": None if cpath == settings.state.cursor.absolute() else str(cpath)}
        batch_file = settings.state.batch(walk.batch_id).absolute()
        import orjson  # here: a run with nothing new imports no JSON encoder

        try:
            write_bytes(batch_file, orjson.dumps(data, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            raise DistillError(f"cannot write batch file {batch_file}: {exc}; nothing was marked pending, "
                               "fix the problem (disk space, permissions) and run again") from exc
    if walk.dirty:
        cursor.save()
    pending = [str(settings.state.batch(b).absolute()) for b in sorted(cursor.pending_batch_ids())]
    if pending:
        unreadable = unreadable_pending(settings, cursor, thorough=False, skip=walk.batch_id)
        if unreadable:
            walk.counters["pending_batch_unreadable"] += len(unreadable)
            walk.errors += unreadable
    action = "created" if batch_file else ("pending" if pending else "noop")
    summary = RunSummary(action=action, files=walk.files, bytes=walk.bytes, turns=turns,
                         seconds=time.monotonic() - t0, counters=dict(walk.counters))
    return BatchResult(action=action, batch_file=str(batch_file) if batch_file else None, batch_files=pending,
                       cursor_path=str(cpath), summary=summary, released=sorted(set(walk.released)),
                       errors=walk.errors)


# --- reconcile half-finished steps ----------------------------------------------------------

def _reconcile(settings: Settings, cursor: Cursor, counters: Counter) -> list[str]:
    """Finish a commit or abort that a crash interrupted; return the batch ids released."""
    released = []
    pending = cursor.pending_batch_ids()
    if not pending and not _has_json(settings.state.batches):
        return released
    for bid in sorted(pending):
        if settings.state.batch(bid).exists():
            continue
        done = settings.state.done / f"{bid}.json"
        if done.exists():
            _apply_commit(cursor, load_batch(done))
            counters["commit_finished"] += 1
        else:
            _release(cursor, bid)
            released.append(bid)
            counters["batch_file_gone"] += 1
    try:
        tops = [e for e in os.scandir(settings.state.batches) if e.name.endswith(".json") and e.is_file()]
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
            move(Path(e.path), settings.state.aborted / e.name)  # created, never recorded: re-read
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


def _apply_commit(cursor: Cursor, batch: Batch) -> tuple[int, int, list[str], dict[str, tuple[int, int]]]:
    """Advance the cursor over the batch's ranges still pending; (files, bytes, keys, the spans
    committed by file key)."""
    files = nbytes = 0
    keys = []
    spans: dict[str, tuple[int, int]] = {}
    for r in batch.ranges:
        entry = cursor.files.get(r.key)
        pend = entry["pending"].pop(batch.batch_id, None) if entry else None
        if pend is None:
            continue
        entry["offset"], entry["skip"] = pend[1], bool(pend[2])
        files += 1
        nbytes += pend[1] - pend[0]
        keys.append(r.key)
        spans[r.key] = (pend[0], pend[1])
    return files, nbytes, keys, spans


def _turns_within(batch: Batch, spans: dict[str, tuple[int, int]]) -> int:
    """The batch's turns that start inside the spans just committed (file key → [start, end)):
    a batch committed in two steps (a set-aside chunk retried later) counts each turn once."""
    n = 0
    for agent in batch.agents:
        for m in agent.messages:
            span = spans.get(m.id.rsplit(":", 1)[0])
            if span and span[0] <= m.start < span[1]:
                n += 1
    return n


# --- per-chunk progress ----------------------------------------------------------------------

def load_progress(batch_file: Path) -> BatchProgress | None:
    """A batch's chunk progress (``batches/<id>.chunks``), or None if it has none yet."""
    path = chunks_file(batch_file)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode(data, BatchProgress, f"chunk progress {path} is damaged ({{error}}); delete it "
                  "to map the whole batch again (the store's dedup keeps memories single)")


def save_progress(progress: BatchProgress, batch_file: Path) -> None:
    write_bytes(chunks_file(batch_file), encode_json(progress))


def commit_partial(settings: Settings, batch_file: Path, holds: dict[str, int],
                   batch: Batch | None = None) -> RunSummary:
    """Commit a batch except where set-aside chunks hold it; the summary counts what this call
    committed (0 files, bytes and turns when nothing moved).

    A cursor is an offset, not a set of ranges, so a file with a held turn advances only to
    that turn's first byte and keeps its pending range from there (the file waits, as with any
    pending batch); every other file of the batch is committed in full. Idempotent."""
    if not holds:
        return commit_batch(settings, batch_file, batch)
    t0 = time.monotonic()
    with state_lock(settings):
        batch, where = _locate(settings, batch_file, batch)
        if where != "pending":
            raise DistillError(f"batch {batch.batch_id} is {where}; a partial commit needs a pending batch")
        cursor = load_cursor(settings, _cursor_path_of(settings, batch))
        files = nbytes = 0
        spans: dict[str, tuple[int, int]] = {}
        for r in batch.ranges:
            entry = cursor.files.get(r.key)
            pend = entry["pending"].get(batch.batch_id) if entry else None
            if pend is None:
                continue
            if r.key in holds:
                stop = max(pend[0], min(holds[r.key], pend[1]))
                if stop == pend[0]:
                    continue
                spans[r.key] = (pend[0], stop)
                entry["offset"], entry["skip"] = stop, False  # a turn starts a line
                pend[0] = stop
            else:
                spans[r.key] = (pend[0], pend[1])
                entry["pending"].pop(batch.batch_id)
                entry["offset"], entry["skip"] = pend[1], bool(pend[2])
            nbytes += spans[r.key][1] - spans[r.key][0]
            files += 1
        if files:
            cursor.save()
    return RunSummary(action="partial", files=files, bytes=nbytes, turns=_turns_within(batch, spans),
                      seconds=time.monotonic() - t0)


# --- commit / abort -------------------------------------------------------------------------

def _locate(settings: Settings, batch_file: Path, batch: Batch | None = None) -> tuple[Batch, str]:
    """Find a batch wherever its life has taken it: (batch, "pending" | "done" | "aborted").
    ``batch``: the batch as loaded from the state dir's own file, by the caller or by
    :func:`locate_batch` before the state lock was taken (not read again)."""
    if batch is not None:
        return batch, _where(settings, batch.batch_id)
    _, batch, where = locate_batch(settings, batch_file)
    return batch, where


def locate_batch(settings: Settings, batch_file: Path) -> tuple[Path, Batch, str]:
    """The batch ``batch_file`` names, as this state dir holds it: (its file here, the batch,
    "pending" | "done" | "aborted"). ``batch_file`` may be where the batch was (a pending batch
    since committed is found in ``done/``) or a copy of it; the state dir's own file is the one
    returned, so a caller moves and writes only under the state dir.

    Refused with a message naming the file (nothing read further, nothing written): a folder,
    a file that is not there, and a batch this state dir does not hold (made by another state
    dir, or a copy whose batch is not under ``batches/``) or whose cursor is not one of its own."""
    state = settings.state
    path = Path(batch_file)
    if path.is_dir():
        raise DistillError(f"{batch_file} is a folder, not a batch file; give the batch file `distill run` "
                           f"printed ({state.batches}/<id>.json)")
    batch = load_batch(path) if path.is_file() else None
    bid = batch.batch_id if batch is not None else (path.name[:-len(".json")] if path.suffix == ".json"
                                                    else path.name)
    found = next(((where, folder / f"{bid}.json") for where, folder in
                  (("done", state.done), ("aborted", state.aborted), ("pending", state.batches))
                  if (folder / f"{bid}.json").is_file()), None) if _plain_name(bid) else None
    if found is None:
        if batch is None:
            raise DistillError(f"batch file {batch_file} does not exist (nor under {state.batches}); give the "
                               "batch file `distill run` printed")
        raise DistillError(
            f"{batch_file} (batch {bid}) is not a batch of this state dir ({state.root}): it is not in "
            f"{state.batches}, nor in its done/ or aborted/; nothing was changed. Run the command with the "
            "--state-dir (or DISTILL_STATE_DIR) of the `distill run` that made it")
    where, own = found
    if batch is None or not os.path.samefile(own, path):
        batch = load_batch(own)
    cursor = _cursor_path_of(settings, batch)
    if cursor.resolve() not in (state.cursor.resolve(), state.backfill_cursor.resolve()):
        raise DistillError(
            f"{batch_file} (batch {bid}) belongs to the cursor {cursor}, which is not one of this state dir's "
            f"({state.cursor.name}, {state.backfill_cursor.name} in {state.root}); nothing was changed. Run the "
            "command with the --state-dir of the `distill run` that made it")
    return own.absolute(), batch, where


def _plain_name(batch_id: str) -> bool:
    """A batch id names a file in ``batches/``, never a path (a crafted ``../x`` is no batch of ours)."""
    return bool(batch_id) and batch_id not in (".", "..") and "/" not in batch_id and "\0" not in batch_id


def is_pending(settings: Settings, batch: Batch) -> bool:
    """Whether the batch's ranges are pending in its cursor (read-only, no lock)."""
    return batch.batch_id in load_cursor(settings, _cursor_path_of(settings, batch)).pending_batch_ids()


def _where(settings: Settings, batch_id: str) -> str:
    for where, folder in (("done", settings.state.done), ("aborted", settings.state.aborted)):
        if (folder / f"{batch_id}.json").exists():
            return where
    return "pending"


def commit_batch(settings: Settings, batch_file: Path, batch: Batch | None = None) -> RunSummary:
    """Mark a batch's ranges committed: its memories are stored. Idempotent. ``batch``: the
    batch as the caller loaded it from ``batch_file`` (the pipeline), so it is not read twice."""
    t0 = time.monotonic()
    if batch is None:  # refuse a batch that is not this state dir's before taking its lock
        batch = locate_batch(settings, batch_file)[1]
    with state_lock(settings):
        batch, where = _locate(settings, batch_file, batch)
        cursor = load_cursor(settings, _cursor_path_of(settings, batch))
        if where == "aborted":
            raise DistillError(
                f"batch {batch.batch_id} was aborted (or never recorded), so its ranges were released and "
                "will be read again by the next `distill run`; it cannot be committed"
            )
        if where == "pending":
            if batch.batch_id not in cursor.pending_batch_ids():
                move(settings.state.batch(batch.batch_id), settings.state.aborted / f"{batch.batch_id}.json")
                raise DistillError(
                    f"batch {batch.batch_id} is not pending in {cursor.path}: either a run crashed before "
                    "recording it (its bytes will be read again by `distill run`), or its transcript was "
                    "deleted and the range released; nothing to commit, it was moved to batches/aborted/"
                )
            progress = load_progress(settings.state.batch(batch.batch_id))
            held = progress.with_status("failed") if progress else {}
            if held:
                raise DistillError(
                    f"batch {batch.batch_id} has {len(held)} set-aside chunk(s) whose memories are not stored "
                    f"(see `distill status`): run `distill retry` to try them again, or `distill retry --drop` "
                    "to give them up, which commits the batch")
            move(settings.state.batch(batch.batch_id), settings.state.done / f"{batch.batch_id}.json")
        chunks_file(settings.state.batch(batch.batch_id)).unlink(missing_ok=True)
        files, nbytes, keys, spans = _apply_commit(cursor, batch)
        if keys:
            cursor.save()
            _remember_turns(SeenTurns(cursor.path), batch, set(keys))
    return RunSummary(action="committed", files=files, bytes=nbytes, turns=_turns_within(batch, spans),
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
    try:
        batch = locate_batch(settings, batch_file)[1]  # refused before the state lock if not this state dir's
    except SchemaMismatch as exc:  # a pending batch whose file is damaged is released by its id
        with state_lock(settings):
            return _abort_unreadable(settings, Path(batch_file), exc, t0)
    with state_lock(settings):
        batch, where = _locate(settings, batch_file, batch)
        if where == "done":
            raise DistillError(f"batch {batch.batch_id} is already committed; it cannot be aborted")
        files = nbytes = 0
        if where == "pending":
            cursor = load_cursor(settings, _cursor_path_of(settings, batch))
            files, nbytes = _release(cursor, batch.batch_id)
            if files:
                cursor.save()
            move(settings.state.batch(batch.batch_id), settings.state.aborted / f"{batch.batch_id}.json")
            chunks_file(settings.state.batch(batch.batch_id)).unlink(missing_ok=True)
    return RunSummary(action="aborted", files=files, bytes=nbytes, seconds=time.monotonic() - t0)


def _abort_unreadable(settings: Settings, batch_file: Path, error: SchemaMismatch, t0: float) -> RunSummary:
    """Abort a pending batch whose file cannot be read: the cursor knows its ranges by the
    batch id (the file's name), so they are released all the same, and the file is moved to
    ``batches/aborted/``. Anything else unreadable is not ours to release: the error stands."""
    bid = batch_file.name[:-len(".json")] if batch_file.name.endswith(".json") else batch_file.name
    own = settings.state.batch(bid)
    given = batch_file if batch_file.exists() else own
    cursor = _cursor_pending_on(settings, bid) if given.exists() and own.exists() and given.samefile(own) else None
    if cursor is None:
        why = str(error).split("; " + _IF_PENDING, 1)[0]
        raise SchemaMismatch(f"{why}; no batch {bid!r} is pending in {settings.state.cursor} (nor in backfill's "
                             "cursor), so there is nothing to release: move the file away") from error
    files, nbytes = _release(cursor, bid)
    cursor.save()
    move(own, settings.state.aborted / own.name)
    chunks_file(own).unlink(missing_ok=True)
    return RunSummary(action="aborted", files=files, bytes=nbytes, seconds=time.monotonic() - t0,
                      counters={"unreadable_batch_released": 1})


# --- housekeeping -------------------------------------------------------------------------

def record_last_run(settings: Settings, summary: RunSummary, batch_file: str | None = None,
                    error: str | None = None) -> None:
    """What `distill status` shows as the last run; recorded once, by whoever ran it: the
    ``run`` command for a batch it cut, :func:`distill.pipeline.run_distill` and
    :func:`distill.pipeline.retry_failed` for their totals -- also when they fail (``error``;
    the action is then ``failed`` and the summary what was done before the failure).

    Informational only, so not fsynced: a no-op run stays cheap."""
    write_bytes(settings.state.last_run, _last_run_json(summary, batch_file, error, now_ms()).encode(),
                durable=False)


def _last_run_json(summary: RunSummary, batch_file: str | None, error: str | None, at_ms: int) -> str:
    last = LastRun(at_ms=at_ms, action="failed" if error else summary.action, batch_file=batch_file,
                   summary=summary, error=error)
    return encode_json(last).decode()


def _prune(settings: Settings) -> None:
    """Drop committed and aborted batch files older than ``batch_retention_days``, and chunk
    progress whose batch is gone (a batch released because its transcript was deleted)."""
    cutoff = time.time() - settings.batch_retention_days * 86400
    try:
        leftovers = [e for e in os.scandir(settings.state.batches) if e.name.endswith(".chunks")]
    except FileNotFoundError:
        leftovers = []
    for e in leftovers:
        if not Path(e.path).with_suffix(".json").exists():
            try:
                os.unlink(e.path)
            except OSError:
                pass
    for folder in (settings.state.done, settings.state.aborted):
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
