"""Every file distill leaves in a state directory is one that ``distill.tails.state`` names.

Cron, the daemon, backfill and hooks meet only through these files, so a module that invents
its own path (or spells a shared one differently) splits them silently. This drives the real
code through a run, a commit, an abort, a truncation, a distilled run, a backfill and a hook's
task, then accounts for every path left behind.
"""

from __future__ import annotations

from pathlib import Path

from distill.backfill import run_backfill
from distill.enqueue import enqueue
from distill.pipeline import run_distill
from distill.settings.hook import HookConfig
from distill.tails.ledger import abort_batch, commit_batch, create_batch
from distill.tails.state import StateDir, chunks_file, distilling_lock, noop_file, seen_dir
from tests.tail_helpers import append, fact, header, msg, session, settings_for


def test_every_path_in_the_state_directory_is_named_by_state_dir(tmp_path):
    s = settings_for(tmp_path, db=tmp_path / "db")
    a, b = session(tmp_path, "main", "a"), session(tmp_path, "ops", "b")
    a.write_bytes(header("a") + msg(fact(1, "a")))
    b.write_bytes(header("b") + msg(fact(1, "b")))
    commit_batch(s, Path(create_batch(s).batch_file))
    append(a, msg(fact(2, "a")))
    abort_batch(s, Path(create_batch(s).batch_file))
    b.write_bytes(header("b") + msg(fact(3, "b")))  # shorter: truncated, re-read, committed turns skipped
    assert run_distill(s).action == "committed"
    run_backfill(s)
    enqueue(HookConfig.from_settings(s), "main", str(a))

    state = s.state
    assert isinstance(state, StateDir) and state.root == s.state_dir
    files = {state.cursor, state.lock, state.last_run, state.backfill_plan, state.backfill_cursor,
             state.backfill_lock, state.worker_lock, state.usage, noop_file(state.cursor)}
    folders = {Path(state.queue), seen_dir(state.cursor), seen_dir(state.backfill_cursor), state.hook_manifest("x").parent}
    batches = {state.done, state.aborted}
    left = sorted(p for p in state.root.rglob("*"))
    assert state.cursor in left and state.last_run in left and seen_dir(state.cursor) in left
    assert any(p.parent == state.done for p in left) and any(p.parent == state.aborted for p in left)
    assert any(p.parent == Path(state.queue, "inbox") for p in left)
    for p in left:
        if p in files or p in folders or p in batches or p == state.batches:
            continue
        if any(f in p.parents for f in folders):
            continue
        if p.parent in batches | {state.batches} and p.suffix == ".json":
            assert state.batch(p.stem).name == p.name, p
            continue
        if p.parent == state.batches:
            batch = state.batch(p.name.lstrip(".").split(".")[0])  # batch ids hold no dot
            assert p in (chunks_file(batch), distilling_lock(batch)), p
            continue
        raise AssertionError(f"{p} is not a path distill.tails.state names")
