"""Exit codes scripts and cron rely on: one table in distill/cli/exitcodes.py, found through
each error's ancestry, so a subclass exits like its parent."""

import pytest

from distill.cli.exitcodes import exit_code_of
from distill.errors import (ConfigError, DistillError, InvalidTask, LockBusy, MapFailed, SessionGone, StoreFailed,
                            UnknownFormat)


@pytest.mark.parametrize("exc, code", [
    (ConfigError("x"), 2),
    (InvalidTask("x"), 65),
    (SessionGone("x"), 65),  # a subclass of InvalidTask: the hook's caller sees the same code
    (LockBusy("x"), 75),
    (MapFailed("x"), 1),
    (StoreFailed("x"), 1),
    (UnknownFormat("x"), 1),
    (DistillError("x"), 1),
])
def test_exit_code_of(exc, code):
    assert exit_code_of(exc) == code


def test_config_error_exits_2_from_the_cli(tmp_path, monkeypatch, capsys):
    from distill.cli import main

    (tmp_path / "config.toml").write_text("max_turn_chars = 'many'\n")
    monkeypatch.setenv("DISTILL_CONFIG", str(tmp_path / "config.toml"))
    assert main(["--state-dir", str(tmp_path), "status"]) == 2
    assert "max_turn_chars" in capsys.readouterr().err
