"""``distill hooks install|uninstall claude-code|codex|openclaw [--dry-run]``, ``distill hooks doctor [AGENT]``."""

from __future__ import annotations

from . import command

AGENTS = ("claude-code", "codex", "openclaw")


def register(sub) -> None:
    group = sub.add_parser("hooks", help="connect an agent: its MCP server entry and session-end hook",
                           description="Write (or remove) what an agent needs to recall from and feed the shared "
                                       "memory: its MCP server entry and its session-end hook. Idempotent; every "
                                       "changed file is backed up first.")
    hsub = group.add_subparsers(dest="hooks_command", metavar="ACTION")
    hsub.required = True
    for action, text in (("install", "add distill to an agent's configuration"),
                         ("uninstall", "remove what `hooks install` added")):
        p = command(hsub, action, _run, text)
        p.add_argument("agent", choices=AGENTS)
        p.add_argument("--dry-run", action="store_true", help="print the diff; change nothing")
        p.add_argument("--home", help="the home folder whose agent configs to edit (default ~; env DISTILL_HOOKS_HOME)")
        p.add_argument("--command", dest="distill_command",
                       help="how the agent should run distill (default: the `distill` found on PATH)")
    p = command(hsub, "doctor", _doctor, "run each installed MCP server entry and hook as its agent would, "
                                          "and say whether it starts")
    p.add_argument("agent", nargs="?", choices=AGENTS, help="only this agent (default: every agent)")
    p.add_argument("--home", help="the home folder whose agent configs to read (default ~; env DISTILL_HOOKS_HOME)")


def _doctor(settings, args):
    from ..hooks import context
    from ..hooks.doctor import doctor

    ctx = context(settings, home=args.home)
    return doctor([args.agent] if args.agent else list(AGENTS), ctx)


def _run(settings, args):
    from ..hooks import apply, context, plan_for

    ctx = context(settings, home=args.home, command=args.distill_command,
                  flags={"state_dir": args.state_dir, "db": args.db, "agents_dir": args.agents_dir})
    return apply(plan_for(args.agent, args.hooks_command, ctx), ctx, dry_run=args.dry_run)
