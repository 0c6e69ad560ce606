"""The one way this project writes a file: tmp in the same folder → fsync → rename → fsync dir.

A reader (or a process restarted after SIGKILL) sees either the old file or the new one,
never a torn one. When the write or the rename fails, the temp file is removed and the error
raised as it was: the target is untouched and nothing is left beside it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `distill enqueue` (a hook's fast path) must not pay for typing or pathlib
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath


def fsync_dir(path: StrPath) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: StrPath, data: bytes, *, durable: bool = True) -> None:
    """``durable=False`` skips both fsyncs: still never torn, but may be lost with the machine
    (for informational files such as ``last-run.json``, so a no-op run stays cheap)."""
    folder, name = os.path.split(os.fspath(path))
    folder = folder or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # a full disk, a folder in the way, an interrupt: leave no temp file behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(folder)


def remove_stale_tmp(folder: StrPath) -> int:
    """Remove the temp files of writers that died mid-write (SIGKILL between open and rename):
    a temp file's name carries its writer's pid, and one whose writer still runs is kept."""
    removed = 0
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    for name in names:
        parts = name.rsplit(".", 2)
        if not (name.startswith(".") and len(parts) == 3 and parts[2] == "tmp" and parts[1].isdigit()):
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # its writer is alive (or a process reusing its pid): left alone
        except ProcessLookupError:
            pass
        except OSError:
            continue  # a live process of another user
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def write_json(path: StrPath, obj: Any, *, indent: bool = True) -> None:
    import orjson  # here, not at the top: `distill enqueue` (a hook's fast path) writes no JSON with it

    option = orjson.OPT_INDENT_2 if indent else 0
    write_bytes(path, orjson.dumps(obj, option=option | orjson.OPT_NON_STR_KEYS) + b"\n")


def move(src: StrPath, dst: StrPath) -> None:
    """Rename ``src`` to ``dst`` (same filesystem) and make the rename durable."""
    src_dir, dst_dir = os.path.dirname(os.fspath(src)) or ".", os.path.dirname(os.fspath(dst)) or "."
    os.makedirs(dst_dir, exist_ok=True)
    os.replace(src, dst)
    fsync_dir(dst_dir)
    if os.path.abspath(src_dir) != os.path.abspath(dst_dir):
        fsync_dir(src_dir)
