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
        self.archives: list[bool] = []  # settings.read_archives of each call

    def __call__(self, settings, *, only_files, progress):
        self.calls.append(only_files)
        self.archives.append(settings.read_archives)
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


def test_a_vanished_session_file_reads_only_its_archive(world):
    """Archived after its hook fired, before the worker got to it: the run reads that archive
    (listed like backfill lists archives: the cursor has never seen it) and nothing else."""
    settings, q, cfg, root = world
    f = session(root)
    session(root, name="other")  # unrelated history beside it: never part of this task's run
    enqueue(cfg, "main", str(f))
    archive = f.with_name("s1.jsonl.reset.2026-11-29T05-05-00.000Z")
    f.rename(archive)  # OpenClaw archived it after the hook fired
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step()
    assert runner.calls == [{archive}] and runner.archives == [True]
    assert q.counts()["done"] == 1


def test_a_vanished_tracked_file_is_followed_by_inode_from_its_offset(world):
    """The cursor already tracks the file: the run names it where the cursor last saw it, so the
    reader follows the inode to the archive and finishes its tail from the committed offset."""
    from distill.tails.cursor import Cursor, file_key, new_entry

    settings, q, cfg, root = world
    f = session(root)
    cursor = Cursor(settings.state.cursor)
    cursor.files[file_key(f.stat())] = {**new_entry(str(f), "main", "openclaw"), "offset": 5}
    cursor.save()
    enqueue(cfg, "main", str(f))
    f.rename(f.with_name("s1.jsonl.deleted.2026-11-29T05-05-00.000Z"))
    runner = FakeRunner()
    assert TaskLoop(settings, q, runner=runner).step()
    assert runner.calls == [{f}] and runner.archives == [False]


def test_a_vanished_file_with_no_archive_fails_without_reading_anything(world):
    settings, q, cfg, root = world
    f = session(root)
    session(root, name="other")
    enqueue(cfg, "main", str(f))
    enqueue(cfg, "main", str(f))
    f.unlink()
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step()
    assert runner.calls == []  # no run at all: never a pass over the unrelated history
    failed = [q.read(q.dirs["failed"] / n).task for n in q.names("failed")]
    assert len(failed) == 2 and all("is gone and no archive of it" in t.error for t in failed)
    assert loop.counts["failed"] == 1 and q.counts()["inbox"] == 0


def test_a_task_left_in_processing_counts_as_an_attempt_and_lets_others_pass(world):
    """A task whose run killed the worker (OOM, watchdog abort, SIGKILL) is counted, backs off,
    and ends in failed/ after worker_max_attempts; the tasks behind it are served meanwhile."""
    settings, q, cfg, root = world
    poison, fine = session(root, name="poison"), session(root, name="fine")
    enqueue(cfg, "main", str(poison))
    enqueue(cfg, "main", str(fine))
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    first = loop.ready_group()
    assert q.claim([e.path for e in first.entries])  # the worker claimed it ... and died
    assert loop.recover() == 1
    back = q.entries("inbox")[0].task
    assert (back.attempts, back.crashes) == (1, 1) and back.not_before_ms > now_ms()
    assert back.error == "the worker died while running it 1 time"
    assert loop.step() and runner.calls == [{fine}]  # the one behind it is not starved
    assert loop.step() is False  # the crashed one waits for its backoff
    for _ in range(2):  # it kills the worker twice more
        q.claim([q.inbox / n for n in q.names("inbox")])
        loop.recover()
    failed = q.read(q.dirs["failed"] / q.names("failed")[0]).task
    assert failed.attempts == 3 and failed.error == "the worker died while running it 3 times"
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 1, "failed": 1}


def test_a_processing_folder_removed_under_the_worker_is_made_again(world):
    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    q.dirs["processing"].rmdir()
    runner = FakeRunner()
    loop = TaskLoop(settings, q, runner=runner)
    assert loop.step() and len(runner.calls) == 1
    assert q.counts() == {"inbox": 0, "processing": 0, "done": 1, "failed": 0}


def test_a_wait_set_before_the_clock_went_back_is_capped(world):
    from worker.tasks import LONGEST_WAIT_MS

    settings, q, cfg, root = world
    enqueue(cfg, "main", str(session(root)))
    path = q.inbox / q.names("inbox")[0]
    task = json.loads(path.read_text())
    task["not_before_ms"] = now_ms() + 10 * 365 * 86400_000  # set when the clock was ten years ahead
    path.write_text(json.dumps(task))
    loop = TaskLoop(settings, q, runner=FakeRunner())
    assert loop.step() is False
    assert loop.next_wake_s() <= LONGEST_WAIT_MS / 1000
    assert q.read(path).task.not_before_ms <= now_ms() + LONGEST_WAIT_MS


def test_garbage_with_an_mtime_in_the_future_is_rejected(world):
    settings, q, cfg, root = world
    path = q.inbox / "0000000000001-a000000a.json"
    path.write_text("{garbage")
    os.utime(path, (now_ms() / 1000 + 3600,) * 2)  # a clock set back since it was written
    loop = TaskLoop(settings, q, runner=FakeRunner())
    assert loop.step() is False and q.counts()["failed"] == 1


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


def claude_world(tmp_path: Path, fmt: str = "auto"):
    """A Claude Code source root for agent ``cc``: session S with a newer-style sub-agent
    folder and an older-style ``agent-*.jsonl`` beside it, and another session T with its own."""
    from tests.sources_lines import cc_assistant, cc_user

    settings = load_settings(state_dir=tmp_path / "state", agents_dir=tmp_path / "agents",
                             sources=[{"path": str(tmp_path / "claude"), "agent_id": "cc", "format": fmt}])
    q = Queue(settings.state.queue)
    q.ensure()
    proj = tmp_path / "claude" / "proj"
    files = {
        "main": (proj / "S.jsonl", "S", False, "Please find why the export job fails.", "The export job fails on a "
                 "missing bucket."),
        "new": (proj / "S" / "subagents" / "agent-a1b2.jsonl", "S", True, "Search the repo for the bucket name.",
                "The bucket name is set in deploy/export.env."),
        "old": (proj / "agent-c3d4.jsonl", "S", True, "Read the export logs.", "The logs show NoSuchBucket errors."),
        "other": (proj / "agent-e5f6.jsonl", "T", True, "Lint the other session's code.", "Lint found nothing."),
        "t": (proj / "T.jsonl", "T", False, "Lint this.", "Done linting."),
    }
    for path, sid, side, asked, said in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(cc_user(asked, session=sid, isSidechain=side)
                         + cc_assistant(f"msg_{path.stem}", [{"type": "text", "text": said}], session=sid,
                                        isSidechain=side))
    outside = tmp_path / "elsewhere" / "agent-zz.jsonl"  # a symlink out of the root is never followed
    outside.parent.mkdir()
    outside.write_bytes(files["new"][0].read_bytes())
    (proj / "S" / "subagents" / "agent-evil.jsonl").symlink_to(outside)
    return settings, q, HookConfig.from_settings(settings), {k: v[0] for k, v in files.items()}


@pytest.mark.parametrize("fmt", ["auto", "claude-code"])
def test_a_claude_code_session_task_also_reads_its_sub_agents(tmp_path, fmt):
    settings, q, cfg, f = claude_world(tmp_path, fmt)
    enqueue(cfg, "cc", str(f["main"]))
    enqueue(cfg, "cc", str(f["t"]))
    runner = FakeRunner()
    assert drain(TaskLoop(settings, q, runner=runner)) == 2
    assert runner.calls == [{f["main"], f["new"], f["old"]}, {f["t"], f["other"]}]


def test_a_sub_agent_files_own_task_and_other_formats_read_only_their_file(world):
    settings, q, cfg, root = world
    f = session(root)  # OpenClaw: no sub-agent files beside it are looked for
    (f.parent / "agent-x.jsonl").write_text('{"type":"session"}\n')
    (f.parent / "s1" / "subagents").mkdir(parents=True)
    (f.parent / "s1" / "subagents" / "agent-y.jsonl").write_text('{"type":"session"}\n')
    enqueue(cfg, "main", str(f))
    runner = FakeRunner()
    drain(TaskLoop(settings, q, runner=runner))
    assert runner.calls == [{f}]


def test_the_worker_reads_the_sub_agents_turns_of_a_claude_code_session(tmp_path):
    """Real files, the real reader: the one task for the main transcript puts every sub-agent's
    turns in the batch (their task specs as the parent agent's), and no other session's."""
    from distill.tails.ledger import create_batch, load_batch

    settings, q, cfg, f = claude_world(tmp_path)
    texts: list[tuple[str, str]] = []

    def reading_runner(settings, *, only_files, progress):
        made = create_batch(settings, only_files=only_files)
        batch = load_batch(Path(made.batch_file))
        texts.extend((m.author, m.text) for a in batch.agents for m in a.messages)
        return RunSummary(action="committed")

    enqueue(cfg, "cc", str(f["main"]))
    assert drain(TaskLoop(settings, q, runner=reading_runner)) == 1
    assert sorted(texts) == sorted([
        ("person", "Please find why the export job fails."), ("assistant", "The export job fails on a missing bucket."),
        ("parent_agent", "Search the repo for the bucket name."),
        ("assistant", "The bucket name is set in deploy/export.env."),
        ("parent_agent", "Read the export logs."), ("assistant", "The logs show NoSuchBucket errors.")])
