"""Complete lines of a transcript from a byte offset, read in large blocks with flat memory.

A transcript may be gigabytes long and its last line may still be being written, so:
- only complete lines (ending in ``\\n``) are handed out; an unterminated last line waits for
  the next run (except in an archive, which nobody appends to any more: see ``final``);
- a line longer than ``max_line`` is never held in memory nor waited on: the reader scans
  forward to its newline, counts it once, and moves on. If the file ends inside such a line,
  ``in_long_line`` says so, and the next read (``skip_first=True``) drops the rest of it;
- ``end`` is always a safe resume point: the offset just past the last line handed out
  (or skipped), so a consumer that stops early resumes exactly there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

BLOCK_SIZE = 1 << 20


class TailReader:
    """Iterate ``(line, start, end)`` over the complete lines of ``fd`` in ``[start, stop)``.

    ``line`` excludes the newline; ``[start, end)`` includes it. Blank lines are skipped.
    """

    def __init__(self, fd: int, start: int, stop: int, *, max_line: int, skip_first: bool = False,
                 final: bool = False, block_size: int = BLOCK_SIZE):
        self.fd = fd
        self.start = start
        self.stop = stop
        self.max_line = max_line
        self.skip_first = skip_first
        self.final = final
        self.block_size = block_size
        self.end = start
        self.in_long_line = skip_first
        self.too_long = 0

    def lines(self) -> Iterator[tuple[bytes, int, int]]:
        off = self.start
        pieces: list[bytes] = []  # the partial line carried over from earlier blocks
        carried = 0
        skipping = self.skip_first
        while off < self.stop:
            chunk = os.pread(self.fd, min(self.block_size, self.stop - off), off)
            if not chunk:
                break  # the file shrank under us: stop at what is safe
            chunk_start = off
            off += len(chunk)
            p = 0
            if skipping:
                i = chunk.find(b"\n")
                if i < 0:
                    self.end = off
                    continue
                skipping = False
                self.in_long_line = False
                p = i + 1
                self.end = chunk_start + p
            while True:
                i = chunk.find(b"\n", p)
                if i < 0:
                    break
                if pieces:
                    line = b"".join(pieces) + chunk[p:i]
                    line_start = chunk_start - carried
                    pieces, carried = [], 0
                else:
                    line = chunk[p:i]
                    line_start = chunk_start + p
                p = i + 1
                line_end = chunk_start + p
                if len(line) > self.max_line:
                    self.too_long += 1
                    self.end = line_end
                    continue
                self.end = line_end
                if line and not line.isspace():
                    yield line, line_start, line_end
            if p < len(chunk):
                rest = chunk[p:] if p else chunk
                if carried + len(rest) > self.max_line:
                    # too long already: drop what we hold and skip to its newline
                    self.too_long += 1
                    pieces, carried = [], 0
                    skipping = True
                    self.in_long_line = True
                    self.end = off
                else:
                    pieces.append(rest)
                    carried += len(rest)
        if self.final and pieces and not skipping:
            line = b"".join(pieces)
            line_start = off - carried
            self.end = off
            if not line.isspace():
                yield line, line_start, off
