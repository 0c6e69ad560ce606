"""``distill hooks doctor``: run every installed entry for real and say whether it starts.

An entry that names a program the agent cannot find fails silently inside the agent (the MCP
server never appears, each session-end hook errors into a log nobody reads), so this runs each
one as its agent would — its command, its arguments, its environment on top of this one:

* an MCP server entry is spawned and must answer ``initialize`` and ``tools/list`` over stdio;
* a hook is run with a probe session that does not exist: ``distill enqueue`` starting, reading
  its config and refusing the probe (exit 65, nothing queued) is the proof that it starts.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import Context, load_json

MCP_TIMEOUT = 60.0  # a cold start loads the SDK (1-3 s here); a busy machine gets room
REFUSED = 65  # InvalidTask: enqueue ran and turned the probe down, as it should


@dataclass
class Probe:
    agent: str
    kind: str  # "mcp" or "hook"
    where: str  # the file the entry is in
    argv: list[str] | None = None  # run without a shell
    shell: str | None = None  # run through /bin/sh (Claude Code's hooks)
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None


@dataclass
class Outcome:
    agent: str
    kind: str
    where: str
    command: str
    starts: bool
    detail: str
    seconds: float

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass
class HooksDoctorReport:
    outcomes: list[Outcome]
    agents: list[str]  # the agents looked at

    @property
    def exit_code(self) -> int:
        return 0 if all(o.starts for o in self.outcomes) else 1

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {"agents": self.agents, "entries": [o.model_dump() for o in self.outcomes],
                "all_start": self.exit_code == 0}


def doctor(agents: list[str], ctx: Context) -> HooksDoctorReport:
    return HooksDoctorReport([run(p) for agent in agents for p in probes(agent, ctx)], agents)


def probes(agent: str, ctx: Context) -> list[Probe]:
    """The entries ``hooks install`` wrote for ``agent`` that are in its files now."""
    from . import claude_code, codex, openclaw

    found: list[Probe] = []
    if agent == "claude-code":
        claude_json, settings = claude_code.paths(ctx)
        entry = _json(claude_json).get("mcpServers", {}).get(claude_code.SERVER)
        if claude_code._server_is_ours(entry):
            found.append(Probe(agent, "mcp", str(claude_json), argv=[entry["command"], *entry.get("args", [])],
                               env=entry.get("env") or {}))
        for group in _json(settings).get("hooks", {}).get("SessionEnd", []):
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if claude_code._is_ours(hook):
                    probe_file = ctx.home / ".claude" / "projects" / "distill-doctor-probe.jsonl"
                    found.append(Probe(agent, "hook", str(settings), shell=hook["command"],
                                       stdin=json.dumps({"hook_event_name": "SessionEnd",
                                                         "transcript_path": str(probe_file)})))
    elif agent == "codex":
        import tomllib

        path = codex.config_path(ctx)
        doc = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        entry = (doc.get("mcp_servers") or {}).get(codex.SERVER) or {}
        if entry.get("args", [])[-3:] == ["mcp", "--agent", codex.AGENT_ID]:
            found.append(Probe(agent, "mcp", str(path), argv=[entry["command"], *entry["args"]],
                               env=entry.get("env") or {}))
        notify = doc.get("notify")
        if isinstance(notify, list) and notify[-5:] == codex.notify_argv(ctx)[-5:]:
            event = {"type": "agent-turn-complete", "thread-id": "distill-doctor-probe"}
            found.append(Probe(agent, "hook", str(path), argv=[*notify, json.dumps(event)]))
    elif agent == "openclaw":
        _, handler, _ = openclaw.paths(ctx)
        text = handler.read_text(encoding="utf-8") if handler.is_file() else ""
        command = re.search(r"^const DISTILL = (.*);$", text, re.MULTILINE)
        env = re.search(r"^const ENV = \{ \.\.\.process\.env, \.\.\.(.*) \};$", text, re.MULTILINE)
        if command:
            probe_file = ctx.home / ".openclaw" / "agents" / "main" / "sessions" / "distill-doctor-probe.jsonl"
            found.append(Probe(agent, "hook", str(handler),
                               argv=[*json.loads(command.group(1)), "enqueue", "--agent", "main",
                                     "--session-file", str(probe_file)],
                               env=json.loads(env.group(1)) if env else {}))
    return found


def run(probe: Probe) -> Outcome:
    command = probe.shell or " ".join(probe.argv or [])
    env = {**os.environ, **probe.env}
    t0 = time.perf_counter()
    try:
        ok, detail = _mcp(probe, env) if probe.kind == "mcp" else _hook(probe, env)
    except FileNotFoundError as exc:
        ok, detail = False, f"no such program: {exc.filename}"
    except OSError as exc:
        ok, detail = False, f"cannot run it: {exc}"
    return Outcome(probe.agent, probe.kind, probe.where, command, ok, detail, round(time.perf_counter() - t0, 2))


def _hook(probe: Probe, env: dict[str, str]) -> tuple[bool, str]:
    argv = ["/bin/sh", "-c", probe.shell] if probe.shell else probe.argv or []
    proc = subprocess.run(argv, input=probe.stdin or "", env=env, capture_output=True, text=True, timeout=60)
    said = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    if proc.returncode in (0, REFUSED):
        return True, f"ran distill enqueue (exit {proc.returncode}: {said or 'ok'})"
    return False, f"exit {proc.returncode}: {said or 'no message'}"


def _mcp(probe: Probe, env: dict[str, str]) -> tuple[bool, str]:
    proc = subprocess.Popen(probe.argv or [], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    deadline = time.monotonic() + MCP_TIMEOUT
    try:
        def send(msg: dict[str, Any]) -> None:
            stdin.write(json.dumps(msg) + "\n")
            stdin.flush()

        def answer(want: int) -> dict[str, Any] | None:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                line = stdout.readline()
                if not line:
                    return None
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("id") == want:
                    return msg
            return None

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "distill-doctor", "version": "1"}}})
        if answer(1) is None:
            return False, _why(proc, "no answer to initialize")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answer(2)
        if listed is None or "result" not in listed:
            return False, _why(proc, "no answer to tools/list")
        names = sorted(t["name"] for t in listed["result"].get("tools", []))
        return True, f"answered initialize and tools/list ({', '.join(names)})"
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def _why(proc: subprocess.Popen, what: str) -> str:
    if proc.poll() is None:
        return f"{what} within {MCP_TIMEOUT:.0f} s"
    err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
    return f"{what}: exited {proc.returncode}: {(err or ['no message'])[-1][:200]}"


def _json(path: Path) -> dict[str, Any]:
    return load_json(path.read_text(encoding="utf-8"), path) if path.is_file() else {}
