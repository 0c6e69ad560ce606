"""The few settings an agent hook needs, read without pydantic.

``distill enqueue`` runs at every session end and must return in milliseconds; importing
pydantic and building :class:`distill.config.Settings` alone costs ~0.25 s on a small machine.
This reader follows exactly the precedence of :func:`distill.config.load_settings` (flags,
then ``DISTILL_*`` environment, then ``config.toml``, then defaults) for the fields a hook
needs, and gives up — returning ``None`` — on anything unusual, so that the caller falls back
to the full settings model and its precise error messages. ``tests/test_queue.py`` checks
that both readers agree.
"""

from __future__ import annotations

import os

AGENT_ID_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"  # same as distill.config.AGENT_ID_RE
_HOME = os.path.expanduser("~")
DEFAULT_STATE_DIR = os.path.join(_HOME, ".openclaw", "state", "jsonl-distill")
DEFAULT_AGENTS_DIR = os.path.join(_HOME, ".openclaw", "agents")
DEFAULT_DISTILLER = "memory-distiller"
ALLOWED_ENV = ("allowed_agent_ids", "distill_allowed_agent_ids", "openclaw_jsonl_distill_allowed_agent_ids")


class HookConfig:
    """State dir, transcript roots and the agent rules: all a hook's task depends on."""

    __slots__ = ("state_dir", "agents_dir", "sources", "distiller_agent_id", "allowed_agent_ids")

    def __init__(self, state_dir: str, agents_dir: str, sources: list[tuple[str, str]],
                 distiller_agent_id: str, allowed_agent_ids: str):
        self.state_dir = state_dir
        self.agents_dir = agents_dir
        self.sources = sources  # (root path, agent id)
        self.distiller_agent_id = distiller_agent_id
        self.allowed_agent_ids = allowed_agent_ids

    @classmethod
    def from_settings(cls, settings) -> "HookConfig":
        return cls(str(settings.state_dir), str(settings.agents_dir),
                   [(str(s.path), s.agent_id) for s in settings.sources],
                   settings.distiller_agent_id, settings.allowed_agent_ids)

    def allowed(self) -> frozenset[str] | None:
        raw = self.allowed_agent_ids.strip()
        if raw in ("", "*", "all"):
            return None
        return frozenset(a.strip() for a in raw.split(",") if a.strip())

    def queue_dir(self) -> str:
        return os.path.join(self.state_dir, "queue")


def load_hook_config(state_dir: str | None = None, agents_dir: str | None = None) -> HookConfig | None:
    """The hook's settings, or ``None`` when only the full model can say (odd config, errors)."""
    try:
        return _load(state_dir, agents_dir)
    except Exception:  # noqa: BLE001 - any surprise: let the full settings model report it
        return None


def _load(state_dir: str | None, agents_dir: str | None) -> HookConfig | None:
    env = {k.lower(): v for k, v in os.environ.items()}  # pydantic-settings is case-insensitive
    sd_given = state_dir or env.get("distill_state_dir")
    config = os.environ.get("DISTILL_CONFIG")
    if config:
        config_path = os.path.expanduser(config)
        if not os.path.isfile(config_path):
            return None
    else:
        config_path = os.path.join(os.path.expanduser(sd_given) if sd_given else DEFAULT_STATE_DIR, "config.toml")
    data: dict = {}
    if os.path.isfile(config_path):
        import tomllib

        with open(config_path, "rb") as fh:
            data = tomllib.load(fh)
    base = os.path.dirname(config_path)

    def toml_path(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(key)
        value = os.path.expanduser(value)
        return value if os.path.isabs(value) else os.path.realpath(os.path.join(base, value))

    sd = os.path.expanduser(sd_given) if sd_given else (toml_path("state_dir") or DEFAULT_STATE_DIR)
    ad_given = agents_dir or env.get("distill_agents_dir")
    ad = os.path.expanduser(ad_given) if ad_given else (toml_path("agents_dir") or DEFAULT_AGENTS_DIR)
    if "distill_sources" in env:
        import json

        raw_sources = json.loads(env["distill_sources"])
        source_base = None
    else:
        raw_sources = data.get("sources") or []
        source_base = base
    sources = []
    for src in raw_sources:
        path, agent = src["path"], src["agent_id"]
        if not isinstance(path, str) or not isinstance(agent, str):
            raise ValueError("sources")
        path = os.path.expanduser(path)
        if source_base is not None and not os.path.isabs(path):
            path = os.path.realpath(os.path.join(source_base, path))
        sources.append((path, agent))
    distiller = env.get("distill_distiller_agent_id") or data.get("distiller_agent_id") or DEFAULT_DISTILLER
    allowed = next((env[k] for k in ALLOWED_ENV if k in env), None)
    if allowed is None:
        allowed = data.get("allowed_agent_ids", "")
    if not isinstance(distiller, str) or not isinstance(allowed, str):
        return None
    return HookConfig(sd, ad, sources, distiller, allowed)
