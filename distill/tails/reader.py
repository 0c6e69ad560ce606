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
from collections.abc import Callable, Iterator

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

    def spans(self, keep: Callable[[bytes, int, int], bool] | None = None,
              ) -> Iterator[tuple[bytes, int, int, int, int]]:
        """``(buf, s, e, start, end)``: the line is ``buf[s:e]``, its file range ``[start, end)``.

        ``keep(buf, s, e)``: a bytes pre-test run here, on each line in its block; the lines it
        rejects are passed over (they still count as read), which spares handing out the bulk.

        ``buf`` is the block the line was read in: a consumer that keeps a line copies it out
        rather than hold the whole block. A line cut by the end of a block is read again from
        its start with the next block (growing the read up to ``max_line``), so every line is
        whole in one block and never pieced together."""
        off = self.start  # where the block starts in the file
        want = self.block_size
        skipping = self.skip_first
        max_line = self.max_line
        while off < self.stop:
            n = min(want, self.stop - off)
            chunk = os.pread(self.fd, n, off)
            if not chunk:
                break  # the file shrank under us: stop at what is safe
            last = len(chunk) < n or off + len(chunk) >= self.stop  # nothing to read after it
            p = 0
            if skipping:
                i = chunk.find(b"\n")
                if i < 0:
                    off += len(chunk)
                    self.end = off
                    want = self.block_size
                    continue
                skipping = False
                self.in_long_line = False
                p = i + 1
                self.end = off + p
            find = chunk.find
            i = find(b"\n", p)
            while i >= 0:
                s, p = p, i + 1
                self.end = off + p
                if i - s > max_line:
                    self.too_long += 1
                elif i > s and (chunk[s] not in _WHITESPACE or not chunk[s:i].isspace()) and (
                        keep is None or keep(chunk, s, i)):
                    yield chunk, s, i, off + s, self.end
                i = find(b"\n", p)
            rest = len(chunk) - p  # an incomplete line at the end of the block
            if rest == 0:
                off += len(chunk)
                want = self.block_size
            elif rest > max_line:  # too long already: skip to its newline
                self.too_long += 1
                skipping = True
                self.in_long_line = True
                off += len(chunk)
                self.end = off
                want = self.block_size
            elif last:
                if self.final:  # an archive: nobody will complete its last line
                    self.end = off + len(chunk)
                    if not chunk[p:].isspace() and (keep is None or keep(chunk, p, len(chunk))):
                        yield chunk, p, len(chunk), off + p, self.end
                break
            else:  # read it again from its start, further
                off += p
                want = max(self.block_size, min(2 * rest, max_line + 1))
