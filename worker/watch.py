"""File events for the worker: the inbox wakes it; session files are enqueued once quiet.

inotify (watchdog's native observer) is preferred; where it cannot start (no inotify, the
watch limit reached, a filesystem without events) the polling observer takes over and the
choice is logged. ``worker_poll`` forces polling. Either way the worker also rescans the
inbox now and then, so a missed event only delays a task, never strands it.

A session file written all at once may produce only a "created" event, so every event kind
counts as activity; the cursor (not this module) decides what is new, reading a file first
seen from byte 0.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.polling import PollingObserver

log = logging.getLogger("distill-worker")
POLL_SECONDS = 1.0


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
        self._observer = None
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self) -> str:
        """Start watching; return a description of the observer chosen (for the log)."""
        if self.poll:
            self._observer = self._start(PollingObserver(timeout=POLL_SECONDS))
            self.mode = "polling (worker_poll is set)"
            return self.mode
        try:
            from watchdog.observers import Observer

            self._observer = self._start(Observer())
            self.mode = f"native events ({type(self._observer).__name__})"
            if isinstance(self._observer, PollingObserver):
                self.mode = "polling (no native file events on this platform)"
        except (OSError, RuntimeError) as exc:
            self._observer = self._start(PollingObserver(timeout=POLL_SECONDS))
            self.mode = f"polling (native file events unavailable: {exc})"
        return self.mode

    def _start(self, observer):
        observer.daemon = True
        observer.schedule(_Wake(self.wake), str(self.inbox), recursive=False)
        for root in self.sources:
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
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None

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
