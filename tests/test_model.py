"""The data contracts (distill/model.py) keep the files already on disk readable and unchanged."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from distill.tails.ledger import create_batch, load_batch, load_progress, record_last_run
from distill.errors import SchemaMismatch
from distill.model import BatchProgress, ChunkState, RunSummary, to_builtins
from distill.tails.status import tail_status
from tests.tail_helpers import fact, header, msg, session, settings_for

ROOT = Path(__file__).resolve().parent.parent


def test_a_batch_file_written_before_msgspec_still_loads():
    """state.example's batch was written by the pydantic models, before ``author`` existed."""
    path = ROOT / "state.example" / "examples" / "batch.json"
    batch = load_batch(path)
    raw = orjson.loads(path.read_bytes())
    assert batch.batch_id == raw["batchId"] and batch.created_at_ms == raw["createdAtMs"]
    assert [a.agent_id for a in batch.agents] == [a["agentId"] for a in raw["agents"]]
    first = batch.agents[0].messages[0]
    assert (first.session_id, first.entry_id, first.author) == (
        raw["agents"][0]["messages"][0]["sessionId"], raw["agents"][0]["messages"][0]["entryId"], None)
    again = to_builtins(batch)
    for a in again["agents"]:
        for m in a["messages"]:
            assert m.pop("author") is None  # the one key an old file lacks
    assert again == raw


def test_a_batch_file_round_trips_byte_for_byte(tmp_path):
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + msg(fact(2), "assistant", 1))
    res = create_batch(settings_for(tmp_path))
    written = Path(res.batch_file).read_bytes()
    assert orjson.dumps(to_builtins(load_batch(res.batch_file)), option=orjson.OPT_INDENT_2) == written
    assert b'"batchId"' in written and b'"sessionId"' in written and b'"agentId"' in written


@pytest.mark.parametrize("content, named", [
    (b"{ not json", "batch file"),
    (b'{"version": 2, "createdAtMs": 1}', "batchId"),  # a required key missing
    (b'{"batchId": "b", "createdAtMs": 1, "ranges": [{"path": "/x", "dev": "one", "inode": 1, "start": 0, '
     b'"end": 1, "agentId": "main"}]}', "$.ranges[0].dev"),  # a mistyped field, named by its place
    (b'[1, 2]', "Expected `object`, got `array`"),
])
def test_a_bad_batch_file_is_refused_naming_file_and_field(tmp_path, content, named):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    with pytest.raises(SchemaMismatch) as err:
        load_batch(bad)
    assert str(bad) in str(err.value) and "is not a distill batch" in str(err.value) and named in str(err.value)


def test_damaged_chunk_progress_says_what_to_do(tmp_path):
    batch = tmp_path / "b.json"
    (tmp_path / "b.chunks").write_bytes(b'{"chunkTokens": 10, "overlapTurns": 1, "chunks": {"0": {"status": "lost"}}}')
    with pytest.raises(SchemaMismatch, match=r"b\.chunks is damaged .*delete it"):
        load_progress(batch)
    good = BatchProgress(chunk_tokens=10, overlap_turns=1, chunks={"0": ChunkState(status="failed", agent="main")})
    (tmp_path / "b.chunks").write_bytes(orjson.dumps(to_builtins(good)))
    assert load_progress(batch) == good
    assert b'"chunkTokens":10' in (tmp_path / "b.chunks").read_bytes()


def test_last_run_keeps_its_keys_and_a_damaged_one_is_not_shown(tmp_path):
    s = settings_for(tmp_path)
    s.state_dir.mkdir(parents=True)
    record_last_run(s, RunSummary(action="created", files=1, turns=2), "/b.json")
    raw = orjson.loads((s.state_dir / "last-run.json").read_bytes())
    assert list(raw) == ["atMs", "action", "batchFile", "summary", "error"] and raw["summary"]["turns"] == 2
    assert raw["error"] is None  # set only for a run that failed
    assert tail_status(s).last_run.summary.turns == 2
    (s.state_dir / "last-run.json").write_bytes(b'{"atMs": "yesterday"}')
    assert tail_status(s).last_run is None  # status stays usable; the next run rewrites the file


def test_a_last_run_written_by_the_msgspec_version_loads_and_a_bad_one_is_named(tmp_path):
    """``last-run.json`` is now read without msgspec: the file the previous version wrote (these
    exact bytes) loads the same, and a mistyped field is named by its place."""
    from distill.model import LastRun, decode

    old = (b'{"atMs":1796070004377,"action":"noop","batchFile":null,"summary":{"action":"noop","files":3,'
           b'"bytes":0,"turns":0,"memories_added":0,"memories_duplicate":0,"llm_calls":0,"tokens":0,'
           b'"seconds":0.2,"counters":{"vanished":1}}}')
    last = decode(old, LastRun, "last-run.json: {error}")
    assert (last.at_ms, last.batch_file, last.summary.files, last.summary.counters, last.error) == (
        1796070004377, None, 3, {"vanished": 1}, None)
    # written back the same, with the fields added since (the summary's warnings, a failed run's
    # error) at their defaults
    assert orjson.dumps(to_builtins(last)) == old.replace(b'{"vanished":1}}',
                                                          b'{"vanished":1},"errors":[]},"error":null')
    bad = old.replace(b'"files":3', b'"files":"3"')
    with pytest.raises(SchemaMismatch, match=r"Expected `int`, got `str` - at `\$\.summary\.files`"):
        decode(bad, LastRun, "last-run.json: {error}")
    with pytest.raises(SchemaMismatch, match="missing required field `atMs`"):
        decode(b'{"action": "noop", "summary": {}}', LastRun, "last-run.json: {error}")
