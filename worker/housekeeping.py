"""Chores between tasks: prune old ``done/`` entries, compact the store now and then.

Compaction merges the small appends each task makes; it runs only after new memories were
added and at most every ``worker_compact_interval`` seconds, between tasks, so it never
competes with a run. The store itself keeps old versions long enough for concurrent readers.
"""

from __future__ import annotations

import logging
import time

from distill.config import Settings
from distill.queue import Queue

log = logging.getLogger("distill-worker")
PRUNE_EVERY_S = 600.0


class Housekeeping:
    def __init__(self, settings: Settings, queue: Queue):
        self.settings = settings
        self.queue = queue
        self._last_prune = 0.0
        self._last_compact = time.monotonic()
        self._added_since_compact = 0

    def note_added(self, memories: int) -> None:
        self._added_since_compact += memories

    def due_in(self) -> float:
        now = time.monotonic()
        next_prune = self._last_prune + PRUNE_EVERY_S - now
        if self._added_since_compact:
            return max(0.0, min(next_prune, self._last_compact + self.settings.worker_compact_interval - now))
        return max(0.0, next_prune)

    def run(self) -> None:
        now = time.monotonic()
        if now - self._last_prune >= PRUNE_EVERY_S:
            self._last_prune = now
            removed = self.queue.prune("done", self.settings.worker_done_retention_days * 86400)
            if removed:
                log.info("housekeeping: pruned %d done tasks older than %g days", removed,
                         self.settings.worker_done_retention_days)
        if self._added_since_compact and now - self._last_compact >= self.settings.worker_compact_interval:
            self._last_compact = now
            self.compact()

    def compact(self) -> None:
        try:
            from distill.store import MemoryStore

            started = time.monotonic()
            MemoryStore.open(self.settings).compact()
            self._added_since_compact = 0
            log.info("housekeeping: store compacted in %.2f s", time.monotonic() - started)
        except Exception as exc:  # noqa: BLE001 - a failed compaction is retried next time, never fatal
            log.warning("housekeeping: store compaction failed (will retry later): %s: %s", type(exc).__name__, exc)
