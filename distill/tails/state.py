"""The state directory: every path in it, named once.

A state directory is shared by cron, the daemon, backfill, hooks and the commands a person
types, each from its own process; they meet only through these files. So no module joins a
path under the state directory itself: it asks :class:`StateDir`, and a file's name and
place can be read (and changed) here alone.

Stdlib only: ``distill enqueue`` (an agent hook's fast path) uses it for the queue.
``config.toml`` is found by the settings core (``distill.settings.core.config_file``), since
it may name the state directory itself.
"""

from __future__ import annotations

import os
from pathlib import Path


class StateDir:
    """The paths of one state directory (nothing is created or read here)."""

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"StateDir({str(self.root)!r})"

    # --- the main cursor and the lock every run / commit / init / abort holds
    @property
    def cursor(self) -> Path:
        """``cursor.json``; its digests of committed turns live beside it (:meth:`seen_dir`)."""
        return self.root / "cursor.json"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def last_run(self) -> Path:
        """What ``distill status`` shows as the last run (informational)."""
        return self.root / "last-run.json"

    # --- batches: pending at the top, then done/ or aborted/
    @property
    def batches(self) -> Path:
        return self.root / "batches"

    @property
    def done(self) -> Path:
        return self.batches / "done"

    @property
    def aborted(self) -> Path:
        return self.batches / "aborted"

    def batch(self, batch_id: str) -> Path:
        return self.batches / f"{batch_id}.json"

    # --- the queue (its inbox/processing/done/failed folders are the queue's own layout)
    @property
    def queue(self) -> Path:
        return self.root / "queue"

    # --- the daemon, the token budget, backfill, hooks
    @property
    def worker_lock(self) -> Path:
        return self.root / "worker.lock"

    @property
    def usage(self) -> Path:
        return self.root / "usage.json"

    @property
    def backfill_plan(self) -> Path:
        """Per file, where the main cursor stood when backfill first met it."""
        return self.root / "backfill.json"

    @property
    def backfill_cursor(self) -> Path:
        return self.root / "backfill-cursor.json"

    @property
    def backfill_lock(self) -> Path:
        return self.root / "backfill.lock"

    def hook_manifest(self, agent: str) -> Path:
        """What ``distill hooks install`` changed for an agent, so ``uninstall`` can undo it."""
        return self.root / "hooks" / f"{agent}.json"


# Paths beside a file rather than under the root: they follow a batch or a cursor wherever it
# lives (a batch moves to done/, backfill has its own cursor).

def seen_dir(cursor_path: str | os.PathLike[str]) -> Path:
    """``<cursor stem>.seen/``: digests of the turns committed from each file."""
    p = Path(cursor_path)
    return p.with_name(p.stem + ".seen")


def noop_file(cursor_path: str | os.PathLike[str]) -> Path:
    """``<cursor stem>.noop``: what the files and the state looked like after the last run that
    found nothing (:func:`distill.tails.ledger.create_batch` skips the next walk if unchanged)."""
    p = Path(cursor_path)
    return p.with_name(p.stem + ".noop")


def chunks_file(batch_file: str | os.PathLike[str]) -> Path:
    """``<batch>.chunks``: the batch's per-chunk progress."""
    return Path(batch_file).with_suffix(".chunks")


def distilling_lock(batch_file: str | os.PathLike[str]) -> Path:
    """``.<batch>.distill.lock``: held while one process distils the batch."""
    p = Path(batch_file)
    return p.with_name(f".{p.stem}.distill.lock")
