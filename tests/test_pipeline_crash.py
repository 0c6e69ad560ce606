"""SIGKILL `distill run --distill` at several moments, then let it finish: the store ends up
exactly as after a run that never crashed (nothing lost, nothing doubled) and the cursor at
the end of every file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

from tests.pipeline_helpers import EN, ZH, cursor_state, settings, stored, write_session

MIXED = [
    ("user", "记住：所有 cron 任务的时间都按 Asia/Shanghai 时区写。"),
    ("tool", "[tool exec failed: httpx.ReadTimeout: timed out after 10s]"),
    ("assistant", "Fixed by setting DISTILL_LLM_TIMEOUT=60 in the service environment."),
]


def lay_out(root):
    paths = [write_session(root, "main", "s-en", EN), write_session(root, "ops", "s-zh", ZH),
             write_session(root, "dev", "s-mixed", MIXED)]
    return paths, settings(root)


def cli(s, *args):
    flags = ["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "--db", str(s.db)]
    return [sys.executable, "-m", "distill", *flags, *args]


def test_sigkill_anywhere_then_rerun_equals_clean_run(tmp_path):
    clean_paths, clean = lay_out(tmp_path / "clean")
    assert subprocess.run(cli(clean, "run", "--distill"), capture_output=True, timeout=180).returncode == 0
    want = sorted(r.text for r in stored(clean))
    assert len(want) >= 4

    paths, s = lay_out(tmp_path / "crash")
    for delay in (0.3, 1.5, 3.0, 5.0):  # import, batch, embedding, store write / commit
        proc = subprocess.Popen(cli(s, "run", "--distill"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        texts = [r.text for r in stored(s)]
        assert all(n == 1 for n in Counter(texts).values()), "a memory was stored twice"
        assert set(texts) <= set(want)
        offsets = [cursor_state(s).get(str(p), (0, {}))[0] for p in paths]
        assert all(o in (0, p.stat().st_size) for o, p in zip(offsets, paths))
        if any(offsets):  # one batch covers every file: committed means all its memories are stored
            assert sorted(texts) == want
    done = subprocess.run(cli(s, "run", "--distill"), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert sorted(r.text for r in stored(s)) == want
    assert all(cursor_state(s)[str(p)] == (p.stat().st_size, {}) for p in paths)
