"""``distill init``: start from now.

Every transcript that exists now is marked read up to its last complete line; only what is
appended later is distilled. Files that appear later are new sessions and are read from byte 0.
A line still being written at ``init`` time is read once it is complete (it ends after "now").
"""

from __future__ import annotations

import os
from collections import Counter

from ..config import Settings
from ..errors import DistillError
from ..model import InitResult
from .cursor import HEAD_BYTES, Cursor, file_key, head_hash, new_entry
from .discover import discover, printable
from .ledger import state_lock

BACK_BLOCK = 1 << 16


def last_line_end(fd: int, size: int, max_line: int) -> tuple[int, bool]:
    """Offset just past the last newline, searching back at most ``max_line`` bytes.

    Returns ``(offset, inside_long_line)``: if no newline is found within ``max_line`` bytes,
    the file ends inside an over-long line, which is to be skipped up to its newline.
    """
    pos = size
    while pos > 0 and size - pos <= max_line:
        n = min(BACK_BLOCK, pos)
        block = os.pread(fd, n, pos - n)
        i = block.rfind(b"\n")
        if i >= 0:
            return pos - n + i + 1, False
        pos -= n
    return (0, False) if pos == 0 else (size, True)


def init_cursor(settings: Settings) -> InitResult:
    with state_lock(settings):
        cursor = Cursor.load(settings.state.cursor)
        pending = sorted(cursor.pending_batch_ids())
        if pending:
            raise DistillError(
                f"{len(pending)} batch(es) are pending ({', '.join(pending)}); commit or abort them "
                "(`distill commit|abort --batch-file F`) before `distill init`"
            )
        marked = nbytes = 0
        counters: Counter = Counter()
        errors: list[str] = []
        for sf in discover(settings, counters, errors):
            try:
                fd = os.open(sf.path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # gone since it was listed
            except OSError as exc:  # left unmarked: read from byte 0 once it can be
                counters["file_unreadable"] += 1
                errors.append(f"{printable(sf.path)} cannot be read ({exc.strerror or exc}), so it was not marked; "
                              "fix its permissions and `distill run` reads it from its start (or run `distill init` "
                              "again first to skip its history)")
                continue
            try:
                st = os.fstat(fd)
                key = file_key(st)
                offset, skip = last_line_end(fd, st.st_size, settings.max_line_bytes)
                entry = cursor.files.get(key) or new_entry(sf.path, sf.agent, None if sf.format == "auto" else sf.format)
                head_len = min(HEAD_BYTES, offset)
                nbytes += max(0, offset - entry["offset"]) if key in cursor.files else offset
                entry.update(path=sf.path, agent=sf.agent, offset=offset, skip=skip, pending={},
                             head=head_hash(fd, head_len), headLen=head_len, size=st.st_size,
                             mtime=st.st_mtime_ns)
                entry.pop("rewritten", None)
                entry.pop("archived", None)
                cursor.files[key] = entry
                marked += 1
            finally:
                os.close(fd)
        cursor.save()
    return InitResult(cursor_path=str(cursor.path), tracked_files=len(cursor.files), marked_files=marked,
                      marked_bytes=nbytes, counters=dict(counters), errors=errors)
