"""Two `distill run` at once: one waits for the other or refuses with a clear message; the
state stays valid and every turn lands in exactly one batch."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from distill.tails.ledger import load_batch
from distill.tails.cursor import Cursor
from distill.lock import FileLock

from tail_helpers import ROOT, cli, fact, header, msg, session, settings_for


def test_run_refuses_while_the_state_lock_is_held(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    with FileLock(s.state.lock, purpose="test").acquire(timeout=0):
        p = cli(s, "run", check=False, env={"DISTILL_STATE_LOCK_WAIT": "0.3"}, process=True)
    assert p.returncode == 75
    assert f"pid {os.getpid()}" in p.stderr and str(s.state.lock) in p.stderr
    assert not s.state.cursor.exists()  # nothing was read or marked
    assert cli(s, "run", "--json").stdout and orjson.loads(cli(s, "status", "--json").stdout)["pendingBatches"]


def test_two_runs_at_once_one_waits_and_nothing_is_read_twice(tmp_path):
    s = settings_for(tmp_path)
    expected = []
    for n in range(4):
        f = session(tmp_path, f"a{n}", "s")
        lines = [fact(i, f"a{n}") for i in range(1500)]
        expected += lines
        f.write_bytes(header() + b"".join(msg(t, n=i) for i, t in enumerate(lines)))
    cmd = [sys.executable, "-m", "distill", "--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir),
           "run", "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) for _ in range(2)]
    outs = [orjson.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o["action"] for o in outs) == ["created", "pending"]
    created = next(o for o in outs if o["action"] == "created")
    batch = load_batch(created["batchFile"])
    assert sorted(m.text for a in batch.agents for m in a.messages) == sorted(expected)
    cursor = Cursor.load(s.state.cursor)  # loads: valid JSON, every file pending on that one batch
    assert {bid for e in cursor.files.values() for bid in e["pending"]} == {batch.batch_id}
