"""The one way this project writes a file: tmp in the same folder → fsync → rename → fsync dir.

A reader (or a process restarted after SIGKILL) sees either the old file or the new one,
never a torn one.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # `distill enqueue` (a hook's fast path) must not pay for importing typing
if TYPE_CHECKING:
    from typing import Any


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """``durable=False`` skips both fsyncs: still never torn, but may be lost with the machine
    (for informational files such as ``last-run.json``, so a no-op run stays cheap)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def write_json(path: Path, obj: Any, *, indent: bool = True) -> None:
    import orjson  # here, not at the top: `distill enqueue` (a hook's fast path) writes no JSON with it

    option = orjson.OPT_INDENT_2 if indent else 0
    write_bytes(path, orjson.dumps(obj, option=option | orjson.OPT_NON_STR_KEYS) + b"\n")


def move(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` (same filesystem) and make the rename durable."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
