"""Which session files a task may name, and which agent each one belongs to.

A task file is untrusted: anyone who can write to the inbox, or any hook fed odd input, can
name a path. So a task's file must be absolute, free of ``..``, resolve (symlinks included)
to a regular ``.jsonl`` file under a configured source root, and belong to the agent the task
claims: under ``agents_dir`` that is the folder name (``<agents_dir>/<agentId>/sessions/``),
under an extra ``sources`` root the root's own ``agent_id``. The distiller's own agent and
agents outside the allow-list are refused. Which root holds a path is
:func:`distill.tails.owners.holders`. Stdlib only: the hook's fast path uses it.
"""

from __future__ import annotations

import os

from .errors import InvalidTask, SessionGone
from .settings.core import agent_refusal
from .settings.hook import HookConfig
from .tails.owners import holders


def check_agent(cfg: HookConfig, agent_id: str) -> None:
    reason = agent_refusal(agent_id, cfg.distiller_agent_id, cfg.allowed_agent_ids)
    if reason is not None:
        raise InvalidTask(reason)


def check_session_file(cfg: HookConfig, agent_id: str, session_file: str) -> tuple[str, str]:
    """Return ``(absolute path as given, resolved path)`` or raise :class:`InvalidTask`."""
    check_agent(cfg, agent_id)
    if not isinstance(session_file, str) or not session_file or "\x00" in session_file:
        raise InvalidTask(f"session file {session_file!r} is not a path")
    parts = session_file.replace("\\", "/").split("/")
    if ".." in parts:
        raise InvalidTask(f"session file {session_file!r} contains '..'; give the plain absolute path")
    if not os.path.isabs(session_file):
        raise InvalidTask(f"session file {session_file!r} is not an absolute path")
    given = os.path.normpath(session_file)
    try:
        resolved = os.path.realpath(given, strict=True)
    except FileNotFoundError:
        parent = os.path.realpath(os.path.dirname(given))
        if agent_id not in _owners(cfg, os.path.join(parent, os.path.basename(given))):
            raise InvalidTask(f"session file {given} does not exist, and is not where agent {agent_id!r}'s "
                              "transcripts live under a configured source root") from None
        raise SessionGone(f"session file {given} does not exist") from None
    except OSError as exc:
        raise InvalidTask(f"session file {given} cannot be read: {exc.strerror or exc}") from None
    if not os.path.isfile(resolved):
        raise InvalidTask(f"session file {given} is not a regular file")
    if not resolved.endswith(".jsonl"):
        raise InvalidTask(f"session file {given} is not a .jsonl transcript")
    owners = _owners(cfg, resolved)
    if not owners:
        roots = [cfg.agents_dir] + [p for p, _ in cfg.sources]
        where = f" (it resolves to {resolved})" if resolved != given else ""
        raise InvalidTask(
            f"session file {given}{where} is not under a configured source root ({', '.join(roots)}); "
            "set agents_dir or add a [[sources]] entry in config.toml"
        )
    if agent_id not in owners:
        raise InvalidTask(
            f"session file {given} belongs to agent {' or '.join(sorted(set(owners)))}, not {agent_id!r}"
        )
    return given, resolved


def owner_of(cfg: HookConfig, path: str) -> str | None:
    """The agent a transcript belongs to, or None if it lies outside every root (or is ambiguous)."""
    try:
        owners = set(_owners(cfg, os.path.realpath(path, strict=True)))
    except OSError:
        return None
    return owners.pop() if len(owners) == 1 else None


def _owners(cfg: HookConfig, resolved: str) -> list[str]:
    """The agent ids of every root that holds ``resolved`` (roots resolved the same way)."""
    return [agent for agent, _i, _rel in holders(resolved, cfg.agents_dir, cfg.sources, os.path.realpath)]
