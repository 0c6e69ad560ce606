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

# Small enough that a block stays in a core's L2 cache while its lines are scanned (a 1 MiB
# block measured twice as slow to read on a 512 KiB-L2 machine); large enough that a read
# costs little per byte.
BLOCK_SIZE = 1 << 18

_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.isspace() counts as space


class TailReader:
    """Iterate the complete lines of ``fd`` in ``[start, stop)``.

    ``lines()`` gives ``(line, start, end)``; ``spans()`` gives the same lines without copying
    them out of the block they were read in (most lines of a transcript are never decoded,
    so copying them would be most of the work). ``line`` excludes the newline; ``[start,
    end)`` includes it. Blank lines are skipped.
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
        for buf, s, e, start, end in self.spans():
            yield (buf if s == 0 and e == len(buf) else buf[s:e]), start, end

    def spans(self) -> Iterator[tuple[bytes, int, int, int, int]]:
        """``(buf, s, e, start, end)``: the line is ``buf[s:e]``, its file range ``[start, end)``.

        ``buf`` is only valid until the next step: a consumer that keeps a line copies it."""
        off = self.start
        pieces: list[bytes] = []  # the partial line carried over from earlier blocks
        carried = 0
        skipping = self.skip_first
        max_line = self.max_line
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
            find = chunk.find
            i = find(b"\n", p)
            if pieces and i >= 0:  # the line begun in earlier blocks ends here
                line = b"".join(pieces) + chunk[p:i]
                line_start = chunk_start - carried
                pieces, carried = [], 0
                p = i + 1
                self.end = chunk_start + p
                if len(line) > max_line:
                    self.too_long += 1
                elif line and not line.isspace():
                    yield line, 0, len(line), line_start, self.end
                i = find(b"\n", p)
            while i >= 0:
                s, p = p, i + 1
                self.end = chunk_start + p
                if i - s > max_line:
                    self.too_long += 1
                elif i > s and (chunk[s] not in _WHITESPACE or not chunk[s:i].isspace()):
                    yield chunk, s, i, chunk_start + s, self.end
                i = find(b"\n", p)
            if p < len(chunk):
                rest = chunk[p:] if p else chunk
                if carried + len(rest) > max_line:
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
                yield line, 0, len(line), line_start, off
