"""Start-up: a command imports its own module and the settings core, not the rest.

Speed itself is measured by tests/bench/bench_vs_script.py (never timed here); these tests
pin what makes it: which modules a command loads, and that the command table is complete.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from distill.cli import COMMANDS, build_parser, quick_args


def imported(tmp_path, *args: str) -> set[str]:
    """The modules loaded by running ``distill ARGS`` in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    code = ("import sys; from distill.cli import main; rc = main(sys.argv[1:]); "
            "print('\\n'.join(sys.modules), file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, "--state-dir", str(tmp_path / "s"),
                        "--agents-dir", str(tmp_path / "a"), *args], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return set(p.stderr.split())


HEAVY = {"pydantic", "pydantic_core", "pydantic_settings", "lancedb", "pyarrow", "numpy", "httpx", "google", "mcp"}


@pytest.mark.parametrize("command", ["status", "run", "init"])
@pytest.mark.parametrize("with_transcript", [False, True])
def test_a_command_loads_only_its_own_module_and_nothing_heavy(tmp_path, command, with_transcript):
    """``status``, ``run`` (no ``--distill``) and ``init`` start without pydantic, the store or any SDK,
    on an empty state and when there is a transcript to read (the per-line path loaded too)."""
    if with_transcript:
        from tests.tail_helpers import fact, header, msg

        f = tmp_path / "a" / "main" / "sessions" / "s1.jsonl"
        f.parent.mkdir(parents=True)
        f.write_bytes(header() + msg(fact(1)) + msg(fact(2), "assistant", 1))
    mods = imported(tmp_path, command)
    assert "distill.cli.tails" in mods
    assert not mods & {"distill.cli.memories", "distill.cli.queue_cmds", "distill.cli.distill_cmd"}
    assert not {m.split(".")[0] for m in mods} & HEAVY
    if with_transcript and command == "run":
        assert "distill.sources.openclaw" in mods  # the transcript was really read


def test_every_registered_command_is_in_the_table():
    """A command a module registers but the table lacks would be unreachable."""
    import argparse

    for module in set(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"distill.cli.{module}").register(sub)
        assert {name: module for name in sub.choices} == {n: m for n, m in COMMANDS.items() if m == module}
    parser = build_parser(["--help"])
    assert set(parser._subparsers._group_actions[0].choices) == set(COMMANDS)


def test_only_the_command_run_gets_a_parser_and_it_is_complete(tmp_path):
    """Only the command being run has its parser built; its flags, help and errors are whole."""
    def distill(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(tmp_path / "s"), *args],
                              capture_output=True, text=True, timeout=120)

    missing = distill("commit")
    assert missing.returncode == 2 and "the following arguments are required: --batch-file" in missing.stderr
    assert "--distill" in distill("run", "--help").stdout
    assert "ACTION" in distill("memories", "--help").stdout
    typo = distill("statu")
    assert typo.returncode == 2 and "invalid choice: 'statu'" in typo.stderr and "'status'" in typo.stderr
    parser = build_parser(["status"])
    assert set(parser._subparsers._group_actions[0].choices) == {"status"}


@pytest.mark.parametrize("argv", [
    [name] for name in COMMANDS] + [["--json", "status"], ["--state-dir", "/s", "run", "--db", "/d", "--json"],
                                    ["run", "--state-dir", "a", "--state-dir", "b"]])
def test_a_command_without_flags_of_its_own_parses_as_argparse_would(argv):
    """The quick path gives exactly argparse's namespace, or steps aside (None) for argparse."""
    quick = quick_args(argv)
    if quick is not None:
        assert vars(quick) == vars(build_parser(argv).parse_args(argv))
    if argv[0] in ("run", "status", "init", "retry", "backfill"):
        assert quick is not None


@pytest.mark.parametrize("argv", [["run", "--distill"], ["run", "--help"], ["--help"], ["--state", "x", "run"],
                                  ["commit"], ["memories"], ["statu"], ["--state-dir=/x", "run"], ["--state-dir"],
                                  ["run", "--state-dir", "--json"]])
def test_anything_argparse_must_settle_goes_to_argparse(argv):
    """Flags of the command, help, abbreviations, required arguments, sub-actions, typos."""
    assert quick_args(argv) is None
