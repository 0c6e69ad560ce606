"""Hostile input found by an independent harness (issue 10): each case once broke every later run."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import orjson
import pytest
from tail_helpers import cli, fact, header, msg, session, settings_for


def _line_with_ts(ts_json: str, text: str) -> bytes:
    return ('{"type":"message","id":"m2","timestamp":' + ts_json + ',"message":{"role":"user","content":'
            + json.dumps([{"type": "text", "text": text}]) + "}}\n").encode()


@pytest.mark.parametrize("ts", ["1e300", "-1e30", str(2**70), '"0001-01-01T00:00:00Z"'])
def test_an_out_of_range_timestamp_is_unknown_counted_and_every_agent_still_read(tmp_path, ts):
    s = settings_for(tmp_path)
    bad = session(tmp_path, agent="alpha")
    bad.write_bytes(header() + _line_with_ts(ts, fact(1, "bad-ts")) + msg(fact(2, "after")))
    other = session(tmp_path, agent="beta")
    other.write_bytes(header() + msg(fact(3, "other")))
    for _ in range(2):  # the harness ran twice: the second run crashed too, for good
        out = orjson.loads(cli(s, "run", "--distill", "--json", env={"DISTILL_LLM": "rules"}).stdout)
    assert out["action"] in ("created", "noop", "committed", "distilled"), out
    status = orjson.loads(cli(s, "status", "--json").stdout)
    assert sorted(a["agentId"] for a in status["agents"]) == ["alpha", "beta"]
    assert all(a["behind"] == 0 for a in status["agents"]), status


def test_out_of_range_timestamp_falls_back_to_the_file_mtime_in_the_batch(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + _line_with_ts("1e300", fact(1)) + _line_with_ts("-1e30", fact(2)))
    out = orjson.loads(cli(s, "run", "--json").stdout)
    assert out["summary"]["counters"]["bad_timestamp"] == 2
    batch = orjson.loads(Path(out["batchFile"]).read_bytes())
    mtime_ms = f.stat().st_mtime_ns // 1_000_000
    assert [m["ts"] for a in batch["agents"] for m in a["messages"]] == [mtime_ms, mtime_ms]


def test_a_sessions_folder_in_a_symlink_loop_is_reported_and_every_other_agent_read(tmp_path):
    s = settings_for(tmp_path)
    good = session(tmp_path, agent="good")
    good.write_bytes(header() + msg(fact(1, "good")))
    looped = tmp_path / "agents" / "looped"
    looped.mkdir(parents=True)
    (looped / "sessions").symlink_to(looped / "sessions")  # ELOOP on every access
    p = cli(s, "run", "--json")
    out = orjson.loads(p.stdout)
    assert out["action"] == "created" and out["summary"]["turns"] == 1
    assert out["summary"]["counters"]["folder_unreadable"] == 1
    assert any(str(looped / "sessions") in e for e in out["errors"]), out["errors"]


def test_an_unlistable_sessions_folder_keeps_its_cursor_entries(tmp_path, monkeypatch):
    """EACCES cannot be made for real here (tests run as root, who may list anything): the
    listing of one folder is made to fail as it would for another user."""
    from distill.tails.ledger import create_batch, load_batch

    s = settings_for(tmp_path)
    locked = session(tmp_path, agent="locked")
    locked.write_bytes(header() + msg(fact(1, "locked")))
    good = session(tmp_path, agent="good")
    good.write_bytes(header() + msg(fact(2, "good")))
    from distill.tails.ledger import commit_batch
    first = create_batch(s)
    commit_batch(s, Path(first.batch_file))
    locked.open("ab").write(msg(fact(3, "locked")))
    good.open("ab").write(msg(fact(4, "good")))

    real_listdir, real_scandir, real_stat, real_open = os.listdir, os.scandir, os.stat, os.open
    folder = str(locked.parent)

    def deny(path):
        if isinstance(path, int):  # a folder already opened (discovery lists and stats through it)
            return
        if os.fspath(path) == folder or os.fspath(path).startswith(folder + "/"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    monkeypatch.setattr(os, "open", lambda p, *a, **k: deny(p) or real_open(p, *a, **k))
    monkeypatch.setattr(os, "listdir", lambda p=".": deny(p) or real_listdir(p))
    monkeypatch.setattr(os, "scandir", lambda p=".": deny(p) or real_scandir(p))
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: deny(p) or real_stat(p, *a, **k))
    res = create_batch(s)
    assert res.summary.counters["folder_unreadable"] == 1
    assert any(folder in e and "Permission denied" in e for e in res.errors), res.errors
    texts = [m.text for a in load_batch(Path(res.batch_file)).agents for m in a.messages]
    assert texts == [fact(4, "good")]
    commit_batch(s, Path(res.batch_file))
    monkeypatch.undo()
    again = create_batch(s)  # readable again: its new line is read, its old one is not re-read
    assert [m.text for a in load_batch(Path(again.batch_file)).agents for m in a.messages] == [fact(3, "locked")]
