"""Every file distill leaves in a state directory is one that ``distill.tails.state`` names.

Cron, the daemon, backfill and hooks meet only through these files, so a module that invents
its own path (or spells a shared one differently) splits them silently. This drives the real
code through a run, a commit, an abort, a truncation, a distilled run, a backfill and a hook's
task, then accounts for every path left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_a_state_dir_that_is_a_file_is_one_clear_message_for_every_command(tmp_path):
    """No FileExistsError / NotADirectoryError traceback from the lock or the queue: every
    command (the hook's fast path too) says the state dir is a file, and writes nothing."""
    import json

    from tests.tail_helpers import run_main

    sf = tmp_path / "sf"
    sf.write_text("not a folder\n")
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    agents = ["--agents-dir", str(tmp_path / "agents")]
    for flags, words in ((["--state-dir", str(sf)], f"--state-dir {sf} is a file, not a folder"),
                         (["--state-dir", str(sf / "sub")], f"--state-dir {sf / 'sub'} lies inside a file")):
        for cmd in (["run"], ["init"], ["commit", "--batch-file", str(tmp_path / "b.json")],
                    ["abort", "--batch-file", str(tmp_path / "b.json")], ["backfill"], ["--json", "run"],
                    ["status"], ["enqueue", "--agent", "main", "--session-file", str(f)],
                    ["--json", "enqueue", "--agent", "main", "--session-file", str(f)]):
            p = run_main([*flags, *agents, *cmd])
            assert p.returncode == 2, (cmd, p.stdout, p.stderr)
            assert words in p.stderr and "Traceback" not in p.stderr + p.stdout, (cmd, p.stderr)
            if "--json" in cmd:
                assert words in json.loads(p.stdout)["error"]
    assert sf.read_text() == "not a folder\n" and sorted(tmp_path.iterdir()) == [tmp_path / "agents", sf]


def test_a_state_dir_that_is_a_file_is_named_by_where_it_was_set(tmp_path, monkeypatch):
    from distill.config import load_settings
    from distill.errors import ConfigError
    from distill.settings.hook import load_hook_config

    sf = tmp_path / "sf"
    sf.touch()
    monkeypatch.setenv("DISTILL_STATE_DIR", str(sf))
    with pytest.raises(ConfigError, match=f"DISTILL_STATE_DIR {sf} is a file, not a folder: point DISTILL_STATE_DIR"):
        load_settings()
    assert load_hook_config() is None  # the hook defers to the full settings' message
    monkeypatch.delenv("DISTILL_STATE_DIR")
    monkeypatch.setenv("DISTILL_CONFIG", str(tmp_path / "c.toml"))
    (tmp_path / "c.toml").write_text(f'state_dir = "{sf}"\n')
    with pytest.raises(ConfigError, match=f"state_dir in {tmp_path / 'c.toml'} {sf} is a file"):
        load_settings()
