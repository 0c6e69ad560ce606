"""The systemd units and launchd plists in systemd/: they parse, say what the issue asks,
and name commands that this package installs."""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "systemd"
SCRIPTS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """systemd's INI dialect: sections, repeatable keys, comments with # or ;, no interpolation."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"{path.name}:{n}: not 'Key=value' inside a section: {raw!r}"
        key, value = (s.strip() for s in line.split("=", 1))
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key), f"{path.name}:{n}: bad key {key!r}"
        current.setdefault(key, []).append(value)
    return sections


def one(unit, section, key) -> str:
    values = unit[section][key]
    assert len(values) == 1, (section, key, values)
    return values[0]


def command_of(exec_line: str) -> str:
    return Path(shlex.split(exec_line)[0]).name


def test_worker_service():
    u = parse_unit(UNITS / "distill-worker.service")
    s = u["Service"]
    assert one(u, "Service", "Type") == "notify"
    assert int(one(u, "Service", "WatchdogSec")) > 0
    assert one(u, "Service", "Restart") == "on-failure"
    assert any("%h/.config/distill/env" in v for v in s["EnvironmentFile"])
    assert one(u, "Service", "NoNewPrivileges") == "yes"
    assert int(one(u, "Service", "TimeoutStopSec")) > 10  # the worker needs at most 10 s
    assert command_of(one(u, "Service", "ExecStart")) == "distill-worker"
    assert one(u, "Install", "WantedBy") == "default.target"  # a user unit


def test_run_service_and_timer():
    svc = parse_unit(UNITS / "distill-run.service")
    assert one(svc, "Service", "Type") == "oneshot"
    argv = shlex.split(one(svc, "Service", "ExecStart"))
    assert Path(argv[0]).name == "distill" and argv[1:] == ["run", "--distill"]
    assert "75" in one(svc, "Service", "SuccessExitStatus")  # LockBusy's exit code
    timer = parse_unit(UNITS / "distill-run.timer")
    assert one(timer, "Timer", "OnCalendar") == "hourly"
    assert one(timer, "Timer", "Persistent") == "true"
    assert one(timer, "Timer", "RandomizedDelaySec")
    assert one(timer, "Timer", "Unit") == "distill-run.service"
    assert one(timer, "Install", "WantedBy") == "timers.target"


def test_commands_named_are_installed_console_scripts():
    named = {command_of(one(parse_unit(UNITS / f), "Service", "ExecStart"))
             for f in ("distill-worker.service", "distill-run.service")}
    for plist in UNITS.glob("*.plist"):
        script = plistlib.loads(plist.read_bytes())["ProgramArguments"][-1]
        named |= set(re.findall(r"\.local/bin/([\w-]+)", script))
    assert named == {"distill", "distill-worker"}
    assert named <= SCRIPTS
    bindir = Path(sys.executable).parent
    for name in named:
        exe = bindir / name
        assert exe.exists() and os.access(exe, os.X_OK), f"{name} is not installed next to {sys.executable}"
        r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "usage:" in r.stdout


def test_plists_load():
    worker = plistlib.loads((UNITS / "ai.distill.worker.plist").read_bytes())
    assert worker["Label"] == "ai.distill.worker" and worker["KeepAlive"] is True and worker["RunAtLoad"] is True
    run = plistlib.loads((UNITS / "ai.distill.run.plist").read_bytes())
    assert run["Label"] == "ai.distill.run"
    assert set(run["StartCalendarInterval"]) == {"Minute"}  # once an hour
    for p in (worker, run):
        assert p["ProgramArguments"][:2] == ["/bin/sh", "-c"]
        r = subprocess.run(["/bin/sh", "-n", "-c", p["ProgramArguments"][2]], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr  # the wrapper is valid shell


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verify(tmp_path):
    """systemd's own check, with ExecStart pointed at this environment's console scripts."""
    bindir = str(Path(sys.executable).parent)
    names = ["distill-worker.service", "distill-run.service", "distill-run.timer"]
    for name in names:
        (tmp_path / name).write_text((UNITS / name).read_text().replace("%h/.local/bin", bindir))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    r = subprocess.run(["systemd-analyze", "--user", "verify", *[str(tmp_path / n) for n in names]],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)})
    assert r.returncode == 0, r.stderr
    assert "Unknown key" not in r.stderr and "Unknown lvalue" not in r.stderr, r.stderr
