"""``distill mcp``: serve the shared memory table to any MCP client (stdio, or streamable HTTP)."""

from __future__ import annotations

from . import command

DEFAULT_PORT = 8765


def register(sub) -> None:
    p = command(sub, "mcp", _serve,
                "serve recall/remember/list_facts/check_duplicate/forget over MCP (stdio by default)")
    p.add_argument("--agent", help="the agent this server speaks for: remember(scope='agent') writes to "
                                   "agent:<ID>, recall searches global + agent:<ID> (default: global only)")
    p.add_argument("--read-only", action="store_true", help="offer only recall, list_facts and check_duplicate")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")


def _serve(settings, args) -> None:
    from ..settings.core import is_agent_id
    from ..errors import ConfigError
    from ..mcp import serve

    if args.agent is not None and not is_agent_id(args.agent):
        raise ConfigError(f"--agent {args.agent!r} is not an agent id (letters, digits, '.', '_', '-'; at most 64)")
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a TCP port")
    serve(settings, agent=args.agent, read_only=args.read_only, http=args.http, port=args.port)
