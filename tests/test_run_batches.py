"""`create_batch` / `commit_batch` / `abort_batch` on real files: every turn exactly once.

Each test drives the life of a transcript (append, partial line, rename, archive, truncate,
rewrite, delete, bad lines) and checks what a user would notice: which turns land in a
batch, that nothing is read twice, and that a counter names what was skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from distill.tails.ledger import abort_batch, commit_batch, pending_batches
from distill.tails.cursor import Cursor
from distill.cli.render import render
from distill.errors import DistillError

from tail_helpers import append, cli, fact, header, msg, run, session, settings_for, texts


def commit(s, res):
    return commit_batch(s, Path(res.batch_file))


def test_new_file_then_append_reads_each_turn_once(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + msg(fact(2), "assistant"))
    res, b = run(s)
    assert res.action == "created" and texts(b) == [fact(1), fact(2)]
    assert [m.role for m in b.agents[0].messages] == ["user", "assistant"]
    m = b.agents[0].messages[0]
    assert m.file == str(f) and f.read_bytes()[m.start:m.end] == msg(fact(1))
    assert b.ranges[0].start == 0 and b.ranges[0].end == f.stat().st_size
    commit(s, res)
    assert run(s)[0].action == "noop"
    append(f, msg(fact(3)))
    res, b = run(s)
    assert texts(b) == [fact(3)]


def test_partial_last_line_waits_until_complete(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    line = msg(fact(2))
    f.write_bytes(header() + msg(fact(1)) + line[:30])
    res, b = run(s)
    assert texts(b) == [fact(1)]
    assert b.ranges[0].end == len(header() + msg(fact(1)))
    commit(s, res)
    assert run(s)[0].action == "noop"
    append(f, line[30:])
    res, b = run(s)
    assert texts(b) == [fact(2)]


def test_pending_file_waits_while_other_files_go_on(tmp_path):
    s = settings_for(tmp_path)
    a, c = session(tmp_path, "main", "a"), session(tmp_path, "ops", "c")
    a.write_bytes(header() + msg(fact(1)))
    res1, _ = run(s)
    append(a, msg(fact(2)))
    c.write_bytes(header() + msg(fact(9)))
    res2, b2 = run(s)
    assert texts(b2) == [fact(9)]  # a waits on its pending range; c goes on
    assert res2.summary.counters["files_waiting_on_pending"] == 1
    assert sorted(res2.batch_files) == sorted([res1.batch_file, res2.batch_file])
    commit(s, res1)
    commit(s, res2)
    assert texts(run(s)[1]) == [fact(2)]


def test_nothing_new_but_pending_reports_pending(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    res1, _ = run(s)
    res2, _ = run(s)
    assert res2.action == "pending" and res2.batch_files == [res1.batch_file]
    assert pending_batches(s) == [Path(res1.batch_file)]


def test_commit_is_idempotent_and_abort_rereads(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    res, _ = run(s)
    assert commit(s, res).files == 1
    assert commit(s, res).files == 0  # second commit: no-op, no error
    assert (s.state.done / Path(res.batch_file).name).exists()
    append(f, msg(fact(2)))
    res, b = run(s)
    abort_batch(s, Path(res.batch_file))
    with pytest.raises(DistillError, match="aborted"):
        commit(s, res)
    assert texts(run(s)[1]) == [fact(2)]  # released bytes are read again


def test_rename_keeps_the_cursor(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path, name="old")
    f.write_bytes(header() + msg(fact(1)))
    commit(s, run(s)[0])
    g = f.with_name("new.jsonl")
    f.rename(g)
    append(g, msg(fact(2)))
    res, b = run(s)
    assert texts(b) == [fact(2)]
    assert b.agents[0].messages[0].file == str(g)
    assert res.summary.counters["renamed"] == 1


def test_rename_to_reset_archive_finishes_the_tail_then_forgets(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    commit(s, run(s)[0])
    append(f, msg(fact(2)) + msg(fact(3)))
    archive = f.with_name(f.name + ".reset.2026-11-29T10-00-00.000Z")
    f.rename(archive)
    res, b = run(s)
    assert texts(b) == [fact(2), fact(3)]  # from the archive, same inode
    assert b.agents[0].messages[0].file == str(archive)
    commit(s, res)
    res, b = run(s)
    assert res.action == "noop" and res.summary.counters["archive_finished"] == 1
    assert Cursor.load(s.state.cursor).files == {}
    # a fresh session file appearing under the old name is a new file, read from 0
    f.write_bytes(header() + msg(fact(4)))
    assert texts(run(s)[1]) == [fact(4)]


def test_untracked_archives_are_never_read(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.with_name("x.jsonl.deleted.2026-01-01").write_bytes(header() + msg(fact(1)))
    f.with_name("y.jsonl.reset.2026-01-01").write_bytes(header() + msg(fact(2)))
    assert run(s)[0].action == "noop"


def test_truncation_rereads_without_distilling_twice(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + msg(fact(2)) + msg(fact(3)))
    commit(s, run(s)[0])
    f.write_bytes(header() + msg(fact(1)))  # shrank: truncated and partly rewritten
    append(f, msg(fact(7)))
    res, b = run(s)
    assert texts(b) == [fact(7)]
    assert res.summary.counters["truncated"] == 1
    assert res.summary.counters["turns_already_read"] == 1


def test_in_place_rewrite_of_the_head_is_noticed(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header("s1") + msg(fact(1)) + msg(fact(2)))
    commit(s, run(s)[0])
    # same inode, same or larger size, different content (e.g. an editor rewrote it)
    with open(f, "r+b") as fh:
        fh.write(header("s2") + msg(fact(2)) + msg(fact(5)) + msg(fact(6)))
    res, b = run(s)
    assert texts(b) == [fact(5), fact(6)]
    assert res.summary.counters["rewritten"] == 1


def test_deleted_file_leaves_the_cursor_and_releases_its_pending_batch(tmp_path):
    s = settings_for(tmp_path)
    a, c = session(tmp_path, "main", "a"), session(tmp_path, "main", "c")
    a.write_bytes(header() + msg(fact(1)))
    c.write_bytes(header() + msg(fact(2)))
    res, b = run(s)
    a.unlink()
    c.unlink()
    res2, _ = run(s)
    assert res2.released == [b.batch_id] and res2.summary.counters["deleted"] == 2
    assert res2.action == "noop"
    assert Cursor.load(s.state.cursor).files == {}
    assert "released" in render(res2)


@pytest.mark.parametrize("bad, counter", [
    (b'{"type":"message","message":{"role":"user","content":[{"type":"text","text":"cut off', "invalid_json"),
    (b'[{"type":"message"}]', "not_object"),
    (b'{"type":"message","id":"x","message":{"role":"user","content":"caf\xe9 \xff broken utf8 deploy with uv"}}', "invalid_utf8"),
    (b'\x00\x00\x00\x00' + msg(fact(50))[:-1], "nul_bytes"),
])
def test_bad_lines_are_counted_and_reading_goes_on(tmp_path, bad, counter):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + bad + b"\n" + msg(fact(2)))
    res, b = run(s)
    assert fact(1) in texts(b) and fact(2) in texts(b)
    assert res.summary.counters[counter] >= 1
    commit(s, res)
    assert run(s)[0].action == "noop"


def test_a_50_mb_line_is_skipped_counted_and_not_waited_on(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    big = b'{"type":"message","message":{"role":"toolResult","content":"' + b"A" * (50 << 20)
    f.write_bytes(header() + msg(fact(1)) + big)  # still being written: no newline yet
    res, b = run(s)
    assert texts(b) == [fact(1)] and res.summary.counters["lines_too_long"] == 1
    commit(s, res)
    append(f, b'"}}\n' + msg(fact(2)))
    res, b = run(s)
    assert texts(b) == [fact(2)]
    assert res.summary.counters.get("lines_too_long", 0) == 0  # counted once, not twice


def test_per_agent_cap_ends_the_batch_early_without_dropping(tmp_path):
    s = settings_for(tmp_path, max_messages_per_agent=3)
    f = session(tmp_path)
    g = session(tmp_path, name="s2")
    f.write_bytes(header() + b"".join(msg(fact(i)) for i in range(5)))
    g.write_bytes(header() + msg(fact(0, "g")))
    seen = []
    for _ in range(5):
        res, b = run(s)
        if res.action == "noop":
            break
        assert len(texts(b)) <= 3
        seen += texts(b)
        commit(s, res)
    assert sorted(seen) == sorted([fact(i) for i in range(5)] + [fact(0, "g")])


def test_noise_only_tail_is_committed_without_a_batch(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg("thanks") + msg("NO_REPLY", "assistant"))
    res, b = run(s)
    assert res.action == "noop" and b is None and res.summary.bytes == f.stat().st_size
    assert Cursor.load(s.state.cursor).files[f"{f.stat().st_dev}:{f.stat().st_ino}"]["offset"] == f.stat().st_size


def test_distiller_agent_and_allow_list(tmp_path):
    s = settings_for(tmp_path, allowed_agent_ids="main,memory-distiller")
    session(tmp_path, "main").write_bytes(header() + msg(fact(1)))
    session(tmp_path, "ops").write_bytes(header() + msg(fact(2)))
    session(tmp_path, "memory-distiller").write_bytes(header() + msg(fact(3)))
    session(tmp_path, "bad id!").write_bytes(header() + msg(fact(4)))
    assert texts(run(s)[1]) == [fact(1)]


def test_only_files_and_read_limit_and_separate_cursor(tmp_path):
    s = settings_for(tmp_path)
    a, c = session(tmp_path, "main", "a"), session(tmp_path, "main", "c")
    a.write_bytes(header() + msg(fact(1)) + msg(fact(2)))
    c.write_bytes(header() + msg(fact(3)))
    res, b = run(s, only_files={a})
    assert texts(b) == [fact(1), fact(2)]
    # a backfill-style cursor that reads c only up to its first message
    other = tmp_path / "state" / "backfill-cursor.json"
    limit = len(header() + msg(fact(3))) - 1
    res2, b2 = run(s, cursor_path=other, read_limit=lambda key: limit,
                   file_filter=lambda p, st: p.name == "c.jsonl")
    assert res2.action == "noop"  # the line is not complete below the limit
    res3, b3 = run(s, cursor_path=other, file_filter=lambda p, st: p.name == "c.jsonl")
    assert texts(b3) == [fact(3)] and b3.cursor_path == str(other)
    commit_batch(s, Path(res3.batch_file))  # commit finds the backfill cursor from the batch
    assert pending_batches(s, cursor_path=other) == []
    assert pending_batches(s) == [Path(res.batch_file)]


def test_batch_keeps_the_legacy_keys(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    res, _ = run(s)
    data = orjson.loads(Path(res.batch_file).read_bytes())
    assert {"version", "createdAtMs", "agents", "touchedFiles"} <= data.keys()
    m = data["agents"][0]["messages"][0]
    assert data["agents"][0]["agentId"] == "main" and {"ts", "role", "text"} <= m.keys()
    assert m["ts"] == 1795165200000  # the entry's timestamp 2026-11-20T09:00:00Z, in ms


def test_crash_between_batch_write_and_cursor_write_rereads(tmp_path, monkeypatch):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    monkeypatch.setattr(Cursor, "save", lambda self: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run(s)
    monkeypatch.undo()
    orphan = next(s.state.batches.glob("*.json"))
    with pytest.raises(DistillError, match="not pending"):
        commit_batch(s, orphan)
    res, b = run(s)
    assert texts(b) == [fact(1)]
    assert list(p.name for p in s.state.batches.glob("*.json")) == [Path(res.batch_file).name]


def test_rename_to_archive_while_pending_waits_then_finishes(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    res, _ = run(s)
    append(f, msg(fact(2)))
    archive = f.with_name(f.name + ".deleted.2026-11-29")
    f.rename(archive)
    assert run(s)[0].action == "pending"  # the archived file waits on its pending range
    commit(s, res)
    res, b = run(s)
    assert texts(b) == [fact(2)]
    commit(s, res)
    assert run(s)[0].action == "noop" and Cursor.load(s.state.cursor).files == {}


def test_claude_code_streamed_message_is_one_turn_covering_its_lines(tmp_path):
    import json

    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        '[[sources]]\npath = "../claude"\nagent_id = "claude-code"\nformat = "claude-code"\n')
    f = tmp_path / "claude" / "-home-u-src" / "abc.jsonl"
    f.parent.mkdir(parents=True)

    def line(uuid, content, mid="msg_1"):
        return (json.dumps({"type": "assistant", "uuid": uuid, "sessionId": "abc", "isSidechain": False,
                            "timestamp": "2026-11-22T10:00:00.000Z",
                            "message": {"id": mid, "role": "assistant", "content": content}}) + "\n").encode()

    user = (json.dumps({"type": "user", "uuid": "u1", "sessionId": "abc", "timestamp": "2026-11-22T10:00:00.000Z",
                        "message": {"role": "user", "content": fact(1)}}) + "\n").encode()
    a1 = line("a1", [{"type": "text", "text": "Pitfall: vite keeps port 5173 busy after a killed terminal."}])
    a2 = line("a2", [{"type": "text", "text": "Fix: pkill -f vite before npm run dev."}])
    f.write_bytes(user + a1 + a2)
    from distill.config import load_settings

    s = load_settings(state_dir=state, agents_dir=tmp_path / "none")
    res, b = run(s)
    msgs = b.agents[0].messages
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert "5173" in msgs[1].text and "pkill" in msgs[1].text
    assert (msgs[1].start, msgs[1].end) == (len(user), len(user + a1 + a2))
    assert b.ranges[0].end == f.stat().st_size


def test_a_missing_package_stops_the_run_and_loses_no_line(tmp_path, monkeypatch):
    """detect-secrets gone from the install (a broken venv, a partial upgrade): the run stops,
    naming it, rather than skip as a "parser error" every line whose redaction needs it; no
    cursor moves, and once it is back the same lines are read and redacted."""
    import sys

    from distill.text import redact

    s = settings_for(tmp_path)
    needs = "Decision: internationalization strings live in locales/en.json from now on."
    for i in range(3):
        session(tmp_path, name=f"s{i}").write_bytes(header(f"s{i}") + msg(fact(i)) + msg(needs))
    monkeypatch.setitem(sys.modules, "detect_secrets", None)
    monkeypatch.setattr(redact, "_ds_rules", None)
    p = cli(s, "run", check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "detect-secrets is not installed" in p.stderr and "reinstall distill" in p.stderr
    assert not (s.state_dir / "cursor.json").exists() and pending_batches(s) == []

    monkeypatch.delitem(sys.modules, "detect_secrets")
    res, b = run(s)
    assert sorted(texts(b)) == sorted([fact(i) for i in range(3)] + [needs] * 3)
    assert "parser_error" not in res.summary.counters


@pytest.mark.parametrize("split", ["run", "cap"])
def test_a_codex_message_split_from_its_copy_by_a_run_is_read_once(tmp_path, split):
    """Codex writes a message twice (response_item, then event_msg). A cron run between the
    two writes, or a batch full after the first, must not make the second a new turn."""
    from sources_lines import FIRST_LINES, cx_event, cx_item, cx_output

    from distill.config import SourceRoot

    said = "Decision: the nightly export job runs on the reporting replica from now on."
    item = cx_item("message", role="user", content=[{"type": "input_text", "text": said}])
    event = cx_event("user_message", message=said, images=[])
    call = cx_item("function_call", name="exec_command", arguments="{}", call_id="c1")
    failed = cx_output("c1", "Exit code: 1\nOutput:\nError: relation exports does not exist\n")
    f = tmp_path / "codex" / "rollout-2026-11-29T10-00-00-x1.jsonl"
    f.parent.mkdir()
    s = settings_for(tmp_path, sources=[SourceRoot(path=f.parent, agent_id="codex", format="codex")])
    if split == "run":
        f.write_bytes(FIRST_LINES["codex"] + item + call)
    else:
        f.write_bytes(FIRST_LINES["codex"] + item + call + event + failed)
        s = s.replace(max_messages_per_agent=1)
    res, b = run(s)
    assert texts(b) == [said]
    commit(s, res)
    if split == "run":
        append(f, event + failed)
    res, b = run(s)
    assert texts(b) == ["[tool exec failed: exec_command: Error: relation exports does not exist]"]
    assert res.summary.counters["duplicate"] == 1


@pytest.mark.parametrize("goes_on", [True, False])
def test_a_claude_message_cut_by_a_run_is_read_whole_when_it_goes_on(tmp_path, goes_on):
    """Claude Code streams one message as several lines. A run between them (cron, a hook
    fired mid-session) gave its first lines alone; when the message goes on, the next run's
    turn is the whole message, so its pitfall and its fix meet. A message that does not go on
    is not given again."""
    from sources_lines import cc_assistant, cc_user

    from distill.config import SourceRoot

    pitfall = "Pitfall: `kubectl rollout status` hangs when the readinessProbe checks the wrong port."
    fix = "Fix: changed the readinessProbe port to 8080 and `kubectl rollout status` finished."
    f = tmp_path / "claude" / "proj" / "c1.jsonl"
    f.parent.mkdir(parents=True)
    s = settings_for(tmp_path, sources=[SourceRoot(path=tmp_path / "claude", agent_id="cc", format="claude-code")])
    f.write_bytes(cc_user("why does the deploy hang?") + cc_assistant("msg_B1", [{"type": "text", "text": pitfall}]))
    res, b = run(s)
    assert texts(b) == ["why does the deploy hang?", pitfall]
    commit(s, res)
    read = f.stat().st_size
    append(f, (cc_assistant("msg_B1", [{"type": "text", "text": fix}]) if goes_on else b"") + cc_user("thanks, what next?"))
    res, b = run(s)
    assert texts(b) == ([pitfall + "\n\n" + fix] if goes_on else []) + ["thanks, what next?"]
    assert b.agents[0].messages[0].start == read  # its range is this run's bytes only


def test_a_parser_bug_on_one_line_is_reported_not_fatal(tmp_path, monkeypatch):
    from distill.sources.openclaw import OpenClawParser

    real = OpenClawParser.feed

    def feed(self, line, start, end):
        if b"BOOM" in line:
            raise ValueError("unexpected shape")
        return real(self, line, start, end)

    monkeypatch.setattr(OpenClawParser, "feed", feed)
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + msg("BOOM " + fact(2)) + msg(fact(3)))
    res, b = run(s)
    assert texts(b) == [fact(1), fact(3)]
    assert res.summary.counters["parser_error"] == 1
    assert any("unexpected shape" in e and str(f) in e for e in res.errors)


def test_a_vanished_root_folder_is_not_taken_for_deleted_files(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    commit(s, run(s)[0])
    (tmp_path / "agents").rename(tmp_path / "agents.unmounted")
    res, _ = run(s)
    assert res.summary.counters["folder_missing"] == 1 and len(Cursor.load(s.state.cursor).files) == 1
    (tmp_path / "agents.unmounted").rename(tmp_path / "agents")
    append(f, msg(fact(2)))
    assert texts(run(s)[1]) == [fact(2)]  # not re-read from 0


SECRETS = [
    "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3,
    "sk-ant-api03-" + "x9Y8z7W6v5U4t3S2r1Q0" * 4,
    "AIzaSyD" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P",
    "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "xoxb-123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "postgres://billing:S3cr3tPassw0rd@db.internal:5432/billing",
]


def test_secrets_never_reach_a_batch_file(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    lines = [msg(f"Deploy note {i}: the key for the billing service is {sec} so keep it out of git", n=i)
             for i, sec in enumerate(SECRETS)]
    f.write_bytes(header() + b"".join(lines))
    res, b = run(s)
    assert len(texts(b)) == len(SECRETS)
    raw = Path(res.batch_file).read_text()
    leaked = [sec for sec in SECRETS if sec in raw or sec.split("://")[-1].split("@")[0] in raw]
    assert not leaked, leaked
    assert "[REDACTED:" in raw


def test_rewrite_by_write_then_rename_is_not_distilled_twice(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)) + msg(fact(2)))
    commit(s, run(s)[0])
    tmp = f.with_name("s1.jsonl.tmp")  # e.g. a compaction that writes a new file and renames it over
    tmp.write_bytes(header() + msg(fact(2)) + msg(fact(3)))
    os.replace(tmp, f)
    res, b = run(s)
    assert texts(b) == [fact(3)]
    assert res.summary.counters["replaced"] == 1 and res.summary.counters["deleted"] == 1
    assert len(Cursor.load(s.state.cursor).files) == 1


def test_only_files_takes_the_short_path_and_agrees_with_the_full_walk(tmp_path, monkeypatch):
    import distill.tails.discover

    s = settings_for(tmp_path)
    a, c = session(tmp_path, "main", "a"), session(tmp_path, "ops", "c")
    a.write_bytes(header() + msg(fact(1)))
    c.write_bytes(header() + msg(fact(2)))
    commit(s, run(s)[0])
    append(a, msg(fact(3)))
    append(c, msg(fact(4)))
    walked = []
    real = distill.tails.discover.discover
    monkeypatch.setattr(distill.tails.discover, "discover", lambda *x, **k: walked.append(1) or real(*x, **k))
    res, b = run(s, only_files={a})
    assert texts(b) == [fact(3)] and not walked  # no walk over every root
    assert res.summary.counters.get("renamed", 0) == 0  # same path spelling as the full walk
    commit(s, res)
    res, b = run(s)
    assert texts(b) == [fact(4)] and walked
    # a file outside the roots is never read, whatever a task names
    stray = tmp_path / "elsewhere.jsonl"
    stray.write_bytes(header() + msg(fact(5)))
    assert run(s, only_files={stray})[0].action == "pending"


def test_auto_format_detection_copes_with_a_long_first_line(tmp_path):
    import base64
    import json

    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('[[sources]]\npath = "../claude"\nagent_id = "claude-code"\n')  # format auto
    f = tmp_path / "claude" / "p" / "abc.jsonl"
    f.parent.mkdir(parents=True)
    image = base64.b64encode(os.urandom(150_000)).decode()
    first = {"type": "user", "uuid": "u1", "sessionId": "abc", "timestamp": "2026-11-22T10:00:00.000Z",
             "message": {"role": "user", "content": [
                 {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}},
                 {"type": "text", "text": fact(1)}]}}
    f.write_bytes((json.dumps(first) + "\n").encode())
    from distill.config import load_settings

    (tmp_path / "none").mkdir()  # an agents_dir that is given and missing is a warning of its own
    res, b = run(load_settings(state_dir=state, agents_dir=tmp_path / "none"))
    assert texts(b) == [fact(1)] and not res.errors


@pytest.mark.parametrize("damage", [b"garbage\n", b'{"version":1'])
def test_a_corrupt_pending_batch_file_is_reported_and_abort_releases_it(tmp_path, damage):
    """A pending batch whose file is garbage or cut short must not stall its transcripts
    silently: run and status say it is unreadable and how to release it, and abort releases
    it by its id."""
    import json

    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    res, _ = run(s)
    bf = Path(res.batch_file)
    bf.write_bytes(damage)
    advice = f"`distill abort --batch-file {bf}`"
    for args in (["run"], ["status"]):
        p = cli(s, *args)
        assert "is unreadable" in p.stdout and advice in p.stdout, p.stdout
    out = json.loads(cli(s, "--json", "run").stdout)
    assert out["action"] == "pending" and out["summary"]["counters"]["pending_batch_unreadable"] == 1
    assert any(advice in e for e in out["errors"])
    assert any(advice in e for e in json.loads(cli(s, "--json", "status").stdout)["errors"])
    p = cli(s, "commit", "--batch-file", str(bf), check=False)
    assert p.returncode == 1 and advice in p.stderr and "Traceback" not in p.stderr
    p = cli(s, "abort", "--batch-file", str(bf))
    assert p.stdout.startswith("aborted: 1 files")
    assert not bf.exists() and (s.state.aborted / bf.name).read_bytes() == damage
    assert not Cursor.load(s.state.cursor).pending_batch_ids()
    res, b = run(s)  # the bytes are read again: nothing lost
    assert texts(b) == [fact(1)] and not res.errors


def test_abort_of_an_unreadable_file_that_is_not_pending_releases_nothing(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    res, _ = run(s)
    stray = s.state.batches / "not-a-batch.json"
    stray.write_bytes(b"{}")
    p = cli(s, "abort", "--batch-file", str(stray), check=False)
    assert p.returncode == 1 and "nothing to release: move the file away" in p.stderr and "Traceback" not in p.stderr
    assert Cursor.load(s.state.cursor).pending_batch_ids() == {Path(res.batch_file).stem} and stray.exists()
    # a garbage file elsewhere named like the pending batch does not release it either
    elsewhere = tmp_path / Path(res.batch_file).name
    elsewhere.write_bytes(b"garbage")
    p = cli(s, "abort", "--batch-file", str(elsewhere), check=False)
    assert p.returncode == 1 and Cursor.load(s.state.cursor).pending_batch_ids() == {Path(res.batch_file).stem}
