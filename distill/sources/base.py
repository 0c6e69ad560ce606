"""What every transcript format produces (``Turn``) and the one finishing step they share.

A format module turns one JSONL line into zero or more turns. The caller (the tail) asks
``SourceFormat.could_yield(line)`` (:mod:`.protocols`) first: a cheap bytes-only test that is allowed to say
"yes" wrongly (the line is then decoded for nothing) but never "no" wrongly (a turn would
be lost). Lines it rejects are never decoded, which is what makes reading fast: most of a
transcript's bytes are successful tool output and base64 images.
``could_yield_at(buf, s, e)`` is the same test on ``buf[s:e]``, a line still inside the
block it was read in, so that the lines it rejects are never even copied.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import orjson

from ..model import TurnLimits
from ..text import LazyPattern
from ..text.envelopes import attribute, speaker
from ..trust import NO_CONFIG
from ..text.noise import clip, is_noise, strip_injected
from ..text.redact import redact_counting

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from ..model import Role
    from ..text.envelopes import Author
    from .protocols import SourceParser

# Who actually wrote a turn (``Author``, defined with the rules that find it in envelopes.py).
# ``role`` is the transcript's own label (kept for the batch file's old keys); ``author`` is
# what attribution rests on: only "person" text may become "the user said". platform =
# chat-channel envelopes and system notices, schedule = cron-fired prompts, parent_agent = a
# task spec a parent agent wrote into a sub-agent's session, sender = a chat member who is not
# the owner (distill.trust; their turn opens with who they are).
DEFAULT_AUTHOR: dict[str, Author] = {"user": "person", "assistant": "assistant", "tool": "tool"}
# what a user turn that gives no text is counted as, by who wrote it
_DROPPED_AS: dict[str, str] = {"person": "noise", "tool": "tool_ok"}


class ParseCounters(Counter):
    """Why lines or turns were skipped or changed, by reason (``invalid_json``, ``noise``,
    ``redacted:<kind>``, ``clipped``, ``tool_failure``, ``skipped_type:<t>``, …)."""


def finish_said(
    role: Role, text: str, limits: TurnLimits, counters: Counter, *, author: Author | None = None
) -> tuple[str, Author] | None:
    """The shared cleaning step for what was said: strip injected blocks → find who wrote it
    (envelopes stripped) → drop noise → clip → redact. ``author`` overrides who wrote user
    text that would otherwise be the person's (a sub-agent transcript's user turns are its
    parent's; a hook's message in it is still the platform's).

    Returns ``(text, author)``, or None when nothing worth keeping is left (counted).
    """
    sent_by = speaker(text) if role == "user" and author is None else None  # before the envelope goes
    text = strip_injected(text)
    if not text:
        counters["empty"] += 1
        return None
    who: Author = DEFAULT_AUTHOR[role]
    if role == "user":
        who, said = attribute(text)
        if said is None:  # a bare slash command (noise), a runtime prompt, a shell command's output
            counters[_DROPPED_AS.get(who, "runtime_prompt")] += 1
            return None
        text, who = said, (author or who) if who == "person" else who
        if who == "person" and sent_by is not None and not (limits.owners or NO_CONFIG).owns(sent_by):
            who = "sender"  # a group member or an open-DM stranger: never "the user said"
        if who != "person":
            counters[f"author:{who}"] += 1
    if not text.strip():
        counters["empty"] += 1
        return None
    if is_noise(role, text):
        counters["noise"] += 1
        return None
    if who == "sender" and sent_by is not None:
        text = f"{sent_by.label()} {text}"
    # a shell command or its failure (Claude Code's ``!`` mode) is clipped as a tool's trace
    return finish_text(role, text, limits, counters, trace=who == "tool"), who


def finish_text(
    role: Role, text: str, limits: TurnLimits, counters: Counter, *, trace: bool = True
) -> str:
    """Clip and redact: the last step of every turn's text. Tool traces come here directly
    (built by the caller already short; no noise test). Text longer than the limit is
    redacted before the clip too: a clip can cut a name from its value ("the admin password
    is …[clipped]… X", a compose file's ``POSTGRES_PASSWORD:`` at the cut), and the clip never
    cuts inside a marker (it cuts at whitespace). Redacting again after it changes nothing
    but what the cut joined."""
    limit = limits.max_tool_trace_chars if trace else limits.max_turn_chars
    if len(text) > limit:
        text = redact_counting(text, counters)
    text, clipped = clip(text, limit)
    if clipped:
        counters["clipped"] += 1
    return redact_counting(text, counters)


def feed_again(parser: SourceParser, lines: list[bytes]) -> None:
    """``parser.feed`` the lines an earlier run read (a parser's ``recall``): their turns were
    given and counted then, so what they give now is dropped and their counters kept apart."""
    counters, parser.counters = parser.counters, Counter()
    try:
        for line in lines:
            parser.feed(line, 0, 0)
    finally:
        parser.counters = counters


def decode_line(line: bytes, counters: Counter) -> dict | None:
    """Decode one JSONL line into an object, or count why not. Never raises.

    Repairs what can be repaired without guessing: NUL padding (left by a crash mid-write)
    is removed, invalid UTF-8 is replaced by U+FFFD; both are still counted.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = _repair(line, counters)
        if obj is None:
            return None
    if not isinstance(obj, dict):
        counters["not_object"] += 1
        return None
    return obj


def _repair(line: bytes, counters: Counter) -> object | None:
    if not line.strip():
        counters["blank"] += 1
        return None
    fixed = line
    if b"\x00" in fixed:
        counters["nul_bytes"] += 1
        fixed = fixed.replace(b"\x00", b"")
    try:
        fixed.decode("utf-8")
    except UnicodeDecodeError:
        counters["invalid_utf8"] += 1
        fixed = fixed.decode("utf-8", errors="replace").encode("utf-8")
    if b"\\u" in fixed:
        unpaired = _LONE_SURROGATE.sub(lambda m: m[1] or b"\\ufffd", fixed)
        if unpaired != fixed:
            counters["invalid_surrogate"] += 1
            fixed = unpaired
    if fixed is line:
        counters["invalid_json"] += 1
        return None
    try:
        return orjson.loads(fixed)
    except orjson.JSONDecodeError:
        counters["invalid_json"] += 1
        return None


# a \\u escape of half a surrogate pair (a cut emoji): orjson refuses the whole line
_LONE_SURROGATE = LazyPattern(rb"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def iso_to_ms(value: object) -> int:
    """Timestamp (ISO 8601 string, or Unix seconds/milliseconds number) → Unix ms; 0 if unknown.
    Not range-checked here: the batch writer checks (and counts) what it cannot use."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value if value > 10_000_000_000 else value * 1000)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value).timestamp() * 1000)
        except (ValueError, OverflowError, OSError):
            return 0
    return 0


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


_SESSION_ID = LazyPattern(r"[A-Za-z0-9._:-]{1,128}")


def id_or_none(value: object) -> str | None:
    """An entry id read from the transcript, if it looks like one (provenance only)."""
    return value if isinstance(value, str) and _SESSION_ID.fullmatch(value) else None


def session_id_or_none(value: object, counters: Counter) -> str | None:
    """A session id read from the transcript, if it looks like one. It is only provenance,
    but transcript text must not be able to put anything else there (a path, a newline)."""
    if not isinstance(value, str) or not value:
        return None
    if _SESSION_ID.fullmatch(value):
        return value
    counters["bad_session_id"] += 1
    return None


# --- big binary blobs ------------------------------------------------------------------

_BLOB_MIN = 4096


def drop_blobs(line: bytes, keys: tuple[bytes, ...]) -> bytes:
    """Empty the long base64 strings of a line before decoding it (user messages with an
    attached image can be megabytes, of which a few dozen bytes are text).

    ``keys`` are the format's image keys (e.g. ``b'"data":"'``). Only a value with no
    backslash is cut, so the JSON stays valid; anything unusual is left.
    """
    if len(line) < _BLOB_MIN:
        return line
    parts, pos = [], 0
    for key in keys:
        i = line.find(key)
        while i >= 0:
            v = i + len(key)
            j = line.find(b'"', v)
            if j < 0:
                break
            if j - v >= _BLOB_MIN and line.find(b"\\", v, j) < 0:
                parts.append((v, j))
            i = line.find(key, j + 1)
    if not parts:
        return line
    out = []
    for v, j in sorted(parts):
        if v < pos:
            continue
        out.append(line[pos:v])
        pos = j
    out.append(line[pos:])
    return b"".join(out)
