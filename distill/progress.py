"""Progress of long bulk work (import, re-embed, backfill) on stderr: done / total, rate, time left.

Redrawn in place on a terminal; plain lines at most every 5 s otherwise (a log, a pipe). It
never writes to stdout, so ``--json`` output stays one object.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def eta(done: float, total: float, elapsed: float) -> str:
    """``rate`` and ``time left`` as people read them: ``95/s, 3m 03s left``."""
    rate = done / elapsed if elapsed > 0 else 0.0
    if rate <= 0 or done >= total:
        return f"{rate:,.0f}/s"
    left = int((total - done) / rate)
    return f"{rate:,.0f}/s, {_duration(left)} left"


def _duration(seconds: int) -> str:
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds}s"


class RowProgress:
    """``progress(done)`` after each step; ``finish()`` once at the end."""

    def __init__(self, label: str, total: int, unit: str = "rows", stream: TextIO | None = None):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self._last = 0.0
        self.done = 0

    def __call__(self, done: int) -> None:
        self.done = done
        now = time.monotonic()
        if now - self._last < (0.2 if self.tty else 5.0) and done < self.total:
            return
        self._last = now
        frac = done / self.total if self.total else 1.0
        text = (f"{self.label}: {done:,}/{self.total:,} {self.unit} ({frac:.1%}), "
                f"{eta(done, self.total, now - self.started)}")
        self.stream.write(f"\r{text}   " if self.tty else text + "\n")
        self.stream.flush()

    def step(self, done: int, total: int) -> None:
        """The ``progress(done, total)`` callback the store's bulk writes take."""
        self.total = total
        self(done)

    def finish(self) -> None:
        if self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()
