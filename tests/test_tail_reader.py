"""TailReader on raw bytes: complete lines only, over-long lines skipped without being held."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from distill.tails.reader import TailReader


def read_all(path, start=0, *, max_line=1 << 20, block=1 << 20, skip_first=False, final=False):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        r = TailReader(fd, start, size, max_line=max_line, skip_first=skip_first, final=final, block_size=block)
        lines = list(r.lines())
        return lines, r
    finally:
        os.close(fd)


def test_complete_lines_and_exact_ranges(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n\n{"b":2}\n{"c":')
    lines, r = read_all(p)
    assert lines == [(b'{"a":1}', 0, 8), (b'{"b":2}', 9, 17)]
    assert r.end == 17  # the unterminated last line waits
    assert not r.in_long_line and r.too_long == 0


def test_resume_from_end_reads_only_new_lines(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n{"c":')
    _, r = read_all(p)
    with open(p, "ab") as f:
        f.write(b'3}\n{"d":4}\n')
    lines, r2 = read_all(p, r.end)
    assert [l for l, _, _ in lines] == [b'{"c":3}', b'{"d":4}']
    assert r2.end == p.stat().st_size


@pytest.mark.parametrize("block", [3, 7, 64, 1 << 20])
def test_lines_spanning_blocks(tmp_path, block):
    data = b"".join(b'{"i":%d,"pad":"%s"}\n' % (i, b"x" * (i * 7 % 50)) for i in range(200))
    p = tmp_path / "a.jsonl"
    p.write_bytes(data)
    lines, r = read_all(p, block=block)
    assert [l for l, _, _ in lines] == data.split(b"\n")[:-1]
    assert all(data[s:e] == l + b"\n" for l, s, e in lines)
    assert r.end == len(data)


def test_over_long_terminated_line_is_skipped_and_counted(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n' + b"x" * 5000 + b'\n{"b":2}\n')
    lines, r = read_all(p, max_line=1000, block=256)
    assert [l for l, _, _ in lines] == [b'{"a":1}', b'{"b":2}']
    assert r.too_long == 1 and r.end == p.stat().st_size


def test_unterminated_over_long_line_is_not_waited_on(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n' + b"x" * 5000)
    lines, r = read_all(p, max_line=1000, block=256)
    assert [l for l, _, _ in lines] == [b'{"a":1}']
    assert r.too_long == 1 and r.in_long_line and r.end == p.stat().st_size
    # the writer finishes the long line and appends another: resume skips the rest, counts nothing twice
    with open(p, "ab") as f:
        f.write(b"y" * 3000 + b'\n{"b":2}\n')
    lines, r2 = read_all(p, r.end, max_line=1000, block=256, skip_first=True)
    assert [l for l, _, _ in lines] == [b'{"b":2}']
    assert r2.too_long == 0 and not r2.in_long_line


def test_final_reads_the_unterminated_last_line_of_an_archive(tmp_path):
    p = tmp_path / "a.jsonl.reset.1"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    lines, r = read_all(p, final=True)
    assert [l for l, _, _ in lines] == [b'{"a":1}', b'{"b":2}']
    assert r.end == p.stat().st_size


def test_memory_stays_flat_on_a_large_file(tmp_path):
    """200 MB of lines (one of them 50 MB) read in a child process: peak RSS stays small."""
    p = tmp_path / "big.jsonl"
    line = b'{"type":"message","pad":"' + b"z" * 4000 + b'"}\n'
    with open(p, "wb") as f:
        for _ in range(20):
            f.write(line * 2500)  # 10 MB
        f.write(b"q" * (50 << 20) + b"\n")
    code = textwrap.dedent(f"""
        import os, resource
        from distill.tails.reader import TailReader
        fd = os.open({str(p)!r}, os.O_RDONLY)
        r = TailReader(fd, 0, os.fstat(fd).st_size, max_line=8 << 20)
        n = sum(1 for _ in r.lines())
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
        print(n, r.too_long, hwm)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    n, too_long, rss_kb = map(int, out)
    assert n == 50000 and too_long == 1
    assert rss_kb < 120 * 1024, f"peak RSS {rss_kb} KiB"
