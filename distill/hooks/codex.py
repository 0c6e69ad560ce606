"""Codex CLI: ``[mcp_servers.distill]`` and the ``notify`` program in ``~/.codex/config.toml``
(``$CODEX_HOME/config.toml`` when that is set and no ``--home`` is given).

Codex runs ``notify`` after every turn with its event JSON as the last argument; that names the
``thread-id``, and ``distill enqueue --session-file -`` finds the thread's rollout file under the
``~/.codex/sessions`` root. Tasks for one file coalesce in the worker, and each run reads only the
new tail, so a task per turn is cheap. ``notify`` is a single program: if the user already has
one, it is left alone and the note says how to chain it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import Context, Plan, add_source, remove_sources

AGENT_ID = "codex"
SERVER = "distill"


def config_path(ctx: Context) -> Path:
    if not ctx.home_given and os.environ.get("CODEX_HOME"):
        return Path(os.environ["CODEX_HOME"]) / "config.toml"
    return ctx.home / ".codex" / "config.toml"


def notify_argv(ctx: Context) -> list[str]:
    return ctx.argv("enqueue", "--agent", AGENT_ID, "--session-file", "-")


def _source(ctx: Context) -> dict[str, str]:
    return {"path": ctx.tilde(config_path(ctx).parent / "sessions"), "agent_id": AGENT_ID, "format": "codex", "glob": "**/rollout-*.jsonl"}


def install(plan: Plan, ctx: Context) -> None:
    import tomlkit

    path = config_path(ctx)

    def update(before: str | None) -> str | None:
        doc = tomlkit.parse(before or "")
        changed = False
        servers = doc.get("mcp_servers")
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        wanted = {"command": ctx.command[0], "args": [*ctx.command[1:], "mcp", "--agent", AGENT_ID]}
        current = servers.get(SERVER)
        now = current.unwrap() if current is not None else {}
        mine = current is not None and now.get("args", [])[-3:] == ["mcp", "--agent", AGENT_ID]
        if mine and (now.get("command"), now.get("args"), now.get("env") or {}) != (
                wanted["command"], wanted["args"], ctx.env):
            del servers[SERVER]  # installed before with another command or other paths: written anew
            current = None
        if current is None:
            table = tomlkit.table()
            table["command"] = wanted["command"]
            table["args"] = wanted["args"]
            if ctx.env:
                env = tomlkit.inline_table()
                env.update(ctx.env)
                table["env"] = env
            table.add(tomlkit.nl())
            servers[SERVER] = table
            plan.added["mcp_server"] = SERVER
            changed = True
        elif not mine:
            plan.notes.append(f"{path} already has [mcp_servers.{SERVER}] that is not distill's; left it as it is")
        notify = doc.get("notify")
        if notify is None:
            doc["notify"] = notify_argv(ctx)
            plan.added["notify"] = True
            changed = True
        elif list(notify.unwrap())[-5:] == notify_argv(ctx)[-5:] and list(notify.unwrap()) != notify_argv(ctx):
            doc["notify"] = notify_argv(ctx)  # ours, installed before with another command or other paths
            plan.added["notify"] = True
            changed = True
        elif list(notify.unwrap()) != notify_argv(ctx):
            plan.notes.append(
                f"{path} already sets notify = {list(notify.unwrap())}; left it as it is. To also queue sessions, "
                f"call `{' '.join(notify_argv(ctx))} \"$payload\"` from that program with the JSON it receives")
        return tomlkit.dumps(doc) if changed else before

    plan.edit(path, update)
    add_source(plan, ctx, _source(ctx))
    if plan.changes:
        plan.notes.append("restart Codex; `/mcp` then lists distill, and each finished turn queues the session "
                          "for distill-worker")


def uninstall(plan: Plan, ctx: Context, manifest: dict[str, Any]) -> None:
    import tomlkit

    path = config_path(ctx)
    if not path.is_file():
        remove_sources(plan, ctx, manifest)
        return

    def update(before: str | None) -> str | None:
        doc = tomlkit.parse(before or "")
        changed = False
        servers = doc.get("mcp_servers")
        if servers is not None and SERVER in servers and \
                servers[SERVER].unwrap().get("args", [])[-3:] == ["mcp", "--agent", AGENT_ID]:
            del servers[SERVER]
            if not servers:
                del doc["mcp_servers"]
            changed = True
        notify = doc.get("notify")
        if notify is not None and list(notify.unwrap())[-5:] == notify_argv(ctx)[-5:]:
            del doc["notify"]
            changed = True
        return tomlkit.dumps(doc) if changed else before

    plan.edit(path, update)
    remove_sources(plan, ctx, manifest)
