"""Files a user already has on disk, written by the code before the plain core (issue 25), are
read and written back byte for byte, and a pending batch it cut is committed by this code.

``tests/data/compat_main/`` was made by main at a211689 (`distill run --json`, then
`distill status --json`) over two synthetic transcripts from tests/tail_helpers (kept beside
them): a batch file, the cursor, ``last-run.json`` and both ``--json`` lines.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from distill.model import BatchResult, LastRun, StatusResult, decode, encode_json, to_builtins
from distill.tails.cursor import Cursor
from distill.tails.ledger import commit_batch, load_batch
from tests.tail_helpers import settings_for

OLD = Path(__file__).resolve().parent / "data" / "compat_main"
OLD_ROOT = "/tmp/pc-compat"  # where main's run found the transcripts and kept its state


def test_a_batch_file_from_main_round_trips_byte_for_byte():
    raw = (OLD / "batch.json").read_bytes()
    batch = load_batch(OLD / "batch.json")
    assert [a.agent_id for a in batch.agents] == ["main", "ops"] and batch.counters == {"invalid_json": 1}
    assert "缓存目录已改" in batch.agents[0].messages[1].text
    assert orjson.dumps(to_builtins(batch), option=orjson.OPT_INDENT_2) == raw


@pytest.mark.parametrize("name, type_", [("last-run.json", LastRun), ("run.json", BatchResult),
                                         ("status.json", StatusResult)])
def test_last_run_and_the_json_lines_from_main_keep_their_bytes(name, type_):
    raw = (OLD / name).read_bytes().rstrip(b"\n")
    assert encode_json(decode(raw, type_, f"{name}: {{error}}")) == raw


def test_a_cursor_from_main_is_written_back_the_same(tmp_path):
    path = tmp_path / "cursor.json"
    shutil.copy(OLD / "cursor.json", path)
    old = path.read_bytes()
    Cursor.load(path).save()
    new = path.read_bytes()
    stamp = b'"updatedAtMs":%d' % orjson.loads(old)["updatedAtMs"]
    assert new == old.replace(stamp, b'"updatedAtMs":%d' % orjson.loads(new)["updatedAtMs"])


def test_a_pending_batch_cut_by_main_is_committed_here(tmp_path):
    """The only machine-bound parts of the files are each transcript's device:inode and path;
    with those moved to this test's copies, ``distill commit`` finishes main's batch."""
    agents = tmp_path / "agents"
    shutil.copytree(OLD / "agents", agents)
    s = settings_for(tmp_path)
    s = s.replace(agents_dir=agents)
    key_of = {}
    for rel in ("main/sessions/s1.jsonl", "ops/sessions/s2.jsonl"):
        st = os.stat(agents / rel)
        key_of[f"{OLD_ROOT}/agents/{rel}"] = (st.st_dev, st.st_ino, str(agents / rel))
    cursor = orjson.loads((OLD / "cursor.json").read_bytes())
    files = {}
    for entry in cursor["files"].values():
        dev, ino, path = key_of[entry["path"]]
        files[f"{dev}:{ino}"] = {**entry, "path": path, "mtime": os.stat(path).st_mtime_ns}
    s.state.batches.mkdir(parents=True)
    s.state.cursor.write_bytes(orjson.dumps({**cursor, "files": files}) + b"\n")
    batch = orjson.loads((OLD / "batch.json").read_bytes())
    for r in batch["ranges"]:
        r["dev"], r["inode"], r["path"] = key_of[r["path"]]
    for a in batch["agents"]:
        for m in a["messages"]:
            dev, ino, path = key_of[m["file"]]
            m["id"] = f"{dev}:{ino}:{m['start']}"
            m["file"] = path
    batch["touchedFiles"] = [key_of[p][2] for p in batch["touchedFiles"]]
    batch_file = s.state.batch(batch["batchId"])
    batch_file.write_bytes(orjson.dumps(batch, option=orjson.OPT_INDENT_2))

    done = commit_batch(s, batch_file)
    assert (done.action, done.files, done.bytes, done.turns) == ("committed", 2, 1148, 4)
    after = orjson.loads(s.state.cursor.read_bytes())["files"]
    assert sorted((e["offset"], e["pending"]) for e in after.values()) == [(349, {}), (799, {})]
    assert (s.state.done / batch_file.name).is_file() and not batch_file.exists()
