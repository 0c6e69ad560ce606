"""Queue inbox entries that are not regular files (issue 10, items 3-5), against a real
``distill-worker --once``: none may block it, kill it, or have its target read."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from distill.config import load_settings
from distill.enqueue import enqueue
from distill.settings.hook import HookConfig
from tests import test_worker_process as twp
from tests.test_worker_process import queue_dir, write_session

world = twp.world  # the worker tests' fixture: DISTILL_* settings in a fresh tmp tree


def _once(timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker", "--once"], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ), check=False)


def _valid_task(root) -> None:
    f = write_session(root)
    enqueue(HookConfig.from_settings(load_settings()), agent_id="main", session_file=str(f))


def _failed(root) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in queue_dir(root, "failed").glob("*.json")}


def test_fifo_named_json_does_not_block_the_worker(world):
    inbox = queue_dir(world, "inbox")
    inbox.mkdir(parents=True)
    os.mkfifo(inbox / "0000000000001-fifo.json")
    _valid_task(world)
    p = _once()  # before the fix: open() of the FIFO waited for a writer, for ever
    assert p.returncode == 0, p.stderr
    assert list(inbox.iterdir()) == []
    rec = _failed(world)["0000000000001-fifo.json"]
    assert "FIFO" in rec["error"] and rec["raw"] == ""
    assert len(list(queue_dir(world, "done").glob("*.json"))) == 1, p.stderr


def test_directory_named_json_is_moved_aside_and_the_worker_starts_again(world):
    inbox = queue_dir(world, "inbox")
    (inbox / "0000000000001-dir.json").mkdir(parents=True)
    (inbox / "0000000000001-dir.json" / "inner").write_text("x")
    _valid_task(world)
    for _ in range(2):  # before the fix: IsADirectoryError at every start
        p = _once()
        assert p.returncode == 0, p.stderr
    assert list(inbox.iterdir()) == []
    assert "directory" in _failed(world)["0000000000001-dir.json"]["error"]
    assert len(list(queue_dir(world, "done").glob("*.json"))) == 1


def test_symlink_in_the_inbox_is_not_followed(world, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASHVALUE$abcdefgh:19000:0:99999:7:::\n")
    inbox = queue_dir(world, "inbox")
    inbox.mkdir(parents=True)
    (inbox / "0000000000001-link.json").symlink_to(secret)
    (inbox / "0000000000002-dangling.json").symlink_to(tmp_path / "nowhere")
    _valid_task(world)
    p = _once()
    assert p.returncode == 0, p.stderr
    assert list(inbox.iterdir()) == []
    for name in ("0000000000001-link.json", "0000000000002-dangling.json"):
        rec = _failed(world)[name]
        assert "symbolic link" in rec["error"] and rec["raw"] == ""
    for f in queue_dir(world, "failed").rglob("*"):
        if f.is_file() and not f.is_symlink():
            assert "SECRETHASHVALUE" not in f.read_text(errors="replace")
    assert "SECRETHASHVALUE" not in p.stderr + p.stdout
    assert secret.read_text().startswith("root:")  # the target itself is left alone
