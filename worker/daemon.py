"""``distill-worker``: one process per state directory serving the task queue.

Threads: the main thread owns signals, the systemd watchdog and shutdown; a serving thread
runs the task loop (claim → pipeline → file away) and housekeeping; watchdog's observer
threads only wake the serving thread. On SIGTERM/SIGINT no new task is claimed; a run in
progress gets :data:`GRACE_S` seconds to finish, after which its tasks are put back in the
inbox untouched and the process exits — safe at any point, because the pipeline commits a
byte range only after its memories are stored, and replaying it stores nothing twice.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .watch import Watcher

log = logging.getLogger("distill-worker")

GRACE_S = 7.0  # the whole shutdown stays within 10 s (systemd's default TimeoutStopSec is 90)
IDLE_RESCAN_S = 30.0  # rescan the inbox even without events: a missed event only delays a task


class Daemon:
    def __init__(self, settings: Any, *, runner: Any = None, once: bool = False, notifier: Any = None):
        from distill.queue import Queue

        from .housekeeping import Housekeeping
        from .notify import Notifier
        from .tasks import TaskLoop, pipeline_runner

        self.settings = settings
        self.once = once
        self.queue = Queue(settings.state.queue)
        self.loop = TaskLoop(settings, self.queue, runner=runner or pipeline_runner)
        self.house = Housekeeping(settings, self.queue)
        self.notifier = notifier or Notifier()
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.watcher: Watcher | None = None
        self.crashed: BaseException | None = None
        self._added_seen = 0
        self._last_full_pass = time.monotonic()  # the first one after an interval of serving

    # --- lifecycle
    def run(self) -> int:
        from distill.cli.exitcodes import exit_code_of
        from distill.errors import LockBusy
        from distill.lock import FileLock

        lock = FileLock(self.settings.state.worker_lock, purpose="distill-worker")
        try:
            lock.acquire(timeout=0)
        except LockBusy as exc:
            print(f"distill-worker: another worker already serves {self.settings.state_dir}: {exc}", file=sys.stderr)
            return exit_code_of(exc)
        try:
            return self._run()
        finally:
            lock.release()

    def _run(self) -> int:
        from distill.enqueue import unwritable_queue

        try:
            self.queue.ensure()
        except OSError as exc:
            print(f"distill-worker: error: {unwritable_queue(str(exc.filename or self.queue.root), exc)}",
                  file=sys.stderr)
            return 1
        problem = self.queue.writable_problem()
        if problem:
            print(f"distill-worker: error: {problem}", file=sys.stderr)
            return 1
        returned = self.loop.recover()
        if returned:
            log.info("%d task(s) left in processing/ by a worker that died; each counted as an attempt", returned)
        if not self.once:
            self._start_watcher()
        self._install_signals()
        server = threading.Thread(target=self._serve, name="distill-serve", daemon=True)
        server.start()
        counts = self.queue.counts()
        self.notifier.ready(f"serving; {counts['inbox']} queued")
        log.info("distill-worker %d serving %s (%d queued)%s", os.getpid(), self.queue.root, counts["inbox"],
                 " once" if self.once else "")
        self._supervise(server)
        if server.is_alive():
            return self._shutdown(server)
        if self.watcher:
            self.watcher.stop()
        if self.crashed is not None:
            return 1
        self._log_totals()
        return 0

    def _supervise(self, server: threading.Thread) -> None:
        """Main thread: wait for a stop signal or the end of --once, pinging systemd's watchdog."""
        interval = self.notifier.watchdog_interval()
        tick = min(1.0, interval) if interval else 1.0
        while server.is_alive() and not self.stop.is_set():
            self.stop.wait(tick)
            if interval and time.monotonic() - self.loop.heartbeat < self.settings.worker_stall_seconds:
                self.notifier.watchdog()

    def _shutdown(self, server: threading.Thread) -> int:
        label = self.loop.current_label
        self.notifier.stopping(f"stopping{'; finishing ' + label if label else ''}")
        log.info("stop requested; %s", f"waiting up to {GRACE_S:.0f} s for task {label}" if label else "idle")
        self.wake.set()
        server.join(GRACE_S)
        if server.is_alive():
            back = self.loop.abandon()
            log.info("task %s did not finish in time; %d task file(s) returned to the inbox, "
                     "its batch stays pending and is retried by the next run", label, back)
            self._log_totals()
            logging.shutdown()
            sys.stderr.flush()
            os._exit(0)  # the run's thread may be inside a C call; nothing it holds needs cleanup
        if self.watcher:
            self.watcher.stop()
        self._log_totals()
        return 0

    def _install_signals(self) -> None:
        def on_signal(signum: int, _frame: Any) -> None:
            if self.stop.is_set():  # second signal: leave now
                self.loop.abandon()
                os._exit(0)
            self.stop.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def _start_watcher(self) -> None:
        from .watch import Watcher

        sources: list[Path] = []
        if self.settings.worker_watch_sources:
            sources = [self.settings.agents_dir] + [s.path for s in self.settings.sources]
        self.watcher = Watcher(self.queue.inbox, self.wake, sources=sources, poll=self.settings.worker_poll)
        mode = self.watcher.start()
        log.info("watching %s%s with %s", self.queue.inbox,
                 f" and {len(sources)} source root(s)" if sources else "", mode)

    # --- serving thread
    def _serve(self) -> None:
        try:
            if not self.once:
                self.loop.warm_up()
            while not self.stop.is_set():
                self.wake.clear()
                if self.loop.step():
                    self.house.note_added(self._take_added())
                    self._status()
                    continue
                if self.once:
                    return
                self._enqueue_quiet_files()
                self._full_pass_if_due()
                self.house.run()
                self._status()
                self.wake.wait(self._idle_timeout())
        except OSError as exc:  # a queue folder made unwritable, a full disk: say which and what to do
            from distill.enqueue import unwritable_queue

            self.crashed = exc
            where = str(exc.filename or self.queue.root)
            log.error("worker stopped: %s; then restart the worker (tasks left in processing/ return to the inbox, "
                      "each counted as an attempt)", unwritable_queue(os.path.dirname(where) or where, exc))
        except BaseException as exc:  # noqa: BLE001 - report and let the main thread exit non-zero
            self.crashed = exc
            log.exception("worker stopped by an unexpected error; tasks in processing/ return to the inbox at restart")

    def _full_pass_if_due(self) -> None:
        interval = self.settings.worker_full_pass_interval
        if interval <= 0 or time.monotonic() - self._last_full_pass < interval:
            return
        self._last_full_pass = time.monotonic()
        if self.loop.full_pass() is not None:
            self.house.note_added(self._take_added())

    def _take_added(self) -> int:
        added = self.loop.counts["memories_added"] - self._added_seen
        self._added_seen = self.loop.counts["memories_added"]
        return added

    def _idle_timeout(self) -> float:
        waits = [IDLE_RESCAN_S, self.house.due_in()]
        if self.settings.worker_full_pass_interval > 0:
            waits.append(max(0.0, self._last_full_pass + self.settings.worker_full_pass_interval - time.monotonic()))
        nxt = self.loop.next_wake_s()
        if nxt is not None:
            waits.append(nxt + 0.01)
        if self.watcher is not None:
            due = self.watcher.next_due_in(self.settings.worker_quiet_seconds)
            if due is not None:
                waits.append(due + 0.01)
        return max(0.01, min(waits))

    def _enqueue_quiet_files(self) -> None:
        """Source-root watching: a session file quiet for ``worker_quiet_seconds`` gets a tail task."""
        if self.watcher is None or not self.settings.worker_watch_sources:
            return
        from distill.enqueue import enqueue
        from distill.errors import DistillError, InvalidTask
        from distill.roots import owner_of

        for path in self.watcher.due(self.settings.worker_quiet_seconds):
            agent = owner_of(self.loop.cfg, path)
            if agent is None:
                continue
            try:
                enqueue(self.loop.cfg, agent, path, "tail")
            except InvalidTask as exc:
                log.debug("not queueing %s: %s", path, exc)
            except DistillError as exc:  # the inbox is not writable: say so, keep serving
                log.warning("not queueing %s: %s", path, exc)

    def _status(self) -> None:
        c = self.loop.counts
        self.notifier.status(f"{c['done']} done, {c['retried']} retried, {c['failed']} failed, "
                             f"{c['rejected']} rejected; {len(self.queue.names('inbox'))} queued")

    def _log_totals(self) -> None:
        c = self.loop.counts
        log.info("totals: %d done (%d coalesced), %d retried, %d failed, %d rejected, %d memories added",
                 c["done"], c["coalesced"], c["retried"], c["failed"], c["rejected"], c["memories_added"])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="distill-worker",
                                description="Serve the distill task queue (session-end hooks, source watching).")
    p.add_argument("--state-dir", help="state directory; env DISTILL_STATE_DIR")
    p.add_argument("--agents-dir", help="OpenClaw agents folder; env DISTILL_AGENTS_DIR")
    p.add_argument("--db", help="LanceDB directory; env DISTILL_DB")
    p.add_argument("--once", action="store_true", help="process what is queued (and ready), then exit")
    p.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    return p


def setup_logging(verbose: bool) -> None:
    # journald stamps each line itself; elsewhere (a terminal, launchd's log file) add the time
    fmt = "%(message)s" if os.environ.get("JOURNAL_STREAM") else "%(asctime)s distill-worker: %(message)s"
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=fmt, stream=sys.stderr)
    logging.getLogger("watchdog").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    from distill.config import load_settings
    from distill.cli.exitcodes import exit_code_of
    from distill.errors import DistillError

    try:
        settings = load_settings(state_dir=args.state_dir, agents_dir=args.agents_dir, db=args.db)
        return Daemon(settings, once=args.once).run()
    except DistillError as exc:
        print(f"distill-worker: error: {exc}", file=sys.stderr)
        return exit_code_of(exc)
