"""The task queue: ``<state>/queue/{inbox,processing,done,failed}/<task>.json``.

Every move between folders is one atomic rename, so a task is always in exactly one folder
and a worker killed at any moment leaves it either where it was or where it was going. A
task claimed by a worker that died stays in ``processing/`` until the next worker returns it
to the inbox, counted as an attempt (:meth:`worker.tasks.TaskLoop.recover`). Task files are untrusted input: each one is validated
here (:class:`Task`) and, for its path and agent, by :mod:`distill.roots`; a file that fails
goes to ``failed/`` with the reason and never stops the worker.

The task's fields are defined once, in :mod:`distill.task` (stdlib: ``distill enqueue`` writes
tasks without pydantic); :class:`Task` is built from that table.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .atomic import fsync_dir, remove_stale_tmp, write_json
from .task import FIELDS, REQUIRED, task_filename

FOLDERS = ("inbox", "processing", "done", "failed")
MAX_TASK_BYTES = 64 * 1024  # a real task is ~250 bytes; anything huge is not one
RAW_KEPT = 2000


def _field(kind: Any, default: Any, rules: dict) -> tuple[Any, Any]:
    rules = dict(rules)
    choices = rules.pop("choices", None)
    return (Literal[choices] if choices else kind), Field(... if default is REQUIRED else default, **rules)


Task = create_model("Task", __config__=ConfigDict(extra="forbid"),
                    **{name: _field(*spec) for name, spec in FIELDS.items()})  # type: ignore[call-overload]


class Entry(BaseModel):
    """One file in a queue folder: its path and, if it parsed, its task."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    task: Task | None = None
    problem: str | None = None  # why the file is not a valid task
    irregular: bool = False  # not a regular file (FIFO, directory, symlink, …): never opened


def now_ms() -> int:
    return int(time.time() * 1000)


class Queue:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.dirs = {name: self.root / name for name in FOLDERS}

    def ensure(self) -> None:
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)

    @property
    def inbox(self) -> Path:
        return self.dirs["inbox"]

    def names(self, folder: str) -> list[str]:
        """Task files in ``folder``, oldest first; temporary files of a writer are skipped."""
        try:
            names = os.listdir(self.dirs[folder])
        except FileNotFoundError:
            return []
        return sorted(n for n in names if n.endswith(".json") and not n.startswith("."))

    def read(self, path: Path) -> Entry:
        """Only a regular file is opened, and never through a symlink or in a way that can
        block (a FIFO would wait for a writer for ever)."""
        try:
            kind = _not_regular(os.lstat(path).st_mode)
            if kind:
                return Entry(path=path, problem=f"queue entry is {kind}, not a regular task file", irregular=True)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return Entry(path=path, problem="gone")
        except OSError as exc:
            return Entry(path=path, problem=f"cannot read task file: {exc.strerror or exc}")
        try:
            kind = _not_regular(os.fstat(fd).st_mode)  # swapped for something else since the lstat
            if kind:
                return Entry(path=path, problem=f"queue entry is {kind}, not a regular task file", irregular=True)
            with open(fd, "rb", closefd=False) as fh:
                raw = fh.read(MAX_TASK_BYTES + 1)
        except OSError as exc:
            return Entry(path=path, problem=f"cannot read task file: {exc.strerror or exc}")
        finally:
            os.close(fd)
        if len(raw) > MAX_TASK_BYTES:
            return Entry(path=path, problem=f"task file is larger than {MAX_TASK_BYTES} bytes")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return Entry(path=path, problem=f"task file is not valid JSON: {exc}")
        try:
            return Entry(path=path, task=Task.model_validate(data))
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'task'}: {e['msg']}" for e in exc.errors())
            return Entry(path=path, problem=f"task file does not match the task schema: {detail}")

    def entries(self, folder: str) -> list[Entry]:
        out = []
        for name in self.names(folder):
            entry = self.read(self.dirs[folder] / name)
            if entry.problem != "gone":
                out.append(entry)
        return out

    def put(self, task: Task) -> Path:
        path = self.inbox / task_filename(task.created_at_ms, task.id)
        write_json(path, task.model_dump(exclude_none=True))
        return path

    def claim(self, paths: list[Path]) -> list[Path]:
        """Rename inbox files into ``processing/``; files another worker took first are left out."""
        claimed = []
        for src in paths:
            dst = self.dirs["processing"] / src.name
            try:
                self._rename(src, dst)
            except FileNotFoundError:
                continue
            claimed.append(dst)
        if claimed:
            self._sync("inbox", "processing")
        return claimed

    def finish(self, entries: list[tuple[Path, Task]], folder: str) -> list[Path]:
        """Write each task's final state into ``folder`` and drop its ``processing/`` file."""
        out = []
        for src, task in entries:
            dst = self.dirs[folder] / src.name
            write_json(dst, task.model_dump(exclude_none=True))
            _unlink(src)
            out.append(dst)
        if out:
            self._sync("processing")
        return out

    def file_away(self, paths: list[Path], folder: str) -> None:
        """Move files unchanged into ``folder`` (e.g. tasks coalesced into another), one dir sync."""
        moved = 0
        for src in paths:
            try:
                self._rename(src, self.dirs[folder] / src.name)
                moved += 1
            except FileNotFoundError:
                continue
        if moved:
            self._sync(folder, *{p.parent.name for p in paths})

    def retry(self, src: Path, task: Task) -> Path:
        """Back to the inbox with the updated attempts / not-before (written, then renamed)."""
        write_json(src, task.model_dump(exclude_none=True))
        dst = self.inbox / src.name
        self._rename(src, dst)
        self._sync("processing", "inbox")
        return dst

    def reject(self, src: Path, reason: str, *, irregular: bool = False) -> Path:
        """A file that is not a valid task: keep what it said (capped) and why, in ``failed/``.

        An ``irregular`` entry (see :meth:`read`) is never opened: it is renamed, as it is,
        to ``failed/<name>.not-a-file`` (a name no queue listing picks up) and its record
        holds only the reason."""
        dst = self.dirs["failed"] / (src.name if src.name.endswith(".json") else src.name + ".json")
        record: dict[str, Any] = {"error": reason, "rejected_at_ms": now_ms(), "raw": ""}
        if irregular:
            aside = self.dirs["failed"] / f"{src.name}.{now_ms()}.not-a-file"
            try:
                os.rename(src, aside)
                record["moved_to"] = str(aside)
            except FileNotFoundError:
                pass
            write_json(dst, record)
            self._sync(src.parent.name, "failed")
            return dst
        try:
            record["raw"] = _read_regular(src)[:RAW_KEPT].decode("utf-8", "replace")
        except OSError:
            pass
        write_json(dst, record)
        _unlink(src)
        self._sync(src.parent.name)
        return dst

    def remove_stale_tmp(self) -> int:
        """Temp files of writers killed mid-write, in every folder (see :func:`atomic.remove_stale_tmp`)."""
        return sum(remove_stale_tmp(d) for d in self.dirs.values())

    def prune(self, folder: str, older_than_s: float) -> int:
        cutoff = time.time() - older_than_s
        removed = 0
        for name in self.names(folder):
            path = self.dirs[folder] / name
            try:
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
            except OSError:  # a directory someone put there: left alone, never a crash
                continue
        if removed:
            self._sync(folder)
        return removed

    def counts(self) -> dict[str, int]:
        return {name: len(self.names(name)) for name in FOLDERS}

    def writable_problem(self) -> str | None:
        """Why the worker cannot use the queue folders, with what to do; None if it can."""
        for name, d in self.dirs.items():
            if not os.access(d, os.W_OK | os.X_OK):
                who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
                return (f"queue folder {d} is not writable by {who}; every task moves through {name}/, so make it "
                        f"writable (e.g. chown -R to the worker's user), or run the worker as its owner")
        return None

    def _rename(self, src: Path, dst: Path) -> None:
        """``os.replace``; a destination folder removed while the worker runs is made again
        (FileNotFoundError then means only that ``src`` is gone: another claimer took it)."""
        try:
            os.replace(src, dst)
        except FileNotFoundError:
            if not os.path.lexists(src) or dst.parent.is_dir():
                raise
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)

    def _sync(self, *folders: str) -> None:
        for folder in folders:
            fsync_dir(self.dirs[folder])


def _not_regular(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _read_regular(path: Path) -> bytes:
    """The head of a regular file, read without following a symlink or blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        if _not_regular(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, RAW_KEPT * 4)
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
