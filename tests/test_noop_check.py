"""The stdlib no-op check (distill/tails/noopcheck.py): after a ``distill run`` that found
nothing, the next one with nothing changed is answered before the core loads, with the same
line and the same JSON; every change a run would notice hands it to the full run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from distill.tails import noopcheck
from distill.tails.ledger import commit_batch
from tests.tail_helpers import ROOT, append, cli, fact, header, msg, session, settings_for


def flags(s) -> dict:
    return {"state_dir": str(s.state_dir), "agents_dir": str(s.agents_dir), "db": None}


def answered(s) -> bool:
    """Whether the check answered ``distill run`` (without running the full run)."""
    return noopcheck.answer(flags(s), False) is not None


def settled(tmp_path):
    """Two agents' transcripts, read and committed, then a `distill run` that found nothing."""
    s = settings_for(tmp_path)
    a, b = session(tmp_path, name="a"), session(tmp_path, agent="ops", name="b")
    a.write_bytes(header("a") + msg(fact(1)))
    b.write_bytes(header("b") + msg(fact(2)))
    made = json.loads(cli(s, "--json", "run").stdout)
    commit_batch(s, Path(made["batchFile"]))
    assert json.loads(cli(s, "--json", "run").stdout)["action"] == "noop"
    return s, a, b


def test_nothing_changed_is_answered_with_the_full_runs_line_and_json(tmp_path, capsys):
    s, _, _ = settled(tmp_path)
    full_json = json.loads(Path(s.state.last_run).read_text())
    assert noopcheck.answer(flags(s), True) == 0
    quick = json.loads(capsys.readouterr().out)
    full = json.loads(cli(s, "--json", "run").stdout)  # answered by the check as well
    assert quick.keys() == full.keys() and quick["summary"].keys() == full["summary"].keys()
    assert {k: v for k, v in quick.items() if k != "summary"} == {k: v for k, v in full.items() if k != "summary"}
    assert {**quick["summary"], "seconds": 0} == {**full["summary"], "seconds": 0}
    assert quick["action"] == "noop" and quick["cursorPath"] == str(s.state.cursor.absolute())
    line = cli(s, "run").stdout
    assert line.startswith("noop: 0 files, 0 bytes, 0 turns") and line.endswith(" s\n") and line.count("\n") == 1
    last = json.loads(Path(s.state.last_run).read_text())  # what `distill status` shows as the last run
    assert last.keys() == full_json.keys() and last["action"] == "noop" and last["atMs"] >= full_json["atMs"]


def test_the_check_loads_no_core_in_a_real_process(tmp_path):
    s, _, _ = settled(tmp_path)
    probe = ("import sys; from distill.cli import main; rc = main(sys.argv[1:]); "
             "print(sorted(m for m in ('msgspec', 'distill.config', 'distill.tails.ledger') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", probe, "--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "run"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[0].startswith("noop: ") and out[1] == "[]"


def grown(s, a, b, env):
    append(a, msg(fact(3), n=1))
    return lambda out: out["action"] == "created" and out["summary"]["turns"] == 1


def new_file(s, a, b, env):
    session(s.agents_dir.parent, name="c").write_bytes(header("c") + msg(fact(4)))
    return lambda out: out["action"] == "created" and out["summary"]["files"] == 1


def new_agent_folder(s, a, b, env):
    session(s.agents_dir.parent, agent="dev", name="d").write_bytes(header("d") + msg(fact(5)))
    return lambda out: out["action"] == "created" and out["summary"]["turns"] == 1


def sessions_folder_appears(s, a, b, env):
    (s.agents_dir / "qa").mkdir()  # an agent without sessions yet: the run that finds nothing notes it
    cli(s, "run")
    session(s.agents_dir.parent, agent="qa", name="q").write_bytes(header("q") + msg(fact(6)))
    return lambda out: out["action"] == "created" and out["summary"]["turns"] == 1


def renamed(s, a, b, env):
    a.rename(a.with_name("a2.jsonl"))
    return lambda out: out["summary"]["counters"].get("renamed") == 1


def vanished(s, a, b, env):
    b.unlink()
    return lambda out: out["summary"]["counters"].get("deleted") == 1


def rewritten_same_size(s, a, b, env):
    st = a.stat()
    a.write_bytes(header("a") + msg(fact(7)))
    assert a.stat().st_size == st.st_size
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    return lambda out: out["summary"]["counters"].get("rewritten") == 1


def pending_batch(s, a, b, env):
    append(a, msg(fact(8), n=1))
    assert json.loads(cli(s, "--json", "run").stdout)["action"] == "created"  # cut, not committed
    return lambda out: out["action"] == "pending" and len(out["batchFiles"]) == 1


def env_setting(s, a, b, env):
    env.setenv("DISTILL_ALLOWED_AGENT_IDS", "ops")
    return lambda out: out["action"] == "noop"


def config_file(s, a, b, env):
    (s.state_dir / "config.toml").write_text('allowed_agent_ids = "main"\n')
    return lambda out: out["action"] == "noop"


@pytest.mark.parametrize("change", [grown, new_file, new_agent_folder, sessions_folder_appears, renamed, vanished,
                                    rewritten_same_size, pending_batch, env_setting, config_file])
def test_every_change_goes_to_the_full_run(tmp_path, monkeypatch, change):
    s, a, b = settled(tmp_path)
    assert answered(s)  # the check would have answered
    expect = change(s, a, b, monkeypatch)
    assert not answered(s), "the check answered: the change went unnoticed"
    out = json.loads(cli(s, "--json", "run").stdout)
    assert expect(out), out


def test_another_flag_goes_to_the_full_run(tmp_path):
    s, _, _ = settled(tmp_path)
    assert not noopcheck.answer({**flags(s), "db": str(tmp_path / "other-db")}, False)


def test_a_run_with_something_to_report_leaves_no_check(tmp_path):
    s, a, _ = settled(tmp_path)
    (s.agents_dir / "main" / "sessions" / "bad\udcff.jsonl").write_bytes(header("x"))  # a name not UTF-8
    out = json.loads(cli(s, "--json", "run").stdout)
    assert out["summary"]["counters"].get("file_name_not_utf8") == 1
    assert not Path(s.state.noop_check).exists() and not answered(s)


def test_source_roots_are_left_to_the_full_run(tmp_path):
    root = tmp_path / "claude"
    root.mkdir()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "config.toml").write_text(f'[[sources]]\npath = "{root}"\nagent_id = "cc"\n')
    s = settings_for(tmp_path)
    session(tmp_path, name="a").write_bytes(header("a") + msg(fact(1)))
    commit_batch(s, Path(json.loads(cli(s, "--json", "run").stdout)["batchFile"]))
    assert json.loads(cli(s, "--json", "run").stdout)["action"] == "noop"
    assert not answered(s)  # a glob's folders are pathlib's to walk: nothing recorded to compare


def test_output_the_check_cannot_reproduce_is_not_kept():
    """Templates are kept only if filling them gives the core's own output: a line that shows
    its seconds another way (three places here) leaves no check to print it wrong."""
    def outputs(seconds: float, at_ms: int, fmt: str = ".2f") -> tuple[str, str, str]:
        return (f"noop: {seconds:{fmt}} s\n", f'{{"seconds":{seconds!r}}}\n', f'{{"atMs":{at_ms},"seconds":{seconds!r}}}')

    stand_in = (noopcheck.STAND_IN_SECONDS, noopcheck.STAND_IN_AT_MS)
    kept = noopcheck.templates(outputs(*stand_in), outputs(0.0123, 1796000000000), 0.0123, 1796000000000)
    assert kept is not None and noopcheck.fill(kept[0], {"seconds_text": 1.5}) == "noop: 1.50 s\n"
    assert noopcheck.templates(outputs(*stand_in, ".3f"), outputs(0.0123, 1796000000000, ".3f"),
                               0.0123, 1796000000000) is None
