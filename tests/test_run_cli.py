"""The `distill init | run | commit | abort | status` commands, as a user or cron calls them."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tail_helpers import ROOT, append, cli, fact, header, msg, session, settings_for


def js(p):
    return orjson.loads(p.stdout)


def test_init_starts_from_now_and_later_files_are_read_from_zero(tmp_path):
    s = settings_for(tmp_path)
    old = session(tmp_path, name="old")
    old.write_bytes(header() + msg(fact(1)) + msg(fact(2))[:20])  # a line still being written
    out = js(cli(s, "init", "--json"))
    assert out["action"] == "init" and out["markedFiles"] == 1
    assert js(cli(s, "run", "--json"))["action"] == "noop"
    append(old, msg(fact(2))[20:] + msg(fact(3)))
    new = session(tmp_path, name="new")
    new.write_bytes(header() + msg(fact(4)))
    out = js(cli(s, "run", "--json"))
    assert out["action"] == "created"
    batch = orjson.loads(Path(out["batchFile"]).read_bytes())
    got = sorted(m["text"] for a in batch["agents"] for m in a["messages"])
    assert got == sorted([fact(2), fact(3), fact(4)])  # fact(1) predates init


def test_run_commit_abort_status_round_trip(tmp_path):
    s = settings_for(tmp_path)
    f = session(tmp_path)
    f.write_bytes(header() + msg(fact(1)))
    human = cli(s, "run").stdout
    assert human.startswith("created: 1 files, ") and "batch file: " in human
    first = js(cli(s, "run", "--json"))
    assert first["action"] == "pending" and len(first["batchFiles"]) == 1 and first["batchFile"] is None
    batch_file = first["batchFiles"][0]

    st = js(cli(s, "status", "--json"))
    assert st["pendingBatches"] == [batch_file]
    (main,) = st["agents"]
    assert main["agentId"] == "main" and main["behind"] == f.stat().st_size and main["pending"]
    assert st["lastRun"]["action"] == "pending"

    out = js(cli(s, "commit", "--batch-file", batch_file, "--json"))
    assert out["action"] == "committed" and out["summary"]["files"] == 1
    assert js(cli(s, "commit", "--batch-file", batch_file, "--json"))["summary"]["files"] == 0  # idempotent
    st = js(cli(s, "status", "--json"))
    assert st["pendingBatches"] == [] and st["agents"][0]["behind"] == 0

    append(f, msg(fact(2)))
    made = js(cli(s, "run", "--json"))
    assert js(cli(s, "abort", "--batch-file", made["batchFile"], "--json"))["action"] == "aborted"
    again = js(cli(s, "run", "--json"))
    assert again["action"] == "created" and again["summary"]["turns"] == 1
    text = cli(s, "status").stdout
    assert "pending batches: " + again["batchFile"] in text and "agent main: 1 files" in text


def test_init_refuses_while_a_batch_is_pending(tmp_path):
    s = settings_for(tmp_path)
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    cli(s, "run")
    p = cli(s, "init", check=False, process=True)
    assert p.returncode == 1 and "pending" in p.stderr and "commit or abort" in p.stderr


def test_commit_of_a_missing_batch_file_says_so(tmp_path):
    s = settings_for(tmp_path)
    p = cli(s, "commit", "--batch-file", str(tmp_path / "nope.json"), check=False, process=True)
    assert p.returncode == 1 and "does not exist" in p.stderr


def test_unknown_format_is_named_and_the_rest_goes_on(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        'agents_dir = "../agents"\n[[sources]]\npath = "../other"\nagent_id = "tool-x"\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "weird.jsonl").write_bytes(b'{"event":"start","v":1}\n{"event":"x"}\n')
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    p = cli(state, "run")
    assert "weird.jsonl: not a known transcript format" in p.stdout
    out = js(cli(state, "run", "--json"))
    assert out["action"] == "pending"  # the OpenClaw file was batched; the unknown one is not retried unchanged


def test_example_state_dir_gives_turns_from_every_source_but_the_distiller(tmp_path):
    ex = tmp_path / "ex"
    shutil.copytree(ROOT / "state.example", ex, ignore=shutil.ignore_patterns("cursor.json", "batches", "memory",
                                                                             ".lock", "last-run.json", "cursor.seen"))
    out = js(cli(ex, "run", "--json"))
    assert out["action"] == "created"
    batch = orjson.loads(Path(out["batchFile"]).read_bytes())
    agents = {a["agentId"]: a["messages"] for a in batch["agents"]}
    assert set(agents) == {"main", "code-agent", "claude-code", "codex"}
    everything = "\n".join(m["text"] for ms in agents.values() for m in ms)
    assert "uv instead of pip" in everything and "Debian 12" in everything and "EADDRINUSE" in everything
    assert "never be distilled" not in everything  # the distiller's own session
    assert "<relevant-memories>" not in everything and "environment_context" not in everything
    assert all(m["file"].startswith(str(ex)) for ms in agents.values() for m in ms)


def test_status_names_new_gone_and_out_of_scope_files(tmp_path):
    s = settings_for(tmp_path)
    a, b = session(tmp_path, "main", "a"), session(tmp_path, "ops", "b")
    a.write_bytes(header() + msg(fact(1)))
    b.write_bytes(header() + msg(fact(2)))
    batch = js(cli(s, "run", "--json"))["batchFile"]
    cli(s, "commit", "--batch-file", batch)
    session(tmp_path, "main", "c").write_bytes(header() + msg(fact(3)))
    a.unlink()  # after c exists, so c cannot reuse a's inode
    st = js(cli(s, "status", "--json", env={"OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS": "main"}))
    states = {Path(f["path"]).name: (f["state"], f["behind"]) for f in st["files"]}
    assert states["a.jsonl"] == ("gone", 0)
    assert states["b.jsonl"] == ("out-of-scope", 0)
    assert states["c.jsonl"] == ("new", len(header() + msg(fact(3))))


@pytest.mark.parametrize("unbuffered", ["1", None])
def test_a_reader_that_leaves_early_gets_no_traceback_and_loses_nothing(tmp_path, unbuffered):
    """``distill run | head -0``: the pipe closes before the summary is printed (at the
    print when output is unbuffered, at the exit's flush when Python buffers it). The batch is
    already cut and must stay; the user sees no traceback, and the status is SIGPIPE's 141."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED" and not k.startswith("DISTILL_")}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered

    s = settings_for(tmp_path)
    session(tmp_path).write_bytes(header() + msg(fact(1)))
    r, w = os.pipe()
    os.close(r)  # nobody will read what distill prints
    try:
        p = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(s.state_dir), "--agents-dir",
                            str(s.agents_dir), "run"], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60,
                           cwd=ROOT, env=env)
    finally:
        os.close(w)
    assert "Traceback" not in p.stderr and p.stderr == ""
    assert p.returncode == 141
    assert js(cli(s, "status", "--json"))["pendingBatches"]  # the batch it cut is there


def test_running_on_state_example_leaves_only_files_git_ignores(tmp_path):
    """The README's first command runs in ``state.example/`` of the checkout; every state
    file a run, a commit and a run with nothing new leave there must be ignored by git, or
    the user's tree shows them as new files."""
    import subprocess

    if subprocess.run(["git", "-C", str(ROOT), "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    tracked = set(subprocess.run(["git", "-C", str(ROOT), "ls-files", "state.example"], capture_output=True,
                                 text=True, check=True).stdout.split())
    ex = tmp_path / "state.example"
    shutil.copytree(ROOT / "state.example", ex, ignore=shutil.ignore_patterns("cursor.*", "batches", "memory",
                                                                             ".lock", "last-run.json"))
    cli(ex, "commit", "--batch-file", js(cli(ex, "run", "--json"))["batchFile"])
    assert js(cli(ex, "run", "--json"))["action"] == "noop"
    assert (ex / "cursor.noop").exists()  # the run with nothing new left its digest
    left = {f"state.example/{p.relative_to(ex)}" for p in ex.rglob("*") if p.is_file()} - tracked
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"], input="\n".join(left),
                             capture_output=True, text=True).stdout.split()
    assert left - set(ignored) == set()


def test_a_real_process_leaves_with_all_its_output_and_its_exit_status(tmp_path):
    """The console script skips the interpreter's teardown after light commands
    (``distill.cli.entry``); what it printed must still arrive whole through a pipe, where
    Python buffers it, and its exit status must be the command's."""
    import os
    import subprocess
    import sys

    s = settings_for(tmp_path)
    for i in range(400):
        session(tmp_path, name=f"s{i:03d}").write_bytes(header(f"s{i}") + msg(fact(i)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED" and not k.startswith("DISTILL_")}

    def distill(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(s.state_dir), "--agents-dir",
                               str(s.agents_dir), *args], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=60)

    out = distill("--json", "status")
    assert len(out.stdout) > 65_536 and len(js(out)["files"]) == 400  # more than a pipe holds
    created = distill("run")
    assert created.returncode == 0 and created.stdout.startswith("created: 400 files")
    assert created.stdout.endswith("\n") and "batch file: " in created.stdout
    assert distill("run").stdout.startswith("pending: ")
    refused = distill("commit", "--batch-file", str(tmp_path / "nope.json"))
    assert refused.returncode != 0 and "nope.json" in refused.stderr
