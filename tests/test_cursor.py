"""The cursor file: what a user sees when it is damaged, and that it survives a round trip."""

from __future__ import annotations

import pytest

from distill.tails.cursor import Cursor, SeenTurns, new_entry, turn_digest
from distill.errors import SchemaMismatch

from tail_helpers import cli, fact, header, msg, session, settings_for


def test_missing_cursor_is_empty_and_round_trips(tmp_path):
    c = Cursor.load(tmp_path / "cursor.json")
    assert c.files == {}
    c.files["1:2"] = new_entry("/x.jsonl", "main", "openclaw")
    c.files["1:2"].update(offset=7, pending={"b1": [7, 9, 0]})
    c.save()
    again = Cursor.load(tmp_path / "cursor.json")
    assert again.files == c.files and again.pending_batch_ids() == {"b1"}
    assert not list(tmp_path.glob(".*.tmp"))  # atomic write left no temp file


@pytest.mark.parametrize("content, words", [
    (b'{"version":1,"files":{"1:2":', "not valid JSON"),
    (b'{"version":99,"files":{}}', "version 99"),
    (b'[1,2]', "no 'files' object"),
    (b'{"version":2,"files":{"1:2":{"path":"/x"}}}', "'1:2' is malformed"),
])
def test_damaged_cursor_gives_an_actionable_message(tmp_path, content, words):
    (tmp_path / "cursor.json").write_bytes(content)
    with pytest.raises(SchemaMismatch, match=words) as err:
        Cursor.load(tmp_path / "cursor.json")
    assert str(tmp_path / "cursor.json") in str(err.value)


def test_damaged_cursor_stops_run_without_touching_anything(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    s.state_dir.mkdir(parents=True)
    s.state.cursor.write_bytes(b"{garbage")
    p = cli(s, "run", check=False, process=True)
    assert p.returncode == 1 and "is not valid JSON" in p.stderr and "Traceback" not in p.stderr
    assert s.state.cursor.read_bytes() == b"{garbage" and not s.state.batches.exists()


@pytest.mark.parametrize("damage, field", [
    (lambda e: e.pop("agent"), "field 'agent' is missing"),
    (lambda e: e.update(headLen="x"), "field 'headLen' is 'x'"),
    (lambda e: e.update(headLen=10**15), "field 'headLen'"),
    (lambda e: e.update(pending={"b": [1]}), "field 'pending' of batch 'b' is [1]"),
    (lambda e: e.update(pending={"b": [9, 3, 0]}), "field 'pending' of batch 'b'"),
    (lambda e: e.update(pending=[]), "field 'pending' is []"),
    (lambda e: e.update(offset=-5), "field 'offset' is -5"),
    (lambda e: e.update(offset=1.5), "field 'offset' is 1.5"),
    (lambda e: e.update(size="big"), "field 'size'"),
    (lambda e: e.pop("mtime"), "field 'mtime' is missing"),
    (lambda e: e.update(format=3), "field 'format' is 3"),
    (lambda e: e.update(head=None, headLen=10), "field 'head' is None"),
    (lambda e: e.update(skip="yes"), "field 'skip' is 'yes'"),
    (lambda e: e.update(archived=[]), "field 'archived' is []"),
])
def test_a_wrong_field_in_a_cursor_entry_stops_run_naming_file_entry_and_field(tmp_path, damage, field):
    """Every field the read side uses is checked at load: no KeyError / TypeError / OSError
    traceback from deep in a run, and nothing is read or moved."""
    import json

    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    cli(s, "run")
    cli(s, "abort", "--batch-file", str(next(s.state.batches.glob("*.json"))))
    data = json.loads(s.state.cursor.read_bytes())
    (key, entry), = data["files"].items()
    damage(entry)
    s.state.cursor.write_text(json.dumps(data))
    before = s.state.cursor.read_bytes()
    for args in (["run"], ["run", "--json"], ["status"]):
        p = cli(s, *args, check=False)
        out = p.stderr + p.stdout
        assert p.returncode == 1 and "Traceback" not in out, out
        assert str(s.state.cursor) in out and f"entry {key!r} is malformed" in out and field in out, out
        assert "Fix that field by hand, or delete the entry" in out
    assert s.state.cursor.read_bytes() == before
    assert len(list(s.state.batches.glob("*.json"))) == 0


def test_entries_distill_writes_pass_the_check(tmp_path):
    from distill.tails.cursor import entry_problem

    e = new_entry("/x.jsonl", "main", None)
    assert entry_problem(e) is None
    e.update(offset=7, skip=True, rewritten=True, archived=False, pending={"b1": [7, 9, 1]}, head="ab", headLen=7)
    assert entry_problem(e) is None
    c = Cursor(tmp_path / "cursor.json", {"1:2": e})
    c.save()
    assert Cursor.load(tmp_path / "cursor.json").files == c.files


def test_seen_turns_are_kept_per_file(tmp_path):
    seen = SeenTurns(tmp_path / "cursor.json")
    seen.add("1:2", [turn_digest("user", "a"), turn_digest("assistant", "b")])
    seen.add("1:2", [turn_digest("user", "c")])
    assert seen.load("1:2") == {turn_digest("user", "a"), turn_digest("assistant", "b"), turn_digest("user", "c")}
    assert turn_digest("assistant", "a") not in seen.load("1:2")
    assert seen.load("3:4") == set()
    seen.drop("1:2")
    assert seen.load("1:2") == set()


def test_cursor_of_jsonl_distill_py_is_carried_over(tmp_path):
    """memory-lancedb-pro's script used the same state dir: its committed offsets are kept."""
    import json

    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    done = f.stat().st_size
    with open(f, "ab") as fh:
        fh.write(msg(fact(2)))
    gone = str(tmp_path / "agents" / "main" / "sessions" / "gone.jsonl")
    s.state_dir.mkdir(parents=True)
    s.state.cursor.write_text(json.dumps({"version": 1, "files": {
        str(f): {"agentId": "main", "inode": f.stat().st_ino, "committed": done, "pending": None,
                 "pendingBatch": None, "lastSize": done, "updatedAtMs": 1},
        gone: {"agentId": "main", "inode": 1, "committed": 10, "pending": None, "pendingBatch": None}}}))
    out = cli(s, "run", "--json").stdout
    import orjson

    batch = orjson.loads(open(orjson.loads(out)["batchFile"], "rb").read())
    assert [m["text"] for a in batch["agents"] for m in a["messages"]] == [fact(2)]
