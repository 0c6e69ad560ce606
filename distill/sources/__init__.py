"""Transcript formats, one module each, and how a file's format is found.

Usage (the tail does this per file per run)::

    fmt = get_format(root.format) if root.format != "auto" else detect_format(first_line, path)
    parser = fmt.new_parser(agent_id=…, file=path, session_id=stem, counters=c, limits=TurnLimits.from_settings(s))
    for line, start, end in complete_lines:
        if fmt.could_yield(line):
            turns += parser.feed(line, start, end)
    turns += parser.finish()

Importing this package is cheap (discovery only needs ``is_archive_name``, and a no-op run
must stay fast): the format modules, with their compiled patterns and pydantic models, are
loaded on first use.
"""

from __future__ import annotations

import importlib

from ..text import LazyPattern

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Any

    from .protocols import SourceFormat

__all__ = [
    "FORMATS",
    "ParseCounters",
    "SourceFormat",
    "SourceParser",
    "Turn",
    "TurnLimits",
    "detect_format",
    "get_format",
    "is_archive_name",
    "is_archived_session",
]

FORMAT_NAMES = ("openclaw", "claude-code", "codex")
# Detection order: the most specific first line first.
_DETECT_ORDER = ("openclaw", "codex", "claude-code")

_ARCHIVED_SESSION_PATTERN = r"\.jsonl\.(?:reset|deleted)\."
_ARCHIVED_SESSION = LazyPattern(_ARCHIVED_SESSION_PATTERN)
_ARCHIVE = LazyPattern(_ARCHIVED_SESSION_PATTERN + r"|\.lock$")
_formats: dict[str, SourceFormat] = {}


# format name -> (module, class): a run over OpenClaw files imports only the OpenClaw module
_CLASSES = {"openclaw": ("openclaw", "OpenClawFormat"), "claude-code": ("claude_code", "ClaudeCodeFormat"),
            "codex": ("codex", "CodexFormat")}


def _format(name: str) -> SourceFormat:
    """The format called ``name``, its module imported on first use (KeyError if unknown)."""
    fmt = _formats.get(name)
    if fmt is None:
        module, cls = _CLASSES[name]
        fmt = _formats[name] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
    return fmt


def __getattr__(name: str) -> Any:
    if name == "FORMATS":
        return {n: _format(n) for n in FORMAT_NAMES}
    if name in ("SourceFormat", "SourceParser"):
        from . import protocols

        return getattr(protocols, name)
    if name == "ParseCounters":
        from .base import ParseCounters

        return ParseCounters
    if name in ("Turn", "TurnLimits"):
        from .. import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_format(name: str) -> SourceFormat:
    try:
        return _format(name)
    except KeyError:
        from ..errors import ConfigError

        raise ConfigError(
            f"unknown transcript format {name!r}; known formats: {', '.join(FORMAT_NAMES)} "
            f"(or \"auto\" to detect it from each file's first line)"
        ) from None


def detect_format(first_line: bytes, path: str) -> SourceFormat:
    """The format whose first line this is, or ``UnknownFormat`` naming the file and showing
    how its first line starts."""
    for name in _DETECT_ORDER:
        if _format(name).detect(first_line):
            return _format(name)
    from ..errors import UnknownFormat

    shown = first_line[:120].decode("utf-8", errors="replace").rstrip()
    more = "…" if len(first_line) > 120 else ""
    raise UnknownFormat(
        f"{path}: not a known transcript format (first line starts with {shown!r}{more}); "
        f"known formats: {', '.join(FORMAT_NAMES)}. If it is one of them, set format = \"<name>\" "
        f"on its source root in config.toml; otherwise move the file out of the source root."
    )


def is_archive_name(name: str) -> bool:
    """Archived or lock files next to live transcripts (``x.jsonl.reset.<ts>``,
    ``x.jsonl.deleted.<ts>``, ``x.jsonl.lock``): discovery skips them."""
    return bool(_ARCHIVE.search(name))


def is_archived_session(name: str) -> bool:
    """A session OpenClaw reset or deleted (``x.jsonl.reset.<ts>``, ``x.jsonl.deleted.<ts>``):
    history that backfill reads (a lock file is not)."""
    return bool(_ARCHIVED_SESSION.search(name))
