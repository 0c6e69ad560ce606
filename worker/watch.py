"""File events for the worker: the inbox wakes it; session files are enqueued once quiet.

inotify (watchdog's native observer) is preferred; where it cannot start (no inotify, the
watch limit reached, a filesystem without events) the polling observer takes over and the
choice is logged. ``worker_poll`` forces polling. Either way the worker also rescans the
inbox now and then, so a missed event only delays a task, never strands it.

The watch limit needs a check of our own: watchdog (7.x) drops the error of every folder
below a watched root, so a tree past ``fs.inotify.max_user_watches`` started "fine" with its
deeper folders unwatched (tests/bench/bench_watch_idle.py: an append there was never seen).
After a native start the watches held are counted against the folders; short means polling.
Polling the session roots costs a directory scan per interval (≈ 6 CPU s a minute for 10,000
files at 1 s), so they are polled every ``SOURCE_POLL_SECONDS``; the inbox stays at 1 s.

A session file written all at once may produce only a "created" event, so every event kind
counts as activity; the cursor (not this module) decides what is new, reading a file first
seen from byte 0.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.polling import PollingObserver

log = logging.getLogger("distill-worker")
POLL_SECONDS = 1.0
SOURCE_POLL_SECONDS = 5.0  # a session is enqueued once quiet for longer than this anyway


# Events that change nothing in a folder: a file opened, or closed (after reading, or after a
# write whose "modified" events came first). The worker opens every inbox file on each scan, so
# waking on these would make each scan start the next one: a busy loop while a task waits.
READ_ONLY_EVENTS = frozenset({"opened", "closed_no_write", "closed"})


class _Wake(FileSystemEventHandler):
    def __init__(self, wake: threading.Event):
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in READ_ONLY_EVENTS:
            self.wake.set()


class _Activity(FileSystemEventHandler):
    """Remember when each ``.jsonl`` under a source root last changed."""

    def __init__(self, seen: dict[str, float], lock: threading.Lock, wake: threading.Event):
        self.seen, self.lock, self.wake = seen, lock, wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("deleted", "opened", "closed_no_write"):
            return
        path = str(event.dest_path or event.src_path)
        if not path.endswith(".jsonl"):
            return
        with self.lock:
            self.seen[path] = time.monotonic()
        self.wake.set()


class Watcher:
    def __init__(self, inbox: Path, wake: threading.Event, *, sources: Sequence[Path] = (), poll: bool = False):
        self.inbox = Path(inbox)
        self.wake = wake
        self.sources = [Path(s) for s in sources]
        self.poll = poll
        self.mode = "none"
        self._observers: list = []
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self) -> str:
        """Start watching; return a description of the observer chosen (for the log)."""
        if self.poll:
            return self._poll("worker_poll is set")
        try:
            from watchdog.observers import Observer

            observer = Observer()
            self._observers = [self._start(observer, inbox=True, sources=True)]
        except (OSError, RuntimeError) as exc:
            self.stop()
            return self._poll(f"native file events unavailable: {exc}")
        if isinstance(observer, PollingObserver):
            self.stop()
            return self._poll("no native file events on this platform")
        short = _watch_shortfall([self.inbox, *(r for r in self.sources if r.is_dir())])
        if short:
            self.stop()
            return self._poll(short)
        self.mode = f"native events ({type(observer).__name__})"
        return self.mode

    def _poll(self, why: str) -> str:
        self._observers = [self._start(PollingObserver(timeout=POLL_SECONDS), inbox=True, sources=False)]
        if self.sources:
            self._observers.append(self._start(PollingObserver(timeout=SOURCE_POLL_SECONDS), inbox=False,
                                               sources=True))
        self.mode = f"polling ({why}): inbox every {POLL_SECONDS:g} s" + (
            f", session roots every {SOURCE_POLL_SECONDS:g} s" if self.sources else "")
        return self.mode

    def _start(self, observer, *, inbox: bool, sources: bool):
        observer.daemon = True
        if inbox:
            observer.schedule(_Wake(self.wake), str(self.inbox), recursive=False)
        for root in self.sources if sources else ():
            if root.is_dir():
                observer.schedule(_Activity(self._seen, self._lock, self.wake), str(root), recursive=True)
            else:
                log.warning("source root %s does not exist; not watching it", root)
        try:
            observer.start()
        except Exception:
            observer.unschedule_all()
            raise
        return observer

    def stop(self) -> None:
        for observer in self._observers:
            observer.stop()
            observer.join(timeout=2)
        self._observers = []

    def due(self, quiet: float) -> list[str]:
        """Session files with no event for ``quiet`` seconds (each returned once per burst)."""
        now = time.monotonic()
        with self._lock:
            ready = [p for p, t in self._seen.items() if now - t >= quiet]
            for p in ready:
                del self._seen[p]
        return sorted(ready)

    def next_due_in(self, quiet: float) -> float | None:
        with self._lock:
            if not self._seen:
                return None
            oldest = min(self._seen.values())
        return max(0.0, oldest + quiet - time.monotonic())


def _watch_shortfall(roots: list[Path]) -> str | None:
    """Why the native observer does not cover ``roots`` (fewer inotify watches held by this
    process than folders to watch), or None. Linux only; elsewhere nothing to count."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return None
    held = 0
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == "anon_inode:inotify":
                held += sum(line.startswith("inotify wd:") for line in (Path("/proc/self/fdinfo") / fd.name)
                            .read_text().splitlines())
        except OSError:
            continue
    wanted = 1 + sum(1 + sum(len(dirs) for _, dirs, _ in os.walk(r)) for r in roots[1:])
    if held >= wanted:
        return None
    return (f"inotify watch limit reached: {held} of {wanted} folders watched; raise "
            "fs.inotify.max_user_watches to use native events")
