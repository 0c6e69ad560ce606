"""The worker's task loop with an injected runner: claiming, coalescing, retries, hostile files.

The runner stands in for the pipeline so these tests pin down the queue decisions alone; the
end-to-end behaviour with the real pipeline and real processes is in test_worker_process.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.enqueue import enqueue
from distill.errors import BudgetExceeded, LockBusy, PermanentError, TransientError
from distill.settings.hook import HookConfig
from distill.queue import Queue, now_ms
from distill.model import RunSummary
from worker.tasks import TaskLoop


class FakeRunner:
    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls: list[set[Path] | None] = []

    def __call__(self, settings, *, only_files, progress):
        self.calls.append(only_files)
        progress("map", 1, 1)
        out = self.outcomes.pop(0) if self.outcomes else RunSummary(action="committed", memories_added=1)
        if isinstance(out, BaseException):
            raise out
        return out


@pytest.fixture
def world(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_"):
            monkeypatch.delenv(key)
    settings = load_settings(state_dir=tmp_path / "state", agents_dir=tmp_path / "agents")
    settings.worker_backoff_seconds = 10
    settings.worker_max_attempts = 3
    q = Queue(settings.state.queue)
    q.ensure()
    return settings, q, HookConfig.from_settings(settings), tmp_path


def session(root: Path, agent: str = "main", name: str = "s1") -> Path:
    p = root / "agents" / agent / "sessions" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('{"type":"session"}\n')
    return p


def drain(loop: TaskLoop) -> int:
    n = 0
    while loop.step():
        n += 1
    return n


def test_a_thousand_tasks_for_one_file_make_one_run(world):
    settings, q, cfg, root = world
    f, g = session(root), session(root, name="s2")
    for _ in range(1000):
        enqueue(cfg, "main", str(f))
    enqueue(cfg, "main", str(g))
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert drain(loop) == 2
    assert runner.calls == [{f}, {g}]  # one run per file, oldest file first
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 1001, "failed": 0}
    primary = [json.loads(p.read_text()) for p in (q.dirs["done"]).glob("*.json") if "stats" in p.read_text()]
    by_file = {t["session_file"]: t for t in primary}
    assert by_file[str(f)]["stats"]["coalesced"] == 999
    assert by_file[str(f)]["stats"]["memories_added"] == 1
    assert by_file[str(g)]["stats"]["coalesced"] == 0
    assert loop.counts["coalesced"] == 999


def test_outage_backs_off_then_succeeds(world):
    settings, q, cfg, root = world
    f = session(root)
    enqueue(cfg, "main", str(f))
    runner = FakeRunner(TransientError("LLM returned 503: overloaded"))
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step() is True
    task = q.entries("inbox")[0].task
    assert task.attempts == 1 and "503" in task.error
    assert 9_000 <= task.not_before_ms - now_ms() <= 10_500  # worker_backoff_seconds
    assert loop.step() is False  # not ready yet: nothing runs during the backoff
    assert 9 <= loop.next_wake_s() <= 10.5
    path = q.entries("inbox")[0].path
    path.write_text(json.dumps({**json.loads(path.read_text()), "not_before_ms": now_ms() - 1}))
    assert loop.step() is True
    done = json.loads(next(q.dirs["done"].glob("*.json")).read_text())
    assert done["attempts"] == 1 and "error" not in done and done["stats"]["memories_added"] == 1


def test_retry_after_longer_than_backoff_is_honoured(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    loop = TaskLoop(settings, q, runner=FakeRunner(TransientError("429", retry_after=120)))
    loop.step()
    assert q.entries("inbox")[0].task.not_before_ms - now_ms() > 100_000


def test_spent_budget_waits_for_the_next_utc_day(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    loop = TaskLoop(settings, q, runner=FakeRunner(BudgetExceeded("daily token budget 2000000 reached")))
    loop.step()
    task = q.entries("inbox")[0].task
    midnight_ms = (now_ms() // 86_400_000 + 1) * 86_400_000
    assert task.attempts == 1 and midnight_ms <= task.not_before_ms <= midnight_ms + 120_000
    assert "daily token budget" in task.error


def test_gives_up_after_max_attempts_with_the_error(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    errors = [PermanentError(f"401 bad key (attempt {i})") for i in range(3)]
    loop = TaskLoop(settings, q, runner=FakeRunner(*errors))
    for _ in range(3):
        for e in q.entries("inbox"):  # skip the backoff wait
            e.path.write_text(e.task.model_copy(update={"not_before_ms": 0}).model_dump_json())
        assert loop.step()
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 0, "failed": 1}
    failed = json.loads(next(q.dirs["failed"].glob("*.json")).read_text())
    assert failed["attempts"] == 3 and "attempt 2" in failed["error"] and "PermanentError" in failed["error"]


def test_busy_state_lock_is_not_an_attempt(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    loop = TaskLoop(settings, q, runner=FakeRunner(LockBusy("held by pid 42")))
    loop.step()
    task = q.entries("inbox")[0].task
    assert task.attempts == 0 and 0 < task.not_before_ms - now_ms() <= 2_500


def test_a_bug_in_the_run_is_retried_not_fatal(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    loop = TaskLoop(settings, q, runner=FakeRunner(KeyError("boom")))
    assert loop.step()
    assert q.entries("inbox")[0].task.error == "KeyError: 'boom'"


def test_hostile_task_files_fail_at_once_and_good_ones_run(world):
    settings, q, cfg, root = world
    f = session(root)
    session(root, "memory-distiller")
    secret = root / "secret.jsonl"
    secret.write_text("{}\n")
    (f.parent / "evil.jsonl").symlink_to(secret)
    base = {"kind": "session_end", "agent_id": "main", "created_at_ms": 1, "attempts": 0, "not_before_ms": 0}
    hostile = {
        "bad-json": b'{"id": "aa11bb22", ',
        "dotdot": {**base, "id": "a0000001", "session_file": str(f.parent) + "/../../main/sessions/s1.jsonl"},
        "symlink": {**base, "id": "a0000002", "session_file": str(f.parent / "evil.jsonl")},
        "unknown-agent": {**base, "id": "a0000003", "agent_id": "ghost", "session_file": str(f)},
        "bad-agent-id": {**base, "id": "a0000004", "agent_id": "x/../y", "session_file": str(f)},
        "distiller": {**base, "id": "a0000005", "agent_id": "memory-distiller",
                      "session_file": str(root / "agents/memory-distiller/sessions/s1.jsonl")},
        "relative-etc": {**base, "id": "a0000006", "session_file": "../../../etc/passwd"},
        "extra-field": {**base, "id": "a0000007", "session_file": str(f), "scope": "global"},
        "relative": {**base, "id": "a0000008", "session_file": "agents/main/sessions/s1.jsonl"},
        "missing-outside": {**base, "id": "a0000009", "session_file": "/nonexistent/s1.jsonl"},
    }
    old = now_ms() / 1000 - 60
    for i, (name, body) in enumerate(hostile.items()):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        path = q.inbox / f"000000000000{i}-{name}.json"
        path.write_bytes(raw)
        os.utime(path, (old, old))
    enqueue(cfg, "main", str(f))
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert drain(loop) == 1
    assert runner.calls == [{f}]
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 1, "failed": len(hostile)}
    reasons = {p.name.split("-", 1)[1][:-5]: json.loads(p.read_text())["error"] for p in q.dirs["failed"].glob("*")}
    assert "not valid JSON" in reasons["bad-json"]
    assert "'..'" in reasons["dotdot"] and "'..'" in reasons["relative-etc"]
    assert "resolves to" in reasons["symlink"] and "not under a configured source root" in reasons["symlink"]
    assert "belongs to agent main, not 'ghost'" in reasons["unknown-agent"]
    assert "not valid" in reasons["bad-agent-id"]
    assert "distiller's own agent" in reasons["distiller"]
    assert "scope" in reasons["extra-field"]
    assert "not an absolute path" in reasons["relative"]
    assert "does not exist, and is not where agent 'main'" in reasons["missing-outside"]
    assert loop.counts["rejected"] == len(hostile)


def test_a_vanished_session_file_runs_a_full_pass(world):
    settings, q, cfg, root = world
    f = session(root)
    enqueue(cfg, "main", str(f))
    f.rename(f.with_name("s1.jsonl.reset.2026-11-29"))  # OpenClaw archived it after the hook fired
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step()
    assert runner.calls == [None]  # the archive's unread tail is found by inode in a full pass
    assert q.counts()["done"] == 1


def test_abandon_puts_claimed_tasks_back_untouched(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    loop = TaskLoop(settings, q)

    def runner(settings, *, only_files, progress):
        assert loop.abandon() == 1  # the daemon gives up on us mid-run
        return RunSummary(action="committed")

    loop.runner = runner
    assert loop.step()
    assert q.counts() == {"inbox": 1, "processing": 0, "done": 0, "failed": 0}
    assert q.entries("inbox")[0].task.attempts == 0


def test_full_pass_reads_every_root_and_never_raises(world):
    settings, q, cfg, root = world
    runner = FakeRunner(RunSummary(action="committed", memories_added=2), LockBusy("cron is running"),
                        TransientError("503"))
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.full_pass().memories_added == 2
    assert loop.full_pass() is None and loop.full_pass() is None
    assert runner.calls == [None, None, None]
    assert loop.counts["memories_added"] == 2


def test_daemon_runs_the_full_pass_only_when_configured(world):
    from worker.daemon import Daemon

    settings, q, cfg, root = world
    runner = FakeRunner()
    off = Daemon(settings, runner=runner)
    off._full_pass_if_due()
    settings.worker_full_pass_interval = 0.01
    on = Daemon(settings, runner=runner)
    on._last_full_pass -= 1
    on._full_pass_if_due()
    on._full_pass_if_due()  # not due again yet
    assert runner.calls == [None]


def test_a_task_file_still_being_written_is_not_rejected_yet(world):
    settings, q, cfg, root = world
    f = session(root)
    path = q.inbox / "0000000000001-a0000009.json"
    body = json.dumps({"id": "a0000009", "kind": "session_end", "agent_id": "main", "session_file": str(f),
                       "created_at_ms": 1})
    path.write_text(body[:20])  # a writer that does not rename into place, caught mid-write
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step() is False and q.counts()["failed"] == 0
    assert 0 < loop.next_wake_s() <= 2.1  # looked at again soon, not at the next idle rescan
    path.write_text(body)
    assert loop.step() is True and q.counts()["done"] == 1
    path.write_text("{truncated")
    os.utime(path, (now_ms() / 1000 - 5,) * 2)  # the writer gave up: now it is garbage
    assert loop.step() is False and q.counts()["failed"] == 1
