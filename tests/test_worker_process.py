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


def test_a_session_archived_before_the_worker_reads_it_is_distilled_alone(world):
    """The hook queued s2, then OpenClaw archived it (`/reset`) before the worker ran: the
    worker reads that archive, from byte 0 (the cursor never saw it), and nothing else, even on
    an installation never `init`-ed whose other history a full pass would distil."""
    other = write_session(world, name="other", turns=TURNS[5:])
    f = write_session(world, name="s2", turns=TURNS[:4])
    r = subprocess.run([sys.executable, "-m", "distill", "enqueue", "--agent", "main", "--session-file", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    archive = f.with_name("s2.jsonl.reset.2026-12-01T05-05-00.000Z")
    f.rename(archive)
    worker = start("--once")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    done = [json.loads(p.read_text()) for p in queue_dir(world, "done").glob("*.json")]
    assert len(done) == 1 and done[0]["stats"]["memories_added"] >= 1, err
    stored = rows(world)
    assert all("pytest" not in r["text"] for r in stored)  # nothing from the unrelated session
    assert len(stored) == done[0]["stats"]["memories_added"]
    files = Cursor.load(world / "state" / "cursor.json").files.values()
    assert str(other) not in {e["path"] for e in files}
    assert {e["path"]: e["offset"] for e in files} == {str(archive): archive.stat().st_size}
    assert "reading its archive s2.jsonl.reset." in err


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to read a process's CPU time")
def test_a_waiting_task_does_not_keep_the_worker_busy(world):
    """A task backing off in the inbox: each scan opens it, and inotify reports the open and
    the close; those must not wake the worker, or it scans again at once, for ever."""
    f = write_session(world)
    enqueue(HookConfig.from_settings(load_settings()), "main", str(f))
    task_file = next(queue_dir(world, "inbox").glob("*.json"))
    task = json.loads(task_file.read_text())
    task["not_before_ms"] = int(time.time() * 1000) + 600_000  # backing off for ten minutes
    task_file.write_text(json.dumps(task))
    worker = start()
    try:
        deadline = time.monotonic() + 30  # past the start (imports, loading the embedder), if it ever calms down
        cpu0 = _cpu_seconds(worker.pid)
        while time.monotonic() < deadline:
            time.sleep(1.0)
            cpu0, before = _cpu_seconds(worker.pid), cpu0
            if cpu0 - before < 0.2:
                break
        cpu0, t0 = _cpu_seconds(worker.pid), time.monotonic()
        time.sleep(3.0)
        ratio = (_cpu_seconds(worker.pid) - cpu0) / (time.monotonic() - t0)
    finally:
        code, _, err = stop(worker)
    assert ratio < 0.3, f"the idle worker used {ratio:.0%} of a core\n{err[-2000:]}"
    assert code == 0 and list(queue_dir(world, "inbox").glob("*.json")) == [task_file]


def test_a_task_that_kills_the_worker_is_counted_and_does_not_block_the_others(world):
    """SIGKILL while a task runs (as an OOM kill or a watchdog abort would): the next worker
    counts it as an attempt and backs it off, so the task behind it runs first; once it has
    used worker_max_attempts it goes to failed/ with the reason."""
    poison = write_session(world, name="poison")
    fine = write_session(world, name="fine")
    cfg = HookConfig.from_settings(load_settings())
    enqueue(cfg, "main", str(poison))
    time.sleep(0.01)
    enqueue(cfg, "main", str(fine))
    with FakeOpenAI([("sleep", 60)], default=("json", {"memories": [PITFALL]})) as fake:
        worker = start(env_extra=llm_env(fake))
        wait_for(lambda: fake.requests, timeout=60, what="the poison task's LLM call")
        worker.kill()
        worker.wait()
        assert [p.name for p in queue_dir(world, "processing").glob("*.json")]  # left behind by the dead worker
        again = start("--once", env_extra={**llm_env(fake), "DISTILL_WORKER_BACKOFF_SECONDS": "600"})
        _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    done = [json.loads(p.read_text()) for p in queue_dir(world, "done").glob("*.json")]
    assert [t["session_file"] for t in done] == [str(fine)], err  # served, not starved
    waiting = [json.loads(p.read_text()) for p in queue_dir(world, "inbox").glob("*.json")]
    assert [(t["session_file"], t["attempts"], t["crashes"]) for t in waiting] == [(str(poison), 1, 1)]
    assert waiting[0]["error"] == "the worker died while running it 1 time"
    # it kills the worker again: with two attempts allowed, it is given up with the reason
    for p in queue_dir(world, "inbox").glob("*.json"):
        os.replace(p, queue_dir(world, "processing") / p.name)
    last = start("--once", env_extra={"DISTILL_WORKER_MAX_ATTEMPTS": "2"})
    _, err = last.communicate(timeout=120)
    assert last.returncode == 0, err
    failed = [json.loads(p.read_text()) for p in queue_dir(world, "failed").glob("*.json")]
    assert [(t["attempts"], t["error"]) for t in failed] == [(2, "the worker died while running it 2 times")]


def test_an_unwritable_queue_folder_stops_the_worker_with_what_to_do(world):
    from tests.proc_helpers import without_root_powers

    prefix = without_root_powers()
    if prefix is None:
        pytest.skip("running as root without setpriv able to drop CAP_DAC_OVERRIDE: the folder cannot be made unwritable")
    for name in ("inbox", "processing", "done", "failed"):
        queue_dir(world, name).mkdir(parents=True)
    (queue_dir(world, "inbox") / "0000000000001-garbage.json").write_text("{not json")
    os.utime(queue_dir(world, "inbox") / "0000000000001-garbage.json", (1, 1))  # settled: to be rejected
    queue_dir(world, "failed").chmod(0o500)
    try:
        r = subprocess.run([*prefix, sys.executable, "-m", "worker", "--once"], capture_output=True, text=True,
                           timeout=120, env=os.environ.copy())
    finally:
        queue_dir(world, "failed").chmod(0o700)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(queue_dir(world, "failed")) in r.stderr and "writable" in r.stderr
