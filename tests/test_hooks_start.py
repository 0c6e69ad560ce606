"""The entries ``distill hooks install`` writes start where the agent runs them: installed from
a virtualenv into a temporary HOME with that venv nowhere on PATH, each MCP server entry is
launched with the official MCP client and each hook command is run for real; ``hooks doctor``
says the same, and says so when an entry cannot start."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

STRIPPED_PATH = "/usr/bin:/bin"


def distill(home: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"HOME": str(home), "PATH": STRIPPED_PATH, "DISTILL_STATE_DIR": str(state)}
    return subprocess.run([sys.executable, "-m", "distill", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=home)


async def tools_of(command: str, args: list[str], env: dict[str, str]) -> list[str]:
    params = StdioServerParameters(command=command, args=args, env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        return sorted(t.name for t in (await client.list_tools()).tools)


def test_installed_entries_start_without_the_venv_on_path(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    for agent in ("claude-code", "codex", "openclaw"):
        done = distill(home, state, "hooks", "install", agent)
        assert done.returncode == 0, done.stderr
    base = {"HOME": str(home), "PATH": STRIPPED_PATH}

    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["distill"]
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    handler = (home / ".openclaw" / "hooks" / "distill-enqueue" / "handler.ts").read_text()
    openclaw_cmd = json.loads(re.search(r"^const DISTILL = (.*);$", handler, re.MULTILINE).group(1))
    for command in (server["command"], codex["mcp_servers"]["distill"]["command"], openclaw_cmd[0]):
        assert os.path.isabs(command) and os.access(command, os.X_OK), command

    for entry in (server, codex["mcp_servers"]["distill"]):
        names = anyio.run(tools_of, entry["command"], entry["args"], {**base, **entry["env"]})
        assert names == ["check_duplicate", "forget", "list_facts", "recall", "remember"]

    session = home / ".claude" / "projects" / "p" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    hook = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"][0]["hooks"][0]
    ran = subprocess.run(["/bin/sh", "-c", hook["command"]], input=json.dumps({"transcript_path": str(session)}),
                         env=base, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    event = json.dumps({"type": "agent-turn-complete", "thread-id": "t-none"})
    ran = subprocess.run([*codex["notify"], event], env=base, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 65 and "no Codex rollout file" in ran.stderr  # distill ran, and refused it
    ran = subprocess.run([*openclaw_cmd, "enqueue", "--agent", "main", "--session-file", str(session)],
                         env=base, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 65 and "distill: error" in ran.stderr  # not under openclaw's root: refused by distill
    assert len(list((state / "queue" / "inbox").glob("*.json"))) == 1  # the Claude Code session, queued

    doctor = distill(home, state, "--json", "hooks", "doctor")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 0 and report["all_start"], doctor.stdout
    assert sorted((e["agent"], e["kind"]) for e in report["entries"]) == [
        ("claude-code", "hook"), ("claude-code", "mcp"), ("codex", "hook"), ("codex", "mcp"), ("openclaw", "hook")]


def test_doctor_says_when_an_entry_cannot_start(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    done = distill(home, state, "hooks", "install", "claude-code", "--command", "distill")  # bare name, as before
    assert done.returncode == 0, done.stderr
    doctor = distill(home, state, "hooks", "doctor", "claude-code")
    assert doctor.returncode == 1
    assert doctor.stdout.count("FAILS") == 2 and "no such program: distill" in doctor.stdout
    assert "2 of 2 entries do not start" in doctor.stdout
