"""The two interfaces a transcript format implements (for the type checker and readers of
the code; nothing checks them at run time). Apart from :mod:`.base` because ``typing``'s
import is a measurable part of a run's start-up, and only the type checker needs these."""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from ..model import Turn, TurnLimits


class SourceParser(Protocol):
    """One per file per run; keeps the little state a format needs across lines."""

    session_id: str
    counters: Counter  # why lines or turns were skipped or changed (a ParseCounters)

    def feed(self, line: bytes, start: int, end: int) -> list[Turn]: ...

    def finish(self) -> list[Turn]: ...

    def recall(self, lines: list[bytes]) -> None:
        """Lines an earlier run read just before where this one starts (the format's
        ``context_bytes`` of them): taken in as ``feed`` would, giving no turns."""


class SourceFormat(Protocol):
    name: str
    context_bytes: int  # how much of the read part a new parser must see again (0: none)

    def detect(self, first_line: bytes) -> bool: ...

    def could_yield(self, line: bytes) -> bool: ...

    def could_yield_at(self, buf: bytes, s: int, e: int) -> bool: ...

    def new_parser(
        self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits
    ) -> SourceParser: ...
