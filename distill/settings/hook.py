"""The hook's slice of the settings: state dir, transcript roots and the agent rules.

``distill enqueue`` runs at every session end and must return in milliseconds; importing
the full model's validator (msgspec, with typing) costs about as much as the rest of the call.
So this slice is built straight from
:func:`distill.settings.core.gather` (the same precedence as the full settings) with plain
checks, and gives up — returning ``None`` — on anything unusual (a wrong type, a bad file),
so that the caller falls back to the full settings model and its precise error messages.
"""

from __future__ import annotations

import os

from .core import DEFAULT_AGENTS_DIR, DEFAULT_DISTILLER, DEFAULT_STATE_DIR, allow_list, gather, is_agent_id

FIELDS = ("state_dir", "agents_dir", "sources", "distiller_agent_id", "allowed_agent_ids")


class HookConfig:
    """All a hook's task depends on."""

    __slots__ = ("state_dir", "agents_dir", "sources", "distiller_agent_id", "allowed_agent_ids")

    def __init__(self, state_dir: str, agents_dir: str, sources: list[tuple[str, str]],
                 distiller_agent_id: str, allowed_agent_ids: str):
        self.state_dir = state_dir
        self.agents_dir = agents_dir
        self.sources = sources  # (root path, agent id)
        self.distiller_agent_id = distiller_agent_id
        self.allowed_agent_ids = allowed_agent_ids

    @classmethod
    def from_settings(cls, settings) -> HookConfig:
        return cls(str(settings.state_dir), str(settings.agents_dir),
                   [(str(s.path), s.agent_id) for s in settings.sources],
                   settings.distiller_agent_id, settings.allowed_agent_ids)

    def allowed(self) -> frozenset[str] | None:
        return allow_list(self.allowed_agent_ids)


def load_hook_config(state_dir: str | None = None, agents_dir: str | None = None) -> HookConfig | None:
    """The hook's settings, or ``None`` when only the full model can say (odd config, errors)."""
    try:
        v, _ = gather(FIELDS, json_names=("sources",), flags={"state_dir": state_dir, "agents_dir": agents_dir})
    except Exception:  # noqa: BLE001 - any surprise: let the full settings model report it
        return None
    sd, ad = v.get("state_dir", DEFAULT_STATE_DIR), v.get("agents_dir", DEFAULT_AGENTS_DIR)
    distiller, allowed = v.get("distiller_agent_id", DEFAULT_DISTILLER), v.get("allowed_agent_ids", "")
    raw_sources = v.get("sources", [])
    if not all(isinstance(x, str) for x in (sd, ad, distiller, allowed)) or not isinstance(raw_sources, list):
        return None
    if not is_agent_id(distiller):
        return None
    sources = []
    for src in raw_sources:
        if not isinstance(src, dict) or not isinstance(src.get("path"), str) or not isinstance(src.get("agent_id"), str):
            return None
        sources.append((os.path.expanduser(src["path"]), src["agent_id"]))
    return HookConfig(sd, ad, sources, distiller, allowed)
