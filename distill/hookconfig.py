"""Moved to :mod:`distill.settings.hook`; kept so existing imports work."""

from .settings.core import AGENT_ID_PATTERN
from .settings.hook import HookConfig, load_hook_config

__all__ = ["AGENT_ID_PATTERN", "HookConfig", "load_hook_config"]
