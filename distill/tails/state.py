"""The state directory: every path in it, named once.

A state directory is shared by cron, the daemon, backfill, hooks and the commands a person
types, each from its own process; they meet only through these files. So no module joins a
path under the state directory itself: it asks :class:`StateDir`, and a file's name and
place can be read (and changed) here alone.

Stdlib only, and no pathlib at import: ``distill enqueue`` (an agent hook's fast path) uses
it for the queue, whose folder is a ``str`` for that reason (pathlib, with the ``urllib.parse``
and ``ipaddress`` it loads, is ≈ 9 ms of the hook's start-up); every other path is a ``Path``.
``config.toml`` is found by the settings core (``distill.settings.core.config_file``), since
it may name the state directory itself.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the hook's fast path (`distill enqueue`) imports this module: no typing
if TYPE_CHECKING:
    from pathlib import Path


def _path(*parts: str | os.PathLike[str]) -> Path:
    from pathlib import Path  # here, not at the top: see the module's docstring

    return Path(*parts)


_CURSOR = "cursor.json"


class StateDir:
    """The paths of one state directory (nothing is created or read here)."""

    __slots__ = ("_root",)

    def __init__(self, root: str | os.PathLike[str]):
        self._root = os.fspath(root)

    def __repr__(self) -> str:
        return f"StateDir({self._root!r})"

    @property
    def root(self) -> Path:
        return _path(self._root)

    # --- the main cursor and the lock every run / commit / init / abort holds
    @property
    def cursor(self) -> Path:
        """``cursor.json``; its digests of committed turns live beside it (:meth:`seen_dir`)."""
        return _path(self._root, _CURSOR)

    @property
    def noop_check(self) -> str:
        """The main cursor's :func:`check_file`, as a ``str`` (read before pathlib loads)."""
        return check_file(os.path.join(self._root, _CURSOR))

    @property
    def lock(self) -> Path:
        return _path(self._root, ".lock")

    @property
    def last_run(self) -> Path:
        """What ``distill status`` shows as the last run (informational)."""
        return _path(self._root, "last-run.json")

    # --- batches: pending at the top, then done/ or aborted/
    @property
    def batches(self) -> Path:
        return _path(self._root, "batches")

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
    def queue(self) -> str:
        """A ``str``: see the module's docstring."""
        return os.path.join(self._root, "queue")

    # --- the daemon, the token budget, backfill, hooks
    @property
    def worker_lock(self) -> Path:
        return _path(self._root, "worker.lock")

    @property
    def usage(self) -> Path:
        return _path(self._root, "usage.json")

    def access_log(self, table: str) -> Path:
        """Recalls not yet folded into ``table``'s rows (``distill.store.lifecycle.AccessLog``)."""
        return _path(self._root, "access", f"{table}.jsonl")

    @property
    def backfill_plan(self) -> Path:
        """Per file, where the main cursor stood when backfill first met it."""
        return _path(self._root, "backfill.json")

    @property
    def backfill_cursor(self) -> Path:
        return _path(self._root, "backfill-cursor.json")

    @property
    def backfill_lock(self) -> Path:
        return _path(self._root, "backfill.lock")

    def hook_manifest(self, agent: str) -> Path:
        """What ``distill hooks install`` changed for an agent, so ``uninstall`` can undo it."""
        return _path(self._root, "hooks", f"{agent}.json")


# Paths beside a file rather than under the root: they follow a batch or a cursor wherever it
# lives (a batch moves to done/, backfill has its own cursor).

def seen_dir(cursor_path: str | os.PathLike[str]) -> Path:
    """``<cursor stem>.seen/``: digests of the turns committed from each file."""
    p = _path(cursor_path)
    return p.with_name(p.stem + ".seen")


def noop_file(cursor_path: str | os.PathLike[str]) -> Path:
    """``<cursor stem>.noop``: what the files and the state looked like after the last run that
    found nothing (:func:`distill.tails.ledger.create_batch` skips the next walk if unchanged)."""
    p = _path(cursor_path)
    return p.with_name(p.stem + ".noop")


def check_file(cursor_path: str | os.PathLike[str]) -> str:
    """``<cursor stem>.check``: what the no-op check compares before the core loads
    (:mod:`distill.tails.noopcheck`); written beside :func:`noop_file` by the same runs."""
    folder, name = os.path.split(os.fspath(cursor_path))
    return os.path.join(folder, name.rpartition(".")[0] + ".check")


def chunks_file(batch_file: str | os.PathLike[str]) -> Path:
    """``<batch>.chunks``: the batch's per-chunk progress."""
    return _path(batch_file).with_suffix(".chunks")


def distilling_lock(batch_file: str | os.PathLike[str]) -> Path:
    """``.<batch>.distill.lock``: held while one process distils the batch."""
    p = _path(batch_file)
    return p.with_name(f".{p.stem}.distill.lock")
