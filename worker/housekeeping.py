"""Chores between tasks: prune old ``done/`` entries, compact the store now and then, and
once an hour fold the recalls counted in the access log into the rows and archive what has
gone cold (``MemoryStore.archive_stale``: ``state: archived``, never deleted; ``distill
memories restore ID`` brings one back).

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
ARCHIVE_EVERY_S = 3600.0


class Housekeeping:
    def __init__(self, settings: Settings, queue: Queue):
        self.settings = settings
        self.queue = queue
        self._last_prune = 0.0
        self._last_compact = time.monotonic()
        self._last_archive = time.monotonic()
        self._added_since_compact = 0

    def note_added(self, memories: int) -> None:
        self._added_since_compact += memories

    def due_in(self) -> float:
        now = time.monotonic()
        next_prune = min(self._last_prune + PRUNE_EVERY_S, self._last_archive + ARCHIVE_EVERY_S) - now
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
        if now - self._last_archive >= ARCHIVE_EVERY_S:
            self._last_archive = now
            self.archive()
        if self._added_since_compact and now - self._last_compact >= self.settings.worker_compact_interval:
            self._last_compact = now
            self.compact()

    def archive(self) -> None:
        """Fold counted recalls in and archive stale rows; a store with no table is left alone."""
        try:
            from distill.store import MemoryStore

            if MemoryStore.open_existing(self.settings, check_embedder=False) is None:
                return
            archived = MemoryStore.open(self.settings, check_embedder=False).archive_stale()
            if archived:
                log.info("housekeeping: archived %d memories gone cold (restore: distill memories restore ID)",
                         len(archived))
        except Exception as exc:  # noqa: BLE001 - retried next hour, never fatal
            log.warning("housekeeping: archive pass failed (will retry later): %s: %s", type(exc).__name__, exc)

    def compact(self) -> None:
        try:
            from distill.store import MemoryStore

            started = time.monotonic()
            MemoryStore.open(self.settings).compact()
            self._added_since_compact = 0
            log.info("housekeeping: store compacted in %.2f s", time.monotonic() - started)
        except Exception as exc:  # noqa: BLE001 - a failed compaction is retried next time, never fatal
            log.warning("housekeeping: store compaction failed (will retry later): %s: %s", type(exc).__name__, exc)
