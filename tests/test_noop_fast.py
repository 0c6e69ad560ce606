"""The no-op that reads no cursor: after a run that found nothing, the next run over the same
files skips decoding the cursor (``<cursor stem>.noop``), and any change is still noticed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from distill.tails import ledger
from distill.tails.cursor import Cursor
from distill.tails.state import noop_file
from tests.tail_helpers import append, fact, header, msg, run, session, settings_for, texts


@pytest.fixture
def loads(monkeypatch):
    """How many times a run decoded the cursor."""
    calls = []
    real = Cursor.load.__func__

    def counted(cls, path):
        calls.append(path)
        return real(cls, path)

    monkeypatch.setattr(Cursor, "load", classmethod(counted))
    return calls


def settled(tmp_path):
    """Two transcripts, read and committed, then one run that found nothing (the digest kept)."""
    s = settings_for(tmp_path)
    a, b = session(tmp_path, name="a"), session(tmp_path, agent="ops", name="b")
    a.write_bytes(header("a") + msg(fact(1)))
    b.write_bytes(header("b") + msg(fact(2)))
    res, _ = run(s)
    ledger.commit_batch(s, Path(res.batch_file))
    assert run(s)[0].action == "noop"
    assert noop_file(s.state.cursor).is_file()
    return s, a, b


def test_an_unchanged_run_reads_no_cursor_and_says_noop(tmp_path, loads):
    s, _, _ = settled(tmp_path)
    loads.clear()
    res, _ = run(s)
    assert res.action == "noop" and res.batch_files == [] and loads == []
    assert res.cursor_path == str(s.state.cursor.absolute())


def grown(s, a, b):
    append(a, msg(fact(3), n=1))
    return lambda res, batch: texts(batch) == [fact(3)]


def new_file(s, a, b):
    session(s.agents_dir.parent, name="c").write_bytes(header("c") + msg(fact(4)))
    return lambda res, batch: texts(batch) == [fact(4)]


def renamed(s, a, b):
    a.rename(a.with_name("a2.jsonl"))
    return lambda res, batch: res.summary.counters.get("renamed") == 1 and batch is None


def truncated(s, a, b):
    a.write_bytes(header("a"))
    return lambda res, batch: res.summary.counters.get("truncated") == 1


def rewritten_same_size(s, a, b):
    st = a.stat()
    a.write_bytes(header("a") + msg(fact(5)))  # same length as fact(1)'s line, other words
    assert a.stat().st_size == st.st_size
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    return lambda res, batch: res.summary.counters.get("rewritten") == 1 and texts(batch) == [fact(5)]


def vanished(s, a, b):
    b.unlink()
    return lambda res, batch: res.summary.counters.get("deleted") == 1


def cursor_saved_elsewhere(s, a, b):
    c = Cursor.load(s.state.cursor)  # what a commit, abort or init in another process does
    c.save()
    return lambda res, batch: res.action == "noop"


def settings_changed(s, a, b):  # the run below narrows the allow-list
    return lambda res, batch: res.action == "noop"


@pytest.mark.parametrize("change", [grown, new_file, renamed, truncated, rewritten_same_size, vanished,
                                    cursor_saved_elsewhere, settings_changed])
def test_any_change_runs_the_full_walk(tmp_path, loads, change):
    s, a, b = settled(tmp_path)
    check = change(s, a, b)
    if change is settings_changed:
        s = s.replace(allowed_agent_ids="main")
    loads.clear()
    res, batch = run(s)
    assert len(loads) == 1, "the cursor was not read: the change went unnoticed"
    assert check(res, batch), (res, texts(batch))


def test_a_run_with_work_lists_the_files_once(tmp_path, monkeypatch):
    """The digest's discovery is handed to the walk: 10,000 files are not stat'ed twice."""
    s, a, _ = settled(tmp_path)
    append(a, msg(fact(3), n=1))
    stats = []
    real = os.stat

    def counted(path, *args, **kw):
        if kw.get("dir_fd") is not None:
            stats.append(path)
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "stat", counted)
    res, batch = run(s)
    assert texts(batch) == [fact(3)] and sorted(stats) == ["a.jsonl", "b.jsonl"]
