"""The one cross-process lock: ``flock`` on a file, with the holder's pid written inside.

Used for the state directory (``<state>/.lock``: run, commit, init, backfill), for store
writes (``<db>/.distill-write.lock``) and for the single worker (``<state>/worker.lock``).
The kernel drops a flock when its holder dies, so SIGKILL never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from .errors import LockBusy


class FileLock:
    def __init__(self, path: Path, *, purpose: str = "this state directory"):
        self.path = Path(path)
        self.purpose = purpose
        self._fd: int | None = None

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def acquire(self, timeout: float | None = None) -> "FileLock":
        """Take the lock. ``timeout=None`` waits forever; ``0`` fails at once."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockBusy(
                        f"{self.path} is held by {self.holder()} ({self.purpose}); "
                        "wait for it to finish or stop that process, then try again"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FileLock":
        if self._fd is None:
            self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
