"""``distill hooks install|uninstall`` on copies of each agent's real configuration layout:
the user's other servers, hooks and settings come out untouched, a second install changes
nothing, ``--dry-run`` writes nothing, uninstall gives back the original bytes — and the hook
that was written really queues a session when the agent runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from distill.cli import main

REPO = Path(__file__).resolve().parents[1]
DISTILL = f"{sys.executable} -m distill"

CLAUDE_JSON = {
    "numStartups": 41,
    "theme": "dark",
    "hasCompletedOnboarding": True,
    "projects": {"/home/ana/src/app": {"allowedTools": [], "mcpServers": {"local-db": {"command": "pg-mcp"}}}},
    "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                              "env": {"GITHUB_TOKEN_FILE": "~/.gh"}}},
}
CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash.sh"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "~/bin/log-session.sh"}]}],
    },
    "model": "sonnet",
}
CODEX_TOML = """# my codex config
model = "o3"  # the good one
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[projects."/home/ana/src/app"]
trust_level = "trusted"
"""
OPENCLAW_JSON = {
    "agents": {"defaults": {"model": "gemini-3-flash"}},
    "hooks": {"internal": {"enabled": True, "entries": {"session-memory": {"enabled": True}}}},
    "plugins": {"slots": {"memory": "memory-lancedb-pro"}},
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    (h / ".codex").mkdir()
    (h / ".openclaw").mkdir()
    (h / ".claude.json").write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    (h / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=4) + "\n")
    (h / ".codex" / "config.toml").write_text(CODEX_TOML)
    (h / ".openclaw" / "openclaw.json").write_text(json.dumps(OPENCLAW_JSON, indent=2) + "\n")
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DISTILL_DB", str(tmp_path / "db"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


def hooks(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["hooks", *argv, "--command", DISTILL, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def snapshot(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file() and ".distill-backup-" not in p.name}


def test_claude_code_install_keeps_the_users_servers_and_hooks_and_uninstall_restores(home, capsys, tmp_path):
    before = snapshot(home)
    code, dry = hooks(capsys, "install", "claude-code", "--home", str(home), "--dry-run")
    assert code == 0 and "+++ " in dry["diff"] and '"distill"' in dry["diff"]
    assert snapshot(home) == before  # a dry run writes nothing

    code, done = hooks(capsys, "install", "claude-code", "--home", str(home))
    assert code == 0 and len(done["backups"]) == 2
    cfg = json.loads((home / ".claude.json").read_text())
    assert cfg["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert cfg["mcpServers"]["distill"]["args"][-3:] == ["mcp", "--agent", "claude-code"]
    assert {k: v for k, v in cfg.items() if k != "mcpServers"} == {k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"}
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    assert settings["hooks"]["SessionEnd"][0] == CLAUDE_SETTINGS["hooks"]["SessionEnd"][0]
    assert len(settings["hooks"]["SessionEnd"]) == 2 and settings["permissions"] == CLAUDE_SETTINGS["permissions"]
    assert (home / ".claude" / "settings.json").read_text().startswith('{\n    "permissions"')  # its own indent
    sources = tomllib.loads((tmp_path / "state" / "config.toml").read_text())["sources"]
    assert sources == [{"path": str(home / ".claude" / "projects"), "agent_id": "claude-code", "format": "claude-code"}]

    installed = snapshot(home)
    code, again = hooks(capsys, "install", "claude-code", "--home", str(home))
    assert again["changed"] == [] and snapshot(home) == installed

    code, gone = hooks(capsys, "uninstall", "claude-code", "--home", str(home))
    assert code == 0 and snapshot(home) == before
    assert not (tmp_path / "state" / "config.toml").exists()


def test_the_installed_session_end_hook_queues_the_session(home, capsys, tmp_path):
    hooks(capsys, "install", "claude-code", "--home", str(home))
    transcript = home / ".claude" / "projects" / "-home-ana-src-app" / "5f0c.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    command = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"][1]["hooks"][0]["command"]
    event = {"session_id": "5f0c", "transcript_path": str(transcript), "cwd": "/home/ana/src/app", "reason": "exit"}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(["sh", "-c", command], input=json.dumps(event), text=True, env=env, capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    tasks = list((tmp_path / "state" / "queue" / "inbox").glob("*.json"))
    assert [json.loads(t.read_text())["session_file"] for t in tasks] == [str(transcript)]


def test_codex_install_round_trips_the_toml_and_notify_queues_the_thread(home, capsys, tmp_path):
    before = snapshot(home)
    code, done = hooks(capsys, "install", "codex", "--home", str(home))
    text = (home / ".codex" / "config.toml").read_text()
    assert text.startswith(CODEX_TOML.split("\n\n")[0])  # comments and order kept
    data = tomllib.loads(text)
    assert data["mcp_servers"]["github"]["command"] == "npx" and data["projects"]["/home/ana/src/app"]
    assert data["mcp_servers"]["distill"]["args"][-3:] == ["mcp", "--agent", "codex"]
    notify = data["notify"]
    assert notify[-5:] == ["enqueue", "--agent", "codex", "--session-file", "-"]

    thread = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    rollout = home / ".codex" / "sessions" / "2026" / "11" / "29" / f"rollout-2026-11-29T10-00-00-{thread}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text('{"type":"session_meta","payload":{"id":"%s"}}\n' % thread)
    payload = {"type": "agent-turn-complete", "thread-id": thread, "turn-id": "1", "cwd": "/home/ana/src/app",
               "input-messages": ["fix the build"], "last-assistant-message": "Done."}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([*notify, json.dumps(payload)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    tasks = list((tmp_path / "state" / "queue" / "inbox").glob("*.json"))
    assert [json.loads(t.read_text())["session_file"] for t in tasks] == [str(rollout)]

    code, gone = hooks(capsys, "uninstall", "codex", "--home", str(home))
    rollout.unlink()
    assert {k: v for k, v in snapshot(home).items() if "sessions" not in k} == before


def test_codex_keeps_a_notify_program_the_user_already_has(home, capsys):
    (home / ".codex" / "config.toml").write_text('notify = ["notify-send", "Codex"]\n' + CODEX_TOML)
    code, done = hooks(capsys, "install", "codex", "--home", str(home))
    data = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert data["notify"] == ["notify-send", "Codex"] and "distill" in data["mcp_servers"]
    assert any("already sets notify" in n for n in done["notes"])


def test_openclaw_hook_is_written_and_enabled_next_to_the_users_hooks(home, capsys):
    before = snapshot(home)
    code, done = hooks(capsys, "install", "openclaw", "--home", str(home))
    folder = home / ".openclaw" / "hooks" / "distill-enqueue"
    assert "command:new" in (folder / "HOOK.md").read_text()
    assert '"enqueue", "--agent", agent' in (folder / "handler.ts").read_text()
    cfg = json.loads((home / ".openclaw" / "openclaw.json").read_text())
    assert cfg["hooks"]["internal"]["entries"] == {"session-memory": {"enabled": True}, "distill-enqueue": {"enabled": True}}
    assert cfg["plugins"] == OPENCLAW_JSON["plugins"]
    hooks(capsys, "uninstall", "openclaw", "--home", str(home))
    assert snapshot(home) == before and not folder.exists()


def test_openclaw_in_discover_all_mode_is_not_turned_into_an_allow_list(home, capsys):
    cfg = {"hooks": {"internal": {"enabled": True}}}
    (home / ".openclaw" / "openclaw.json").write_text(json.dumps(cfg))
    code, done = hooks(capsys, "install", "openclaw", "--home", str(home))
    assert json.loads((home / ".openclaw" / "openclaw.json").read_text()) == cfg
    assert any("loads every discovered hook" in n for n in done["notes"])


def test_a_broken_settings_file_is_refused_and_left_alone(home, capsys):
    (home / ".claude" / "settings.json").write_text("{not json")
    code = main(["hooks", "install", "claude-code", "--home", str(home)])
    err = capsys.readouterr().err
    assert code == 2 and "settings.json is not valid JSON" in err
    assert (home / ".claude" / "settings.json").read_text() == "{not json"
    assert "distill" not in json.loads((home / ".claude.json").read_text())["mcpServers"]


def test_uninstall_without_install_changes_nothing(home, capsys):
    before = snapshot(home)
    for agent in ("claude-code", "codex", "openclaw"):
        code, done = hooks(capsys, "uninstall", agent, "--home", str(home))
        assert code == 0 and done["changed"] == []
    assert snapshot(home) == before


def test_people_read_the_diff_on_a_dry_run_and_what_changed_otherwise(home, capsys):
    def text(*argv: str) -> str:
        assert main(["hooks", *argv, "claude-code", "--home", str(home), "--command", DISTILL]) == 0
        return capsys.readouterr().out

    dry = text("install", "--dry-run")
    assert "Result(" not in dry and "\\n" not in dry
    assert f"--- {home / '.claude.json'} (now)" in dry.splitlines() and '+    "distill": {' in dry.splitlines()
    assert "(dry run, nothing written)" in dry
    done = text("install")
    assert done.startswith("installed claude-code: changed ") and str(home / ".claude.json") in done
    assert "  backup: " in done and "note: restart Claude Code" in done
    assert text("install").strip() == "install claude-code: nothing to change (already installed)"
    assert text("install", "--dry-run").strip() == "install claude-code: nothing to change (already installed)"
    assert text("uninstall").startswith("uninstalled claude-code: changed ")
    assert text("uninstall").strip() == "uninstall claude-code: nothing to change (already uninstalled)"


def test_the_state_dir_and_db_flags_of_install_reach_the_installed_hook_and_server(home, capsys, tmp_path, monkeypatch):
    """`distill --state-dir X --db Y hooks install …`: the hook queues into X (whose config.toml got
    the transcript root) and the MCP server reads Y, with no DISTILL_* in the agent's environment."""
    for var in ("DISTILL_STATE_DIR", "DISTILL_DB", "DISTILL_CONFIG", "DISTILL_AGENTS_DIR"):
        monkeypatch.delenv(var, raising=False)
    state, db = tmp_path / "flag-state", tmp_path / "flag-db"
    for agent in ("claude-code", "codex"):
        code = main(["--state-dir", str(state), "--db", str(db), "hooks", "install", agent, "--home", str(home),
                     "--command", DISTILL, "--json"])
        assert code == 0, capsys.readouterr()
    capsys.readouterr()
    wanted = {"DISTILL_DB": str(db), "DISTILL_STATE_DIR": str(state)}
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["distill"]["env"] == wanted
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["mcp_servers"]["distill"]["env"] == wanted

    agent_env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    agent_env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "elsewhere"))
    transcript = home / ".claude" / "projects" / "-home-ana-src-app" / "5f0c.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    command = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"][1]["hooks"][0]["command"]
    event = {"session_id": "5f0c", "transcript_path": str(transcript), "reason": "exit"}
    proc = subprocess.run(["sh", "-c", command], input=json.dumps(event), text=True, env=agent_env,
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    thread = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    rollout = home / ".codex" / "sessions" / "2026" / "11" / "29" / f"rollout-2026-11-29T10-00-00-{thread}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text('{"type":"session_meta","payload":{"id":"%s"}}\n' % thread)
    proc = subprocess.run([*codex["notify"], json.dumps({"type": "agent-turn-complete", "thread-id": thread})],
                          env=agent_env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    tasks = sorted(json.loads(t.read_text())["session_file"] for t in (state / "queue" / "inbox").glob("*.json"))
    assert tasks == sorted([str(transcript), str(rollout)])
    assert not (tmp_path / "state").exists()  # nothing went to the fixture's (now unset) state dir


def test_a_second_install_with_other_paths_updates_distills_own_entries(home, capsys, tmp_path, monkeypatch):
    hooks(capsys, "install", "claude-code", "--home", str(home))
    hooks(capsys, "install", "codex", "--home", str(home))
    monkeypatch.setenv("DISTILL_DB", str(tmp_path / "db2"))
    for agent in ("claude-code", "codex"):
        code, done = hooks(capsys, "install", agent, "--home", str(home))
        assert code == 0 and done["changed"]
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    ours = [h["command"] for g in settings["hooks"]["SessionEnd"] for h in g["hooks"] if "enqueue" in h["command"]]
    assert len(ours) == 1 and f"DISTILL_DB={tmp_path / 'db2'}" in ours[0]
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["mcp_servers"]["distill"]["env"]["DISTILL_DB"] == str(tmp_path / "db2")
    assert f"DISTILL_DB={tmp_path / 'db2'}" in codex["notify"]


@pytest.mark.parametrize("order", [("claude-code", "codex"), ("codex", "claude-code")])
def test_uninstalling_both_agents_deletes_the_config_toml_the_first_install_created(home, capsys, tmp_path, order):
    config = tmp_path / "state" / "config.toml"
    before = snapshot(home)
    for agent in ("claude-code", "codex"):
        assert hooks(capsys, "install", agent, "--home", str(home))[0] == 0
    assert [s["agent_id"] for s in tomllib.loads(config.read_text())["sources"]] == ["claude-code", "codex"]
    for agent in order:
        assert hooks(capsys, "uninstall", agent, "--home", str(home))[0] == 0
    assert not config.exists()
    assert snapshot(home) == before


def test_a_blank_config_toml_the_person_had_before_install_is_kept(home, capsys, tmp_path):
    config = tmp_path / "state" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("")
    hooks(capsys, "install", "codex", "--home", str(home))
    hooks(capsys, "uninstall", "codex", "--home", str(home))
    assert config.read_text() == ""
