"""The whole path with the default rules extractor, the real cursor and the real LanceDB store:
memories stored, batch committed only after, replays store nothing twice."""

from __future__ import annotations


import pytest

from distill.tails.ledger import create_batch, pending_batches
from distill.errors import StoreFailed
from distill.pipeline import distill_batch_file, run_distill
from tests.pipeline_helpers import EN, ZH, cursor_state, settings, stored, write_session
from tests.tail_helpers import run_main


def test_run_distill_stores_then_commits_and_second_run_is_noop(tmp_path):
    en = write_session(tmp_path, "main", "s-en", EN)
    zh = write_session(tmp_path, "ops", "s-zh", ZH)
    s = settings(tmp_path)
    summary = run_distill(s)
    rows = stored(s)
    assert summary.action == "committed" and summary.memories_added == len(rows) == 3
    assert {r.scope for r in rows} == {"global", "agent:ops"}
    texts = "\n".join(r.text for r in rows)
    assert "uv instead of pip" in texts and "libpq5" in texts and "Debian 12" in texts
    assert "good morning" not in texts.lower() and "你好" not in texts
    cur = cursor_state(s)
    assert cur[str(en)] == (en.stat().st_size, {}) and cur[str(zh)] == (zh.stat().st_size, {})
    assert pending_batches(s) == []

    again = run_distill(s)
    assert again.action == "noop" and again.memories_added == 0 and len(stored(s)) == 3

    write_session(tmp_path, "main", "s-en", [("user", "Remember that the staging DB is postgres 16 on port 5433.")],
                  append=True)
    third = run_distill(s)
    assert third.memories_added == 1 and len(stored(s)) == 4
    assert cursor_state(s)[str(en)][0] == en.stat().st_size


def test_distilled_but_not_committed_batch_is_replayed_without_duplicates(tmp_path):
    """A batch distilled but not committed: the next run finds its chunks stored (the batch's
    progress file says so), stores nothing again, and only then the cursor advances."""
    en = write_session(tmp_path, "main", "s-en", EN)
    s = settings(tmp_path)
    made = create_batch(s)
    first = distill_batch_file(s, made.batch_file, commit=False)
    assert first.action == "distilled" and first.memories_added == 3 - 1  # one agent: rule + pitfall
    assert pending_batches(s) and cursor_state(s)[str(en)][0] == 0  # cursor not past anything yet
    n = len(stored(s))

    summary = run_distill(s)
    assert summary.memories_added == 0 and summary.llm_calls == 0
    assert len(stored(s)) == n and pending_batches(s) == []
    assert cursor_state(s)[str(en)] == (en.stat().st_size, {})


def test_store_failure_leaves_batch_pending(tmp_path):
    en = write_session(tmp_path, "main", "s-en", EN)
    s = settings(tmp_path)
    s.db.parent.mkdir(parents=True, exist_ok=True)
    s.db.write_text("not a directory")  # the store cannot open: a real failure, not a mock
    with pytest.raises(StoreFailed) as err:
        run_distill(s)
    assert "left pending" in str(err.value) and str(s.db) in str(err.value)
    assert pending_batches(s) and cursor_state(s)[str(en)][0] == 0
    s.db.unlink()
    summary = run_distill(s)
    assert summary.action == "committed" and len(stored(s)) == summary.memories_added == 2
    assert cursor_state(s)[str(en)] == (en.stat().st_size, {})


def test_cli_two_phase_flow(tmp_path):
    write_session(tmp_path, "main", "s-en", EN)
    flags = ["--state-dir", str(tmp_path / "state"), "--agents-dir", str(tmp_path / "agents"),
             "--db", str(tmp_path / "db")]

    def distill(*args):
        return run_main([*flags, *args])

    run = distill("run", "--json")
    assert run.returncode == 0, run.stderr
    import json

    batch_file = json.loads(run.stdout)["batchFile"]
    out = distill("distill", "--batch-file", batch_file)
    assert out.returncode == 0, out.stderr
    assert "2 memories added" in out.stdout and f"next: distill commit --batch-file {batch_file}" in out.stdout
    again = distill("distill", "--batch-file", batch_file, "--commit")
    assert again.returncode == 0 and "0 memories added" in again.stdout  # its chunks are stored already
    done = distill("distill", "--batch-file", batch_file)
    assert done.returncode != 0 and "already committed" in done.stderr
    missing = distill("distill", "--batch-file", str(tmp_path / "nope.json"))
    assert missing.returncode != 0 and "does not exist" in missing.stderr


def test_damaged_pending_batch_does_not_stall_other_files(tmp_path):
    a = write_session(tmp_path, "main", "s-a", EN)
    s = settings(tmp_path)
    made = create_batch(s)
    from pathlib import Path

    Path(made.batch_file).write_text("{ this is not a batch")
    b = write_session(tmp_path, "ops", "s-b", ZH)
    summary = run_distill(s)
    assert summary.counters["batches_unreadable"] == 1
    assert summary.memories_added == 1 and "Debian 12" in stored(s)[0].text
    cur = cursor_state(s)
    assert cur[str(b)] == (b.stat().st_size, {})
    assert cur[str(a)][0] == 0 and cur[str(a)][1]  # still pending: nothing of it was stored


def test_a_batch_being_distilled_elsewhere_is_skipped_not_doubled(tmp_path):
    import multiprocessing
    from pathlib import Path

    from distill.errors import LockBusy
    from distill.lock import FileLock

    a = write_session(tmp_path, "main", "s-a", EN)
    s = settings(tmp_path)
    batch_file = Path(create_batch(s).batch_file)
    lock_path = batch_file.with_name(f".{batch_file.stem}.distill.lock")
    ready, release = multiprocessing.Event(), multiprocessing.Event()

    def holder():  # another process distilling this batch
        with FileLock(lock_path):
            ready.set()
            release.wait(60)

    proc = multiprocessing.get_context("fork").Process(target=holder)
    proc.start()
    try:
        assert ready.wait(30)
        with pytest.raises(LockBusy) as err:
            distill_batch_file(s, batch_file, commit=True)
        assert "another process" in str(err.value)
        summary = run_distill(s)
        assert summary.counters["batches_busy"] == 1 and summary.memories_added == 0
        assert stored(s) == [] and pending_batches(s) == [batch_file]
    finally:
        release.set()
        proc.join(30)
    assert run_distill(s).memories_added == 2
    assert cursor_state(s)[str(a)] == (a.stat().st_size, {}) and not lock_path.exists()
