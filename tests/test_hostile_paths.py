"""Hostile paths found by an audit: each case once stopped every run (a traceback, or silence).

A folder or file that cannot be read, a name the cursor cannot record, a root that is not
there, a glob that cannot be walked: each is counted and named in the run's warnings, and
everything else is read. Permission cases need a process without root's DAC override: when
the tests run as root they run the command under ``setpriv`` with those capabilities dropped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from tail_helpers import ROOT, cli, fact, header, msg, session, settings_for

from distill.tails.cursor import Cursor

DROP_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


def unprivileged(s, *args: str) -> subprocess.CompletedProcess:
    """``distill ARGS`` in a process for which file permissions bite."""
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions cannot be made to bite")
        prefix = DROP_DAC
    else:
        prefix = []
    flags = ["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    return subprocess.run([*prefix, sys.executable, "-m", "distill", *flags, *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env)


def run_json(s, *args: str) -> dict:
    return orjson.loads(cli(s, "run", "--json", *args).stdout)


def batch_texts(out: dict) -> list[str]:
    batch = orjson.loads(Path(out["batchFile"]).read_bytes())
    return [m["text"] for a in batch["agents"] for m in a["messages"]]


def commit(s, out: dict) -> None:
    cli(s, "commit", "--batch-file", out["batchFile"])


# --- 2: a folder directly under agents_dir that cannot be read -------------------------------

def test_an_agent_folder_in_a_symlink_loop_is_reported_and_every_other_agent_read(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path, agent="good").write_bytes(header() + msg(fact(1, "good")))
    loop = tmp_path / "agents" / "loop"
    loop.symlink_to(loop)  # ELOOP on every stat
    out = run_json(s)
    assert out["action"] == "created" and batch_texts(out) == [fact(1, "good")]
    assert out["summary"]["counters"]["folder_unreadable"] == 1
    assert any(str(loop) in e and "symlink" in e for e in out["errors"]), out["errors"]
    status = cli(s, "status")
    assert status.returncode == 0 and f"warning: {loop}" in status.stdout
    assert orjson.loads(cli(s, "status", "--json").stdout)["errors"]
    dry = cli(s, "backfill", "--dry-run", "--json")
    assert dry.returncode == 0 and any(str(loop) in e for e in orjson.loads(dry.stdout)["errors"])


def test_run_distill_names_what_it_could_not_read(tmp_path):
    """The cron job and the README's first command: `run --distill` says what plain `run`
    says about a folder it cannot list, not only a counter in --json."""
    s = settings_for(tmp_path, db=tmp_path / "db")
    session(tmp_path, agent="good").write_bytes(header() + msg(fact(1, "good")))
    loop = tmp_path / "agents" / "loop"
    loop.symlink_to(loop)
    p = cli(s, "--db", str(tmp_path / "db"), "run", "--distill", env={"DISTILL_LLM": "rules"})
    assert p.returncode == 0 and p.stdout.startswith("committed: 1 files"), p.stdout
    assert f"warning: {loop}" in p.stdout, p.stdout
    last = orjson.loads(cli(s, "status", "--json").stdout)["lastRun"]["summary"]
    assert any(str(loop) in e for e in last["errors"])


def test_an_agent_symlink_into_a_folder_that_cannot_be_searched_keeps_its_files(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path, agent="good").write_bytes(header() + msg(fact(1, "good")))
    private = tmp_path / "private"
    real = private / "inner" / "sessions" / "s1.jsonl"
    real.parent.mkdir(parents=True)
    real.write_bytes(header() + msg(fact(2, "linked")))
    (tmp_path / "agents" / "linked").symlink_to(private / "inner")
    first = run_json(s)
    assert sorted(batch_texts(first)) == sorted([fact(1, "good"), fact(2, "linked")])
    commit(s, first)
    with open(real, "ab") as f:
        f.write(msg(fact(3, "linked")))
    private.chmod(0)
    try:
        p = unprivileged(s, "run", "--json")
    finally:
        private.chmod(0o755)
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert out["action"] == "noop" and out["summary"]["counters"]["folder_unreadable"] == 1, out
    assert any(str(tmp_path / "agents" / "linked") in e and "Permission denied" in e for e in out["errors"])
    assert len(Cursor.load(s.state.cursor).files) == 2  # not taken for deleted
    again = run_json(s)  # readable again: only the new line
    assert batch_texts(again) == [fact(3, "linked")]


# --- 3: a file name that is not valid UTF-8 --------------------------------------------------

def test_a_file_name_that_is_not_utf8_is_skipped_named_and_every_other_file_read(tmp_path):
    s = settings_for(tmp_path)
    good = session(tmp_path)
    good.write_bytes(header() + msg(fact(1, "good")))
    bad = good.parent / os.fsdecode(b"bad\xffname.jsonl")
    bad.write_bytes(header() + msg(fact(2, "bad")))
    for n in range(2):  # the harness's second run failed too: nothing was ever saved
        out = run_json(s)
        assert out["summary"]["counters"]["file_name_not_utf8"] == 1
        assert any("bad\\xffname.jsonl" in e and "rename" in e for e in out["errors"]), out["errors"]
        if n == 0:
            assert batch_texts(out) == [fact(1, "good")]
            commit(s, out)
    human = cli(s, "run").stdout
    assert "warning: " in human and "bad\\xffname.jsonl" in human
    init = cli(s, "init")
    assert "bad\\xffname.jsonl" in init.stdout and "1 files marked" in init.stdout
    assert orjson.loads(cli(s, "status", "--json").stdout)["errors"]


def test_a_file_name_that_is_not_utf8_under_a_source_root(tmp_path):
    root = tmp_path / "cc"
    root.mkdir()
    (root / "ok.jsonl").write_bytes(header() + msg(fact(1, "ok")))
    (root / os.fsdecode(b"x\xfe.jsonl")).write_bytes(header() + msg(fact(2, "bad")))
    s = settings_for(tmp_path, sources=[{"path": str(root), "agent_id": "cc", "format": "openclaw"}])
    (tmp_path / "agents").mkdir()
    from tail_helpers import run

    res, batch = run(s)
    assert [m.text for a in batch.agents for m in a.messages] == [fact(1, "ok")]
    assert res.summary.counters["file_name_not_utf8"] == 1
    assert any("x\\xfe.jsonl" in e for e in res.errors), res.errors


# --- 4: a transcript that exists but cannot be read ------------------------------------------

def test_an_unreadable_transcript_is_named_not_vanished_and_read_on_once_fixed(tmp_path):
    s = settings_for(tmp_path)
    locked = session(tmp_path, agent="locked")
    locked.write_bytes(header() + msg(fact(1, "locked")))
    good = session(tmp_path, agent="good")
    good.write_bytes(header() + msg(fact(2, "good")))
    fresh = session(tmp_path, agent="locked", name="s2")  # never read yet
    commit(s, run_json(s))
    with open(locked, "ab") as f:
        f.write(msg(fact(3, "locked")))
    with open(good, "ab") as f:
        f.write(msg(fact(4, "good")))
    fresh.write_bytes(header() + msg(fact(5, "fresh")))
    locked.chmod(0)
    fresh.chmod(0)
    try:
        p = unprivileged(s, "run", "--json")
    finally:
        locked.chmod(0o644)
        fresh.chmod(0o644)
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert batch_texts(out) == [fact(4, "good")]
    counters = out["summary"]["counters"]
    assert counters["file_unreadable"] == 2 and "vanished" not in counters, counters
    for f in (locked, fresh):
        assert any(str(f) in e and "Permission denied" in e for e in out["errors"]), out["errors"]
    commit(s, out)
    again = run_json(s)  # readable again: from where each one was
    assert sorted(batch_texts(again)) == sorted([fact(3, "locked"), fact(5, "fresh")])


# --- 5: an agents_dir someone gave that is not there ------------------------------------------

def test_a_given_agents_dir_that_is_missing_or_a_file_is_a_warning(tmp_path):
    s = settings_for(tmp_path)  # --agents-dir, never created
    out = run_json(s)
    assert out["action"] == "noop" and out["summary"]["counters"]["root_missing"] == 1
    assert any(str(tmp_path / "agents") in e and "does not exist" in e for e in out["errors"]), out["errors"]
    assert f"warning: agents_dir {tmp_path / 'agents'} does not exist" in cli(s, "run").stdout
    (tmp_path / "agents").write_text("not a folder")
    out = run_json(s)
    assert any("is not a folder" in e for e in out["errors"]), out["errors"]
    env = {"DISTILL_AGENTS_DIR": str(tmp_path / "typo")}
    p = cli(tmp_path / "state", "run", env=env)
    assert f"warning: agents_dir {tmp_path / 'typo'} does not exist" in p.stdout, p.stdout


def test_the_default_agents_dir_missing_stays_quiet(tmp_path):
    """No OpenClaw on this machine (a Claude Code user): the default root is simply absent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env["HOME"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(tmp_path / "state"), "run", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert out["errors"] == [] and out["summary"]["counters"]["root_missing"] == 1


def test_a_missing_source_root_is_a_warning_and_the_other_roots_read(tmp_path):
    session(tmp_path).write_bytes(header() + msg(fact(1, "main")))
    s = settings_for(tmp_path, sources=[{"path": str(tmp_path / "nope"), "agent_id": "cc"}])
    from tail_helpers import run, texts

    res, batch = run(s)
    assert texts(batch) == [fact(1, "main")]
    assert any(str(tmp_path / "nope") in e and "does not exist" in e for e in res.errors), res.errors


# --- 6: a [[sources]] glob that cannot be walked ------------------------------------------------

@pytest.mark.parametrize("glob", ["", "/etc/*.jsonl", "../*.jsonl", "**/x**.jsonl"])
def test_a_bad_sources_glob_is_a_configuration_error_naming_it(tmp_path, glob):
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(f'[[sources]]\npath = "{tmp_path / "cc"}"\nagent_id = "cc"\n'
                                       f'glob = {orjson.dumps(glob).decode()}\n')
    p = cli(state, "run", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr  # 2: a configuration error
    assert "sources[0]" in p.stderr and f"glob {glob!r}" in p.stderr and "relative to its root" in p.stderr, p.stderr


def test_a_glob_that_fails_at_walk_time_stops_only_its_own_root(tmp_path):
    from tail_helpers import run, texts

    session(tmp_path).write_bytes(header() + msg(fact(1, "main")))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "s.jsonl").write_bytes(header() + msg(fact(2, name)))
    s = settings_for(tmp_path, sources=[{"path": str(tmp_path / "a"), "agent_id": "a", "format": "openclaw"},
                                        {"path": str(tmp_path / "b"), "agent_id": "b", "format": "openclaw"}])
    s.sources[0].glob = "/etc/*.jsonl"  # past validation (a Settings built in code, a newer Python's rules)
    res, batch = run(s)
    assert sorted(texts(batch)) == sorted([fact(1, "main"), fact(2, "b")])
    assert res.summary.counters["glob_invalid"] == 1
    assert any(str(tmp_path / "a") in e and "'/etc/*.jsonl'" in e for e in res.errors), res.errors


def test_backfill_dry_run_names_a_transcript_it_cannot_read(tmp_path):
    s = settings_for(tmp_path)
    locked = session(tmp_path)
    locked.write_bytes(header() + msg(fact(1, "locked")))
    cli(s, "init")
    before = sorted(p.name for p in s.state_dir.iterdir())
    locked.chmod(0)
    try:
        p = unprivileged(s, "backfill", "--dry-run", "--json")
    finally:
        locked.chmod(0o644)
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert [t["path"] for t in out["todo"]] == [str(locked)] and out["estimate"]["turns"] == 0
    assert any(str(locked) in e and "Permission denied" in e for e in out["errors"]), out["errors"]
    assert sorted(p.name for p in s.state_dir.iterdir()) == before
