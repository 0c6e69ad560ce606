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
