"""A batch this state dir does not hold pending is never distilled, stored, committed, aborted
or moved: ``commit`` / ``abort`` / ``retry`` / ``distill`` with ``--batch-file`` of another
state dir's batch, a committed one, a missing file or a folder refuse with a message naming
the file, and nothing anywhere (state dirs, stores) changes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from distill.pipeline import run_distill
from distill.tails.ledger import create_batch, pending_batches
from tests.pipeline_helpers import EN, settings, stored, write_session
from tests.tail_helpers import run_main


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a digest of its bytes (a store write adds files)."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            p = Path(folder, name)
            out[str(p.relative_to(root))] = hashlib.blake2b(p.read_bytes(), digest_size=8).hexdigest()
    return out


def cli(s, *args: str):
    flags = ["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "--db", str(s.db)]
    return run_main([*flags, *args], env={"DISTILL_LLM": "rules"})


@pytest.fixture
def two(tmp_path):
    """``ours``: a state dir whose store already holds the memories of the transcripts;
    ``theirs``: another state dir, same transcripts, with a pending batch of them."""
    write_session(tmp_path, "main", "s-en", EN)
    ours = settings(tmp_path, state_dir=tmp_path / "ours", db=tmp_path / "ours-db")
    theirs = settings(tmp_path, state_dir=tmp_path / "theirs", db=tmp_path / "theirs-db")
    assert run_distill(ours).memories_added == 2
    made = create_batch(theirs)
    assert made.action == "created"
    return ours, theirs, Path(made.batch_file)


@pytest.mark.parametrize("args", [("retry", "--drop"), ("retry",), ("distill",), ("distill", "--commit"),
                                  ("commit",), ("abort",)])
def test_a_batch_of_another_state_dir_is_refused_and_nothing_changes(two, tmp_path, args):
    ours, theirs, batch = two
    seen = [r.metadata.get("seen_count") for r in stored(ours)]
    before = snapshot(tmp_path)
    p = cli(ours, *args, "--batch-file", str(batch))
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "FileNotFoundError" not in p.stderr
    assert str(batch) in p.stderr and "is not a batch of this state dir" in p.stderr
    assert str(ours.state_dir) in p.stderr
    assert snapshot(tmp_path) == before, "no store, state dir or batch file was written"
    assert [r.metadata.get("seen_count") for r in stored(ours)] == seen
    assert pending_batches(theirs) == [batch]


@pytest.mark.parametrize("args", [("commit",), ("abort",), ("retry", "--drop"), ("distill",)])
def test_a_copy_outside_batches_of_an_unknown_batch_is_refused(two, tmp_path, args):
    ours, _theirs, batch = two
    copy = tmp_path / "elsewhere" / batch.name
    copy.parent.mkdir()
    shutil.copy(batch, copy)
    before = snapshot(tmp_path)
    p = cli(ours, *args, "--batch-file", str(copy))
    assert p.returncode == 1 and "is not a batch of this state dir" in p.stderr and str(copy) in p.stderr
    assert snapshot(tmp_path) == before


def test_a_batch_naming_another_state_dirs_cursor_is_refused(two, tmp_path):
    """A batch file under our batches/ whose cursor is another state dir's (a backfill batch
    copied over): committing it would advance that other cursor."""
    ours, theirs, batch = two
    data = json.loads(batch.read_text())
    data["cursorPath"] = str(theirs.state.backfill_cursor.absolute())
    ours.state.batch(data["batchId"]).write_text(json.dumps(data))
    before = snapshot(tmp_path)
    for args in (("commit",), ("abort",), ("retry", "--drop")):
        p = cli(ours, *args, "--batch-file", str(ours.state.batch(data["batchId"])))
        assert p.returncode == 1 and "not one of this state dir's" in p.stderr, p.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("drop", [True, False])
def test_retry_of_a_committed_batch_is_refused_not_stored_again(two, tmp_path, drop):
    ours, _theirs, _batch = two
    (done,) = ours.state.done.glob("*.json")
    before = snapshot(tmp_path)
    for path in (done, ours.state.batch(done.stem)):  # where it is, and where `run` printed it
        p = cli(ours, "retry", *(["--drop"] if drop else []), "--batch-file", str(path))
        assert p.returncode == 1 and "already committed" in p.stderr and "nothing to retry" in p.stderr
    assert snapshot(tmp_path) == before


def test_retry_of_a_missing_file_says_it_does_not_exist(two, tmp_path):
    ours, _theirs, _batch = two
    before = snapshot(tmp_path)
    for args in (("retry",), ("retry", "--drop")):
        p = cli(ours, *args, "--batch-file", str(tmp_path / "nonexistent.json"))
        assert p.returncode == 1 and "nonexistent.json does not exist" in p.stderr
        assert "nothing to retry" not in p.stdout
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("args", [("commit",), ("abort",), ("retry",), ("distill",)])
def test_a_folder_is_named_as_a_folder(two, tmp_path, args):
    ours, _theirs, _batch = two
    before = snapshot(tmp_path)
    p = cli(ours, *args, "--batch-file", str(tmp_path))
    assert p.returncode == 1 and f"{tmp_path} is a folder, not a batch file" in p.stderr
    assert snapshot(tmp_path) == before


def test_retry_of_a_pending_batch_without_set_aside_chunks_stores_nothing(tmp_path):
    """`retry` is for set-aside chunks; a plain pending batch is left to `run --distill`."""
    write_session(tmp_path, "main", "s-en", EN)
    s = settings(tmp_path)
    batch = Path(create_batch(s).batch_file)
    before = snapshot(tmp_path)
    p = cli(s, "retry", "--drop", "--batch-file", str(batch))
    assert p.returncode == 0 and "nothing to retry" in p.stdout
    assert snapshot(tmp_path) == before and pending_batches(s) == [batch]


def test_commit_and_abort_of_our_own_batch_through_a_copy_move_only_ours(tmp_path):
    write_session(tmp_path, "main", "s-en", EN)
    s = settings(tmp_path)
    batch = Path(create_batch(s).batch_file)
    copy = tmp_path / "copy.json"
    shutil.copy(batch, copy)
    assert cli(s, "commit", "--batch-file", str(copy)).returncode == 0
    assert copy.exists() and (s.state.done / batch.name).exists() and not pending_batches(s)


def test_a_batch_id_that_is_a_path_is_no_batch_of_ours(two, tmp_path):
    ours, _theirs, batch = two
    outside = tmp_path / "outside.json"
    shutil.copy(batch, outside)
    data = json.loads(batch.read_text())
    data["batchId"] = "../../outside"
    crafted = ours.state.batches / "crafted.json"
    crafted.write_text(json.dumps(data))
    before = snapshot(tmp_path)
    for args in (("commit",), ("abort",), ("retry", "--drop")):
        p = cli(ours, *args, "--batch-file", str(crafted))
        assert p.returncode == 1 and "is not a batch of this state dir" in p.stderr, p.stderr
    assert snapshot(tmp_path) == before
