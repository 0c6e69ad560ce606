"""distill-worker as a real process: the real pipeline, the real store, real signals.

Default providers (rules distiller, local embedder) unless a test points the LLM at the fake
OpenAI server. Settings come from DISTILL_* environment variables, as under systemd.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.tails.cursor import Cursor
from distill.enqueue import enqueue
from distill.settings.hook import HookConfig
from tests.fakes import FakeOpenAI
from tests.tail_helpers import header, msg
from tests.distiller_helpers import PEP668_PITFALL

TURNS = [
    ("user", "pip install lancedb fails with error: externally-managed-environment on Debian 12"),
    ("assistant", "Debian's system Python is protected (PEP 668). Use uv venv, then uv pip install lancedb."),
    ("user", "记住：以后这个仓库一律用 uv 管理依赖，不要用 pip。"),
    ("assistant", "好的，以后用 uv sync 安装依赖。"),
    ("user", "We decided to deploy the billing service only on Debian 12 hosts, because the old Ubuntu "
             "images lack the libssl version we need."),
    ("user", "From now on always run pytest -x -q before committing."),
]
PITFALL = PEP668_PITFALL  # the answer a model gives for the first two turns of TURNS


@pytest.fixture
def world(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_") or key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
            monkeypatch.delenv(key)
    env = {
        "DISTILL_STATE_DIR": str(tmp_path / "state"),
        "DISTILL_AGENTS_DIR": str(tmp_path / "agents"),
        "DISTILL_DB": str(tmp_path / "db"),
        "DISTILL_WORKER_BACKOFF_SECONDS": "0.5",
        "DISTILL_WORKER_QUIET_SECONDS": "0.5",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return tmp_path


def write_session(root: Path, agent: str = "main", name: str = "s1", turns=TURNS) -> Path:
    p = root / "agents" / agent / "sessions" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    data = header(name) + b"".join(msg(t, r, i) for i, (r, t) in enumerate(turns))
    p.write_bytes(data)
    return p


def start(*args: str, env_extra: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "worker", *args], env={**os.environ, **(env_extra or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def queue_dir(root: Path, folder: str) -> Path:
    return root / "state" / "queue" / folder


def wait_for(pred, timeout: float = 60, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def rows(root: Path) -> list[dict]:
    import lancedb

    db = lancedb.connect(str(root / "db"))
    if "memories" not in db.list_tables().tables:
        return []
    return db.open_table("memories").to_arrow().select(["text", "scope", "metadata"]).to_pylist()


def stop(proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 10) -> tuple[int, float, str]:
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"worker did not exit within {timeout} s:\n{err}")
    return proc.returncode, time.monotonic() - t0, err


def test_enqueue_to_stored_memories_among_hostile_tasks(world):
    """The main path: a hook enqueues, the running daemon stores the memories, the task is done;
    hostile files beside it fail with their reason; a second worker refuses; SIGTERM is clean."""
    f = write_session(world)
    worker = start()
    try:
        wait_for(lambda: queue_dir(world, "inbox").is_dir(), what="queue folders")
        rival = subprocess.run([sys.executable, "-m", "worker"], capture_output=True, text=True, timeout=60,
                               env=os.environ.copy())
        assert rival.returncode == 75
        assert f"pid {worker.pid}" in rival.stderr and "another worker" in rival.stderr
        inbox = queue_dir(world, "inbox")
        (inbox / "0000000000001-garbage.json").write_text("{not json")
        (inbox / "0000000000002-escape.json").write_text(json.dumps(
            {"id": "abcdef01", "kind": "session_end", "agent_id": "main", "created_at_ms": 1,
             "session_file": str(f.parent) + "/../../../../etc/passwd"}))
        r = subprocess.run([sys.executable, "-m", "distill", "enqueue", "--agent", "main", "--session-file", str(f)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        done = wait_for(lambda: list(queue_dir(world, "done").glob("*.json")), what="task in done/")
        task = json.loads(done[0].read_text())
        assert task["stats"]["memories_added"] >= 2 and task["stats"]["action"] == "committed"
        wait_for(lambda: len(list(queue_dir(world, "failed").glob("*.json"))) == 2, what="hostile files failed")
        failed = {p.name: json.loads(p.read_text())["error"] for p in queue_dir(world, "failed").glob("*.json")}
        assert "not valid JSON" in failed["0000000000001-garbage.json"]
        assert "'..'" in failed["0000000000002-escape.json"]
        stored = rows(world)
        assert len(stored) == task["stats"]["memories_added"]
        assert all(r["text"].splitlines()[-1].startswith("Keywords (zh):") for r in stored)
        assert {r["scope"] for r in stored} <= {"global", "agent:main"}
        # a second session end for the same file: nothing new to read, nothing stored twice
        enqueue(HookConfig.from_settings(load_settings()), "main", str(f))
        wait_for(lambda: len(list(queue_dir(world, "done").glob("*.json"))) == 2, what="second task done")
        assert len(rows(world)) == len(stored)
    finally:
        code, took, err = stop(worker)
    assert code == 0 and took < 10, err
    assert err.count("-> done") == 2 and "garbage.json -> failed" in err


def test_sigkill_mid_task_then_restart_loses_and_doubles_nothing(world, tmp_path):
    """SIGKILL at random moments while a task runs; the restarted worker finishes it and the
    store holds exactly what an uninterrupted run stores."""
    from distill.pipeline import run_distill

    files = [write_session(world, "main", f"s{i}", TURNS[i % 3:] + TURNS[: i % 3]) for i in range(3)]
    # the reference: the same transcripts distilled once, without interruption
    ref_root = tmp_path / "ref"
    for f in files:
        dst = ref_root / "agents" / "main" / "sessions" / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    run_distill(load_settings(state_dir=ref_root / "state", agents_dir=ref_root / "agents", db=ref_root / "db"))
    expected = sorted(r["text"] for r in rows(ref_root))
    assert expected

    cfg = HookConfig.from_settings(load_settings())
    for f in files:
        enqueue(cfg, "main", str(f))
    rng = random.Random(5)
    kills = 0
    for _ in range(2):
        worker = start()
        claimed = wait_for(lambda: list(queue_dir(world, "processing").glob("*.json"))
                           or worker.poll() is not None, what="a claimed task")
        if claimed is True:
            break
        time.sleep(rng.uniform(0.0, 1.5))
        worker.kill()
        worker.wait()
        kills += 1
    assert kills >= 1
    final = start("--once")
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert list(queue_dir(world, "processing").glob("*")) == []
    assert list(queue_dir(world, "inbox").glob("*.json")) == []
    assert len(list(queue_dir(world, "done").glob("*.json"))) == 3
    texts = sorted(r["text"] for r in rows(world))
    assert texts == expected  # nothing lost, nothing twice
    offsets = {e["path"]: e["offset"] for e in Cursor.load(world / "state" / "cursor.json").files.values()}
    assert all(offsets[str(f)] == f.stat().st_size for f in files)  # no range left behind


def llm_env(fake: FakeOpenAI) -> dict:
    return {"DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url, "DISTILL_LLM_MODEL": "m",
            "DISTILL_LLM_API_KEY": "k", "DISTILL_RETRY_ATTEMPTS": "1", "DISTILL_LLM_TIMEOUT": "60"}


def test_llm_outage_is_retried_later_then_succeeds(world):
    f = write_session(world)
    enqueue(HookConfig.from_settings(load_settings()), "main", str(f))
    with FakeOpenAI([("status", 503)] * 2, default=("json", {"memories": [PITFALL]})) as fake:
        worker = start(env_extra=llm_env(fake))
        try:
            done = wait_for(lambda: list(queue_dir(world, "done").glob("*.json")), what="task done after outage")
        finally:
            code, _, err = stop(worker)
    task = json.loads(done[0].read_text())
    assert task["attempts"] == 2, err  # two failed runs, each put back with a backoff
    assert task["stats"]["memories_added"] == 1 and task["stats"]["llm_calls"] >= 1
    assert err.count("-> retry") == 2 and "503" in err
    assert [r["text"].splitlines()[0] for r in rows(world)] == [PITFALL["text"]]
    assert code == 0


def test_sigterm_mid_task_exits_within_10s_and_keeps_the_task(world):
    f = write_session(world)
    enqueue(HookConfig.from_settings(load_settings()), "main", str(f))
    with FakeOpenAI(default=("sleep", 60)) as fake:  # the model hangs
        worker = start(env_extra=llm_env(fake))
        wait_for(lambda: fake.requests, timeout=60, what="the LLM call")
        code, took, err = stop(worker)
    assert code == 0 and took < 10, err
    left = list(queue_dir(world, "inbox").glob("*.json"))
    assert len(left) == 1 and json.loads(left[0].read_text())["attempts"] == 0
    assert list(queue_dir(world, "processing").glob("*")) == []
    assert rows(world) == []
    assert all(e["offset"] == 0 for e in Cursor.load(world / "state" / "cursor.json").files.values())  # nothing committed past unstored data


def test_a_thousand_tasks_for_one_file_cost_one_run(world):
    f = write_session(world)
    cfg = HookConfig.from_settings(load_settings())
    for _ in range(1000):
        enqueue(cfg, "main", str(f))
    worker = start("--once")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert err.count("-> done") == 1 and "(+999 coalesced)" in err
    assert len(list(queue_dir(world, "done").glob("*.json"))) == 1000
    assert rows(world)


def test_polling_source_watch_and_sd_notify(world, tmp_path):
    """Forced polling, source-root watching (a new session file becomes a tail task once quiet),
    and systemd's READY / STATUS / WATCHDOG datagrams."""
    sock_path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(60)
    (world / "agents" / "main" / "sessions").mkdir(parents=True)
    worker = start(env_extra={"DISTILL_WORKER_POLL": "1", "DISTILL_WORKER_WATCH_SOURCES": "1",
                              "NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "400000"})
    try:
        got: list[str] = []
        while not any("READY=1" in g for g in got):
            got.append(sock.recv(4096).decode())
        f = write_session(world, name="fresh")  # written all at once: maybe only a "created" event
        done = wait_for(lambda: list(queue_dir(world, "done").glob("*.json")), what="tail task done")
        task = json.loads(done[0].read_text())
        assert task["kind"] == "tail" and task["session_file"] == str(f)
        assert task["stats"]["memories_added"] >= 1
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any("WATCHDOG=1" in g for g in got):
            got.append(sock.recv(4096).decode())
        assert any("WATCHDOG=1" in g for g in got) and any("STATUS=" in g for g in got)
    finally:
        code, _, err = stop(worker)
        sock.close()
    assert code == 0
    assert "polling (worker_poll is set)" in err
