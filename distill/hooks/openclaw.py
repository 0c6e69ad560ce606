"""OpenClaw: the ``distill-enqueue`` hook of docs/worker.md in ``~/.openclaw/hooks/``, enabled in
``~/.openclaw/openclaw.json`` (``hooks.internal.entries.distill-enqueue.enabled``, what
``openclaw hooks enable`` writes).

OpenClaw already recalls through its memory-lancedb-pro plugin, so it gets no MCP entry. The
config is only edited when that is safe: when it is plain JSON, and when OpenClaw is not loading
every discovered hook (``hooks.internal.enabled`` with no named entries) — a first named entry
would turn that into an allow-list and silence the user's other hooks. Otherwise the note says
to run ``openclaw hooks enable distill-enqueue``.
"""

from __future__ import annotations

import json
from typing import Any

from . import Context, Plan, dump_json

HOOK = "distill-enqueue"

HOOK_MD = """---
name: distill-enqueue
description: "Queue the session that just ended for distill-worker"
metadata: { "openclaw": { "emoji": "🧠", "events": ["command:new", "command:reset"], "requires": { "bins": ["distill"] } } }
---

Runs `distill enqueue` for the session `/new` (or `/reset`) just closed. Returns at once.
Installed by `distill hooks install openclaw`; `distill hooks uninstall openclaw` removes it.
"""

HANDLER_TS = """import { execFile } from "node:child_process";

// event.sessionKey is "agent:<agentId>:…"; the ended session's transcript is in the context
// (previousSessionEntry on /new and /reset in current OpenClaw; older builds: sessionEntry / sessionFile).
const DISTILL = __COMMAND__;
const ENV = { ...process.env, ...__ENV__ };

const handler = async (event: any) => {
  if (event.type !== "command" || !["new", "reset"].includes(event.action)) return;
  const ctx = event.context ?? {};
  const file = ctx.previousSessionEntry?.sessionFile ?? ctx.sessionEntry?.sessionFile ?? ctx.sessionFile;
  const agent = String(event.sessionKey ?? "").split(":")[1];
  if (!file || !agent) return;
  execFile(DISTILL[0], [...DISTILL.slice(1), "enqueue", "--agent", agent, "--session-file", file],
    { timeout: 10_000, env: ENV },
    (err, _stdout, stderr) => { if (err) console.warn(`[distill-enqueue] ${stderr || err.message}`); });
};

export default handler;
"""


def handler_ts(ctx: Context) -> str:
    return (HANDLER_TS.replace("__COMMAND__", json.dumps(ctx.command))
            .replace("__ENV__", json.dumps(ctx.env, sort_keys=True)))


def paths(ctx: Context):
    folder = ctx.home / ".openclaw" / "hooks" / HOOK
    return folder / "HOOK.md", folder / "handler.ts", ctx.home / ".openclaw" / "openclaw.json"


def install(plan: Plan, ctx: Context) -> None:
    hook_md, handler, config = paths(ctx)
    plan.edit(hook_md, lambda before: HOOK_MD)
    plan.edit(handler, lambda before: handler_ts(ctx))

    def enable(before: str | None) -> str | None:
        try:
            data = json.loads(before) if before and before.strip() else {}
        except ValueError:
            plan.notes.append(f"{config} is not plain JSON (JSON5?): run `openclaw hooks enable {HOOK}`")
            return before
        internal = data.setdefault("hooks", {}).setdefault("internal", {})
        entries = internal.get("entries")
        if internal.get("enabled") is False:
            plan.notes.append(f"internal hooks are switched off in {config} (hooks.internal.enabled = false): "
                              f"turn them on, then run `openclaw hooks enable {HOOK}`")
            return before
        if internal.get("enabled") is True and not entries:
            plan.notes.append(f"OpenClaw loads every discovered hook ({config} names none), so {HOOK} runs "
                              "as it is; the config was left alone")
            return before
        entry = (entries or {}).get(HOOK)
        if isinstance(entry, dict) and entry.get("enabled") is True:
            return before
        internal.setdefault("entries", {})[HOOK] = {**(entry or {}), "enabled": True}
        plan.added["enabled"] = HOOK
        return dump_json(data, before)

    plan.edit(config, enable)
    if plan.changes:
        plan.notes.append("restart the OpenClaw gateway so it loads the hook (`openclaw hooks check` lists it)")


def uninstall(plan: Plan, ctx: Context, manifest: dict[str, Any]) -> None:
    hook_md, handler, config = paths(ctx)
    for path in (hook_md, handler):
        if path.is_file():
            plan.edit(path, lambda before: None)
            plan.changes[-1].own_folder = True

    def disable(before: str | None) -> str | None:
        try:
            data = json.loads(before or "{}")
            entries = data["hooks"]["internal"]["entries"]
        except (ValueError, KeyError, TypeError):
            return before
        if HOOK not in entries:
            return before
        del entries[HOOK]
        return dump_json(data, before)

    if manifest.get("enabled") and config.is_file():
        plan.edit(config, disable)
