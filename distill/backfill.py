"""``distill backfill``: distil the history that ``distill init`` skipped, through the same pipeline.

How it stays out of the main cursor's way and survives interrupts:

- it reads with its own cursor, ``<state>/backfill-cursor.json`` (batches record it, so
  commits go there), starting every file at byte 0;
- it reads each file only up to where the *main* cursor had committed when backfill first
  met that file (``<state>/backfill.json`` keeps those limits), so the main run and backfill
  split each file between them instead of both reading it; bytes the main run reads later are
  its own business;
- an interrupt leaves at most the current batch pending on the backfill cursor; the next
  ``distill backfill`` retries it first and goes on, and the store's dedup absorbs any
  overlap. Run it again with other filters and the limits already recorded are kept.

OpenClaw's archived sessions (``<id>.jsonl.reset.<time>``, ``.deleted.<time>``: a reset or
deleted session, often most of the history) are read too, read-only and whole (they never
grow), with cursors keyed like any file; ``--no-archives`` or ``backfill_archives = false``
leaves them out. The hourly run never reads them.

``--agent`` keeps one agent's files (an id outside the agent-id rule is refused; one with no
transcript here is named in a warning); ``--since`` / ``--until`` keep files by their last
modification time (a date is a local calendar day, ``--until`` inclusive). ``--dry-run``
reads the same bytes with the same parsers and chunker and prints what a run would send,
without calling a model or writing anything.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable

import msgspec

from .atomic import write_json
from .config import Settings
from .errors import ConfigError
from .settings.core import AGENT_ID_RULE, agent_refusal, is_agent_id
from .lock import FileLock
from .model import RunSummary
from .tails.reader import dry_walks

PLAN_VERSION = 1


class FileTodo(msgspec.Struct, kw_only=True):
    path: str
    agent: str
    key: str
    start: int  # where backfill's own cursor stands
    stop: int  # the main cursor's committed offset when backfill first met the file

    @property
    def bytes(self) -> int:
        return max(0, self.stop - self.start)


class Estimate(msgspec.Struct, kw_only=True):
    turns: int = 0
    chunks: int = 0
    llm_calls: int = 0
    tokens: int = 0  # prompt tokens sent, as the distiller renders each chunk
    output_tokens_max: int = 0  # the answers' cap (llm_max_output_tokens per call)
    provider: str = "rules"


class BackfillReport(msgspec.Struct, kw_only=True):
    action: str  # dry-run | backfilled | noop
    agent: str | None = None
    since: str | None = None
    until: str | None = None
    files: int = 0
    bytes: int = 0
    todo: list[FileTodo] = []
    estimate: Estimate | None = None
    summary: RunSummary | None = None
    errors: list[str] = []  # warnings: a folder that cannot be listed, an --agent with no transcripts, …


def parse_when(value: str | None, *, end_of_day: bool = False) -> float | None:
    """``YYYY-MM-DD`` (local day) or an ISO date-time → Unix seconds."""
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"date {value!r} is not YYYY-MM-DD or an ISO date-time (e.g. 2026-03-01T12:00)") from None
    if end_of_day and len(value) <= 10:
        when += timedelta(days=1)
    return when.timestamp() - (1e-6 if end_of_day and len(value) <= 10 else 0)


def record_limits(settings: Settings, *, save: bool = True) -> dict[str, int]:
    """Limits per file: kept from earlier backfills, added for files met for the first time.

    ``save=False`` (``--dry-run``): the same limits, computed and not written, read without
    taking the state lock (which would create ``<state>/.lock``): ``cursor.json`` is only ever
    replaced whole (an atomic rename), so a lock-free read sees one complete version, as
    ``distill status`` does."""
    from .tails.cursor import Cursor

    path = settings.state.backfill_plan
    limits: dict[str, int] = {}
    if path.exists():
        import orjson

        try:
            data = orjson.loads(path.read_bytes())
            limits = {str(k): int(v) for k, v in data["limits"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"backfill plan {path} is damaged ({exc}); move it and "
                              f"{settings.state.backfill_cursor.name} away to start backfill over") from None
    if save:
        from .tails.ledger import state_lock

        with state_lock(settings):  # a consistent view of the main cursor, against a run that moves it
            main = Cursor.load(settings.state.cursor)
    else:
        main = Cursor.load(settings.state.cursor)
    added = {k: int(e["offset"]) for k, e in main.files.items() if k not in limits}
    if added or not path.exists():
        limits.update(added)
        if save:
            _save_plan(settings, limits)
    return limits


def _save_plan(settings: Settings, limits: dict[str, int]) -> None:
    write_json(settings.state.backfill_plan, {"version": PLAN_VERSION, "updatedAtMs": int(time.time() * 1000),
                                     "limits": limits})


def select(settings: Settings, limits: dict[str, int], *, agent: str | None, since: float | None,
           until: float | None, save: bool = True, errors: list[str] | None = None,
           counters: Counter | None = None, agents_seen: set[str] | None = None) -> list[FileTodo]:
    """The files to read and how far; archives met for the first time get their size as limit
    (written to the plan unless ``save`` is false). Discovery's warnings go to ``errors``;
    ``agents_seen`` is filled with every agent that has a transcript here, whatever the filters."""
    from .tails.discover import discover
    from .tails.ledger import load_cursor

    from .sources import is_archived_session

    own = load_cursor(settings, settings.state.backfill_cursor)
    out = []
    grown = False
    for sf in discover(settings, counters if counters is not None else Counter(), errors):
        if sf.key not in limits and is_archived_session(os.path.basename(sf.path)):
            limits[sf.key], grown = sf.st.st_size, True  # an archive never grows: all of it is history
        if agents_seen is not None:
            agents_seen.add(sf.agent)
        if agent is not None and sf.agent != agent:
            continue
        if (since is not None and sf.st.st_mtime < since) or (until is not None and sf.st.st_mtime > until):
            continue
        stop = min(limits.get(sf.key, 0), sf.st.st_size)
        entry = own.files.get(sf.key)
        start = int(entry["offset"]) if entry else 0
        if stop > start:
            out.append(FileTodo(path=sf.path, agent=sf.agent, key=sf.key, start=start, stop=stop))
    if grown and save:
        _save_plan(settings, limits)
    return out


def estimate(settings: Settings, todo: list[FileTodo], limits: dict[str, int],
             errors: list[str] | None = None) -> tuple[Estimate, int, int]:
    """What the backfill would read and send, with nothing spent or written: ``(estimate,
    files, bytes)``. Read by the reader a real run uses (:func:`distill.tails.reader.dry_walks`),
    batch by batch, and chunked per batch as the distiller would."""
    from .distiller.chunking import chunk_batch
    from .distiller.prompts import call_tokens
    from .distiller.schema import output_token_cap
    from .tails.ledger import load_cursor
    from .model import BatchAgent

    offline = settings.llm == "rules"
    turns = nbytes = nchunks = tokens = 0
    files: set[str] = set()
    for walk in dry_walks(settings, load_cursor(settings, settings.state.backfill_cursor), file_filter=_only_todo(todo),
                          read_limit=_limit(limits)):  # one batch at a time: memory stays one batch's
        turns, nbytes, files = turns + walk.turns, nbytes + walk.bytes, files | walk.files_read
        if errors is not None:  # what the reads met (a file it cannot read, an unknown format), once
            errors += [e for e in walk.errors if e not in errors]
        agents = msgspec.convert([{"agentId": a, "messages": ms} for a, ms in sorted(walk.messages.items())],
                                 list[BatchAgent])
        chunks = chunk_batch(agents, chunk_tokens=settings.chunk_tokens, overlap_turns=settings.chunk_overlap_turns)
        nchunks += len(chunks)
        tokens += 0 if offline else sum(call_tokens(c) for c in chunks)
    return Estimate(
        turns=turns,
        chunks=nchunks,
        llm_calls=0 if offline else nchunks,
        tokens=tokens,
        output_tokens_max=0 if offline else nchunks * (settings.llm_max_output_tokens or output_token_cap()),
        provider=settings.llm,
    ), len(files), nbytes


def _only_todo(todo: list[FileTodo]) -> Callable[[Path, os.stat_result], bool]:
    keys = {t.key for t in todo}
    return lambda _p, st: f"{st.st_dev}:{st.st_ino}" in keys


def _limit(limits: dict[str, int]) -> Callable[[str], int]:
    return lambda key: limits.get(key, 0)


Progress = Callable[[int, int, int, int, int], None]  # files done, files, bytes done, bytes, memories


def run_backfill(settings: Settings, *, agent: str | None = None, since: str | None = None,
                 until: str | None = None, dry_run: bool = False, progress: Progress | None = None,
                 runner: Callable[..., RunSummary] | None = None, archives: bool | None = None) -> BackfillReport:
    """``archives``: read OpenClaw's archived sessions too (default: ``backfill_archives``)."""
    read = settings.backfill_archives if archives is None else archives
    settings = settings.replace(read_archives=read)
    since_s, until_s = parse_when(since), parse_when(until, end_of_day=True)
    if agent is not None and not is_agent_id(agent):
        raise ConfigError(f"--agent {agent!r} is not an agent id: use {AGENT_ID_RULE}")
    report = BackfillReport(action="noop", agent=agent, since=since, until=until)
    agents: set[str] = set()
    if dry_run:  # writes nothing at all: no lock file, no plan, no state folder
        limits = record_limits(settings, save=False)
        todo = select(settings, limits, agent=agent, since=since_s, until=until_s, save=False,
                      errors=report.errors, agents_seen=agents)
        if agent is not None and agent not in agents:
            report.errors.append(_unknown_agent(settings, agent, agents))
        report.action, report.todo = "dry-run", todo
        report.estimate, report.files, report.bytes = estimate(settings, todo, limits,  # not the plan's bound
                                                               report.errors)
        return report
    guard = FileLock(settings.state.backfill_lock, purpose="distill backfill")
    guard.acquire(timeout=0)  # one backfill at a time; run and the worker interleave per batch
    try:
        limits = record_limits(settings)
        todo = select(settings, limits, agent=agent, since=since_s, until=until_s, errors=report.errors,
                      agents_seen=agents)
        if agent is not None and agent not in agents:
            report.errors.append(_unknown_agent(settings, agent, agents))
        report.todo, report.files, report.bytes = todo, len(todo), sum(t.bytes for t in todo)
        from .pipeline import run_distill

        pending = _has_pending(settings)
        if not todo and not pending:
            return report
        watch = _CursorWatch(settings, todo, progress)
        summary = (runner or run_distill)(
            settings,
            file_filter=_only_todo(todo),
            cursor_path=settings.state.backfill_cursor,
            read_limit=_limit(limits),
            progress=watch.tick,
        )
        watch.finish(summary.memories_added)
        report.errors += [e for e in summary.errors if e not in report.errors]  # what the reads met
        report.action, report.summary = "backfilled", summary
        return report
    finally:
        guard.release()


def _unknown_agent(settings: Settings, agent: str, known: set[str]) -> str:
    """Why ``--agent`` selects no file: it is never read here, or no transcript of it was found."""
    refusal = agent_refusal(agent, settings.distiller_agent_id, settings.allowed_agent_ids)
    if refusal:
        return f"--agent {agent!r} selects no file: {refusal}"
    return (f"--agent {agent!r} selects no file: no transcript of agent {agent!r} was found (agents with "
            f"transcripts: {', '.join(sorted(known)) or 'none'}; `distill status` lists them by agent); "
            "check the name")


def _has_pending(settings: Settings) -> bool:
    from .tails.ledger import pending_batches

    return bool(pending_batches(settings, cursor_path=settings.state.backfill_cursor))


class _CursorWatch:
    """Turns the pipeline's progress ticks into files / bytes done, read from backfill's cursor."""

    def __init__(self, settings: Settings, todo: list[FileTodo], sink: Progress | None):
        self.path = settings.state.backfill_cursor
        self.todo = todo
        self.sink = sink
        self.total = sum(t.bytes for t in todo)
        self._last = 0.0
        self._emit(0, 0, 0)

    def tick(self, *_args: object) -> None:
        if self.sink is None or time.monotonic() - self._last < 0.2:
            return
        self._last = time.monotonic()
        self._emit(*self._done(), 0)

    def finish(self, memories: int) -> None:
        files, done = self._done()
        self._emit(files, done, memories)

    def _done(self) -> tuple[int, int]:
        from .tails.cursor import Cursor

        try:
            files = Cursor.load(self.path).files
        except Exception:  # noqa: BLE001 - progress is best effort; the run reports errors
            return 0, 0
        done_files = done = 0
        for t in self.todo:
            offset = int(files.get(t.key, {}).get("offset", t.start))
            done += max(0, min(offset, t.stop) - t.start)
            done_files += offset >= t.stop
        return done_files, done

    def _emit(self, files: int, done: int, memories: int) -> None:
        if self.sink:
            self.sink(files, len(self.todo), done, self.total, memories)


def progress_printer(stream=None) -> Progress:
    """A bar redrawn in place on a terminal; plain lines (at most one per 5 s) otherwise."""
    from .cli.render import format_size

    from .progress import eta

    stream = stream or sys.stderr
    tty = stream.isatty()
    state = {"last": 0.0, "started": time.monotonic()}

    def show(files: int, nfiles: int, done: int, total: int, memories: int) -> None:
        frac = done / total if total else 1.0
        speed = eta(done, total, time.monotonic() - state["started"]).replace("/s", " B/s", 1)
        text = f"files {files}/{nfiles}  {format_size(done)}/{format_size(total)}  memories {memories}  {speed}"
        if tty:
            bar = "#" * int(frac * 30)
            stream.write(f"\r[{bar:<30}] {frac:6.1%}  {text}  ")
            if files == nfiles and done >= total:
                stream.write("\n")
        else:
            now = time.monotonic()
            if now - state["last"] < 5 and done < total:
                return
            state["last"] = now
            stream.write(f"backfill: {frac:.1%} {text}\n")
        stream.flush()

    return show
