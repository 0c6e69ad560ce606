"""Who wrote a "user" turn, and the person's own words inside it.

A transcript's user role holds much that no person typed: chat-channel envelopes around a
real message, platform notices, prompts fired by a schedule, the runtime's own prompts, and
task specs a parent agent wrote into a sub-agent's session. :func:`attribute` tells them
apart and strips the envelope, keeping the message. docs/formats.md shows every pattern.

It runs on user text only, after ``noise.strip_injected`` and before the noise test (so a
greeting inside an envelope is still a greeting), and every pattern is guarded by a plain
``startswith`` / ``in`` test, so ordinary text costs a few comparisons.
"""

from __future__ import annotations

import re

from . import LazyPattern
from .noise import is_noise, strip_stamp

TYPE_CHECKING = False  # not typing's: a run that reads a file need not import typing
if TYPE_CHECKING:
    from typing import Literal

    Author = Literal["person", "assistant", "tool", "platform", "schedule", "parent_agent"]

# Runtime prompts with nothing a person said: dropped (counted as noise by the caller).
_RUNTIME_PROMPTS = (
    "Pre-compaction memory flush",  # OpenClaw, before it compacts a session
    "[SUGGESTION MODE",  # Claude Code's "what would the user type next" side call
)
_SUBAGENT = ("[Subagent Context]", "[Subagent Task]")  # OpenClaw sessions_spawn
# "System: [2026-03-01 15:40:52 GMT+8] …" (also "System (untrusted): […] …"): one line each
_SYSTEM_LINE = LazyPattern(r"^System(?: \([^)\n]{0,40}\))?:[ \t]*\[[^\]\n]{4,60}\][ \t]*([^\n]*)(?:\n|\Z)", re.M)
# the body of a system line that wraps a person's message: "Feishu[acct] DM from ou_x: msg"
_CHANNEL_DM = LazyPattern(r"^[A-Z][\w-]{1,20}\[[^\]\n]{0,60}\] (?:DM|group)\b[^\n]*?\bfrom [^\s:]{1,80}:[ \t]*(.*)$")
# "[Telegram Alice id:123 +2m 2026-03-02 09:14 UTC] msg" (WhatsApp, Signal, Discord, Slack, …)
_CHAT_HEADER = LazyPattern(
    r"^\[(?:Telegram|WhatsApp|Signal|Discord|Slack|iMessage|Feishu|Lark|Line|Matrix|Teams|WeChat|QQ)\b"
    r"[^\]\n]{0,160}\]\s*"
)
_MESSAGE_ID = LazyPattern(r"[ \t]*\[message_id: [^\]\n]{1,80}\][ \t]*(?:\n(?:[^\s:：]{1,40}: )?)?")
_CRON = LazyPattern(r"^\[cron:[^\]\n]{1,120}\]\s*")
_IDE_CONTEXT = "# Context from my IDE setup:"
_IDE_REQUEST = LazyPattern(r"^## My request(?: for [A-Za-z ]{1,20})?:[ \t]*\n?", re.M)
_COMMAND = LazyPattern(r"<command-name>\s*/?([\w:-]{1,40})\s*</command-name>")
_COMMAND_ARGS = LazyPattern(r"<command-args>(.*?)</command-args>", re.S)


def attribute(text: str) -> tuple[Author, str | None]:
    """``(author, text)`` of user-role text: the person's words with any envelope removed,
    or the notice / schedule prompt / task spec as it is. Text None: a runtime prompt or an
    empty command, nothing to keep."""
    if text.startswith(_RUNTIME_PROMPTS):
        return "platform", None
    if text.startswith("[") or "[message_id:" in text:
        if text.startswith(_SUBAGENT) or "\n[Subagent Task]" in text[:2000]:
            return "parent_agent", text
        if text.startswith("[System Message]"):
            return "platform", text
        if text.startswith("[cron:"):
            return "schedule", _CRON.sub("", text, count=1)
        text = _strip_chat_header(text)
    if text.startswith("System") and _SYSTEM_LINE.match(text):
        return _system_lines(text)
    if text.startswith(_IDE_CONTEXT):
        m = _IDE_REQUEST.search(text)
        return ("person", text[m.end():].strip()) if m else ("platform", None)
    if "<command-name>" in text:
        return "person", _command(text)
    return "person", text


def _strip_chat_header(text: str) -> str:
    """The message without its chat header or ``[message_id: …]`` marker, and without the
    ``[Mon 2026-12-01 10:02 GMT+8]`` stamp that opens it once the envelope is gone (a newer
    Feishu message: header line, metadata blocks, then the stamped message)."""
    if "[message_id:" in text:
        text = _MESSAGE_ID.sub("\n", text)
    return strip_stamp(_CHAT_HEADER.sub("", text.strip(), count=1).strip()).strip()


def _system_lines(text: str) -> tuple[Author, str]:
    """Leading ``System: [time] …`` lines: a channel line that carries a message gives it back;
    a bare channel header is dropped; any other is a platform notice."""
    said, notices, pos = [], [], 0
    for m in _SYSTEM_LINE.finditer(text):
        if m.start() != pos:
            break
        pos = m.end()
        body = m.group(1)
        dm = _CHANNEL_DM.match(body)
        if dm:
            said.append(dm.group(1))
        elif not re.match(r"[A-Z][\w-]{1,20}\[[^\]\n]{0,60}\] (?:DM|group)\b", body):
            notices.append(body)
    rest = _strip_chat_header(text[pos:].strip()) if pos < len(text) else ""
    person = "\n".join(s for s in [*said, rest] if s.strip()).strip()
    if person:
        return "person", person
    return "platform", "\n".join(notices)


def _command(text: str) -> str | None:
    """A slash command as the person typed it (``/name args``), kept when its arguments say
    something; None for a bare command or a short setting."""
    name = _COMMAND.search(text)
    args = _COMMAND_ARGS.search(text)
    words = args.group(1).strip() if args else ""
    said = f"/{name.group(1)} {words}".strip() if name else ""
    return None if not said or is_noise("user", said) else said
