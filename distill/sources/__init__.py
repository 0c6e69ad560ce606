"""Transcript formats, one module each, and how a file's format is found.

Usage (the tail does this per file per run)::

    fmt = get_format(root.format) if root.format != "auto" else detect_format(first_line, path)
    parser = fmt.new_parser(agent_id=…, file=path, session_id=stem, counters=c, limits=TurnLimits.from_settings(s))
    for line, start, end in complete_lines:
        if fmt.could_yield(line):
            turns += parser.feed(line, start, end)
    turns += parser.finish()
"""

from __future__ import annotations

import re

from ..errors import ConfigError
from .base import ParseCounters, SourceFormat, SourceParser, Turn, TurnLimits, UnknownFormat
from .claude_code import ClaudeCodeFormat
from .codex import CodexFormat
from .openclaw import OpenClawFormat

__all__ = [
    "FORMATS",
    "ParseCounters",
    "SourceFormat",
    "SourceParser",
    "Turn",
    "TurnLimits",
    "UnknownFormat",
    "detect_format",
    "get_format",
    "is_archive_name",
]

FORMATS: dict[str, SourceFormat] = {f.name: f for f in (OpenClawFormat(), ClaudeCodeFormat(), CodexFormat())}

# Detection order: the most specific first line first.
_DETECT_ORDER = ("openclaw", "codex", "claude-code")

_ARCHIVE = re.compile(r"\.jsonl\.(?:reset|deleted)\.|\.lock$")


def get_format(name: str) -> SourceFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(
            f"unknown transcript format {name!r}; known formats: {', '.join(FORMATS)} "
            f"(or \"auto\" to detect it from each file's first line)"
        ) from None


def detect_format(first_line: bytes, path: str) -> SourceFormat:
    """The format whose first line this is, or ``UnknownFormat`` naming the file and showing
    how its first line starts."""
    for name in _DETECT_ORDER:
        fmt = FORMATS[name]
        if fmt.detect(first_line):
            return fmt
    shown = first_line[:120].decode("utf-8", errors="replace").rstrip()
    more = "…" if len(first_line) > 120 else ""
    raise UnknownFormat(
        f"{path}: not a known transcript format (first line starts with {shown!r}{more}); "
        f"known formats: {', '.join(FORMATS)}. If it is one of them, set format = \"<name>\" "
        f"on its source root in config.toml; otherwise move the file out of the source root."
    )


def is_archive_name(name: str) -> bool:
    """Archived or lock files next to live transcripts (``x.jsonl.reset.<ts>``,
    ``x.jsonl.deleted.<ts>``, ``x.jsonl.lock``): discovery skips them."""
    return bool(_ARCHIVE.search(name))
