"""Claude Code: the MCP server in ``~/.claude.json`` and a ``SessionEnd`` hook in
``~/.claude/settings.json``.

Both are Claude Code's documented user-level places: ``claude mcp add --scope user`` writes the
top-level ``mcpServers`` of ``~/.claude.json``; hooks live in ``~/.claude/settings.json`` under
``hooks.<Event>`` as ``[{"matcher"?, "hooks": [{"type": "command", "command": …}]}]``. The hook
passes the event JSON (with ``transcript_path``) on stdin to ``distill enqueue --session-file -``.
"""

from __future__ import annotations

from typing import Any

from . import Context, Plan, add_source, dump_json, load_json, remove_sources

AGENT_ID = "claude-code"
SERVER = "distill"


def paths(ctx: Context):
    return ctx.home / ".claude.json", ctx.home / ".claude" / "settings.json"


def server_entry(ctx: Context) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio", "command": ctx.command[0],
                             "args": [*ctx.command[1:], "mcp", "--agent", AGENT_ID]}
    entry["env"] = dict(ctx.env)
    return entry


def hook_command(ctx: Context) -> str:
    return ctx.shell("enqueue", "--agent", AGENT_ID, "--session-file", "-") + " >/dev/null"


def _is_ours(hook: Any) -> bool:
    cmd = hook.get("command", "") if isinstance(hook, dict) else ""
    return "enqueue --agent claude-code --session-file -" in cmd and "distill" in cmd


def install(plan: Plan, ctx: Context) -> None:
    claude_json, settings = paths(ctx)

    def add_server(before: str | None) -> str | None:
        data = load_json(before, claude_json)
        servers = data.setdefault("mcpServers", {})
        current = servers.get(SERVER)
        if current == server_entry(ctx):
            return before
        if current is not None and not _server_is_ours(current):
            plan.notes.append(f"{claude_json} already has an MCP server named {SERVER!r} that is not distill's; "
                              "left it as it is")
            return before
        servers[SERVER] = server_entry(ctx)
        plan.added["mcp_server"] = SERVER
        return dump_json(data, before)

    def add_hook(before: str | None) -> str | None:
        data = load_json(before, settings)
        groups = data.setdefault("hooks", {}).setdefault("SessionEnd", [])
        ours = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _is_ours(h)]
        if ours:  # installed before: brought up to this install's command and paths
            if all(h.get("command") == hook_command(ctx) for h in ours):
                return before
            for h in ours:
                h["command"] = hook_command(ctx)
            return dump_json(data, before)
        groups.append({"hooks": [{"type": "command", "command": hook_command(ctx)}]})
        plan.added["hook"] = "SessionEnd"
        return dump_json(data, before)

    plan.edit(claude_json, add_server)
    plan.edit(settings, add_hook)
    add_source(plan, ctx, {"path": ctx.tilde(ctx.home / ".claude" / "projects"), "agent_id": AGENT_ID,
                           "format": "claude-code"})
    if plan.changes:
        plan.notes.append("restart Claude Code; `/mcp` then lists distill, and each session end queues its "
                          "transcript for distill-worker")


def _server_is_ours(entry: Any) -> bool:
    return isinstance(entry, dict) and list(entry.get("args") or [])[-3:] == ["mcp", "--agent", AGENT_ID]


def uninstall(plan: Plan, ctx: Context, manifest: dict[str, Any]) -> None:
    claude_json, settings = paths(ctx)

    def drop_server(before: str | None) -> str | None:
        data = load_json(before, claude_json)
        servers = data.get("mcpServers")
        if not isinstance(servers, dict) or not _server_is_ours(servers.get(SERVER)):
            return before
        del servers[SERVER]
        return dump_json(data, before)

    def drop_hook(before: str | None) -> str | None:
        data = load_json(before, settings)
        groups = (data.get("hooks") or {}).get("SessionEnd")
        if not isinstance(groups, list):
            return before
        kept = []
        for g in groups:
            if isinstance(g, dict) and any(_is_ours(h) for h in g.get("hooks", [])):
                rest = [h for h in g["hooks"] if not _is_ours(h)]
                if rest:
                    kept.append({**g, "hooks": rest})
            else:
                kept.append(g)
        if kept == groups:
            return before
        if kept:
            data["hooks"]["SessionEnd"] = kept
        else:
            del data["hooks"]["SessionEnd"]
        return dump_json(data, before)

    if claude_json.is_file():
        plan.edit(claude_json, drop_server)
    if settings.is_file():
        plan.edit(settings, drop_hook)
    remove_sources(plan, ctx, manifest)
