"""`distill status` shows the last run's true figures, whoever ran the pipeline.

Before, ``create_batch`` recorded last-run itself and only the ``run --distill`` command
overwrote it with the total, so after a daemon run that committed a batch `status` said
"noop, 0 turns" (the drained last pass). The pipeline now records its total once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.tail_helpers import header, msg
from tests.test_worker_process import TURNS

ENV_KEYS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_") and k not in ENV_KEYS}
    env.update(DISTILL_STATE_DIR=str(tmp_path / "state"), DISTILL_AGENTS_DIR=str(tmp_path / "agents"),
               DISTILL_DB=str(tmp_path / "db"))
    return env


def _status(env: dict) -> dict:
    p = subprocess.run([sys.executable, "-m", "distill", "status", "--json"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_status_after_a_worker_run_shows_that_runs_figures(tmp_path):
    env = _env(tmp_path)
    f = tmp_path / "agents" / "main" / "sessions" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(header("s1") + b"".join(msg(t, r, i) for i, (r, t) in enumerate(TURNS)))
    q = subprocess.run([sys.executable, "-m", "distill", "enqueue", "--agent", "main", "--session-file", str(f)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr

    w = subprocess.run([sys.executable, "-m", "worker", "--once"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert w.returncode == 0, w.stderr
    done = [json.loads(p.read_text()) for p in (tmp_path / "state" / "queue" / "done").glob("*.json")]
    assert len(done) == 1 and done[0]["stats"]["action"] == "committed"

    last = _status(env)["lastRun"]
    assert last["action"] == "committed"
    assert last["summary"]["turns"] == len(TURNS) == done[0]["stats"]["turns"]
    assert last["summary"]["bytes"] == f.stat().st_size
    assert last["summary"]["memories_added"] == done[0]["stats"]["memories_added"] >= 2

    # a plain `distill run` with nothing new records its own (no-op) run
    r = subprocess.run([sys.executable, "-m", "distill", "run", "--json"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    last = _status(env)["lastRun"]
    assert last["action"] == "noop" and last["summary"]["turns"] == 0
