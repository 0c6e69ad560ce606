"""Who wrote a "user" turn, and the person's own words inside it.

A transcript's user role holds much that no person typed: chat-channel envelopes around a
real message, platform notices, prompts fired by a schedule, the runtime's own prompts, and
task specs a parent agent wrote into a sub-agent's session, and Claude Code's shell mode
(``!cmd``: the command and its output), hook output and feedback, background-task
notifications and agent-team messages. :func:`attribute` tells them apart and strips the
envelope, keeping the message. docs/formats.md shows every pattern.

It runs on user text only, after ``noise.strip_injected`` and before the noise test (so a
greeting inside an envelope is still a greeting), and every pattern is guarded by a plain
``startswith`` / ``in`` test, so ordinary text costs a few comparisons.
"""

from __future__ import annotations

import re

from . import LazyPattern
from .noise import is_noise, strip_stamp

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Literal

    # sender: a person in a chat who is not the owner (distill.trust): a group member, an open-DM stranger
    Author = Literal["person", "assistant", "tool", "platform", "schedule", "parent_agent", "sender"]

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
# every channel OpenClaw ships, as its envelope names it (docs/formats.md has one example each)
_CHANNELS = (r"Telegram|WhatsApp|Signal|Discord|Slack|iMessage|BlueBubbles|Google ?Chat|Mattermost|"
             r"Microsoft Teams|MSTeams|Teams|LINE|Line|Nextcloud(?: Talk)?|Matrix|Nostr|Tlon|Twitch|"
             r"Zalo(?: ?Personal|user)?|Feishu|Lark|WeChat|QQ|IRC|WebChat")
_CHAT_HEADER = LazyPattern(r"^\[(?:" + _CHANNELS + r")\b[^\]\n]{0,160}\]\s*")
_MESSAGE_ID = LazyPattern(r"[ \t]*\[message_id: [^\]\n]{1,80}\][ \t]*(?:\n(?:[^\s:：]{1,40}: )?)?")
_CRON = LazyPattern(r"^\[cron:[^\]\n]{1,120}\]\s*")
_IDE_CONTEXT = "# Context from my IDE setup:"
_IDE_REQUEST = LazyPattern(r"^## My request(?: for [A-Za-z ]{1,20})?:[ \t]*\n?", re.M)
_COMMAND = LazyPattern(r"<command-name>\s*/?([\w:-]{1,40})\s*</command-name>")
_COMMAND_ARGS = LazyPattern(r"<command-args>(.*?)</command-args>", re.S)
# Claude Code blocks in a user line that no person typed: the ``!`` shell mode's command and
# output (the tool's), and what the platform delivers as a user message: a UserPromptSubmit
# hook's output, a background task's notification, an agent-team teammate's message (it
# carries attributes). An unterminated block runs to the end.
_TOOL_TAGS = ("bash-input", "bash-stdout", "bash-stderr")
_PLATFORM_TAGS = ("user-prompt-submit-hook", "task-notification", "teammate-message")
_BLOCK_OPENERS = tuple(f"<{t}" for t in _TOOL_TAGS + _PLATFORM_TAGS)
_BLOCK = LazyPattern(
    r"<(" + "|".join(_TOOL_TAGS + _PLATFORM_TAGS) + r")(?:\s[^<>]{0,2000})?>(.*?)(?:</\1>|\Z)\s*", re.S
)
# the line Claude Code puts after a task notification
_NOTIFICATION_TRAILER = LazyPattern(r"^[ \t]*Read the output file to retrieve the (?:output|result)\b[^\n]*$", re.M)
_SUMMARY = LazyPattern(r"<summary>(.*?)</summary>", re.S)
# "Stop hook feedback:\n- [/home/u/check.sh]: …", "PreToolUse:Bash hook error: …" (a hook's
# message, sent as a user line when the hook blocks)
_HOOK_FEEDBACK = LazyPattern(
    r"^[A-Z][A-Za-z]{2,30}(?::[^\s:]{1,60})? hook (?:feedback|error|blocking error|additional context)\b"
)


def attribute(text: str) -> tuple[Author, str | None]:
    """``(author, text)`` of user-role text: the person's words with any envelope removed,
    or the notice / schedule prompt / task spec as it is. Text None: a runtime prompt or an
    empty command, nothing to keep."""
    if text.startswith(_RUNTIME_PROMPTS):
        return "platform", None
    if "<" in text and any(o in text for o in _BLOCK_OPENERS):
        found = _claude_blocks(text)
        if isinstance(found, tuple):
            return found
        text = found  # the person's words around the blocks
    if " hook " in text[:100] and _HOOK_FEEDBACK.match(text):
        return "platform", text
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


def _claude_blocks(text: str) -> tuple[Author, str | None] | str:
    """Claude Code's shell-mode and platform blocks (``_BLOCK``): the person's words around
    them (a str: attribution goes on with it), or, when nothing else is left, who wrote the
    blocks and what of them the batch keeps. The shell command is kept as ``$ cmd``; its
    output is dropped as any successful tool output is (text None), or kept as a failed
    tool's trace when it wrote to stderr or starts with an error line."""
    blocks: list[tuple[str, str]] = []
    parts, pos = [], 0
    for m in _BLOCK.finditer(text):
        parts.append(text[pos:m.start()])
        pos = m.end()
        blocks.append((m.group(1), m.group(2).strip()))
    parts.append(text[pos:])
    rest = "".join(parts)
    if any(tag == "task-notification" for tag, _ in blocks):
        rest = _NOTIFICATION_TRAILER.sub("", rest)
    if rest.strip():
        return rest.strip()
    if any(tag in _PLATFORM_TAGS for tag, _ in blocks):
        said = []
        for tag, body in blocks:
            summary = _SUMMARY.search(body) if tag == "task-notification" else None
            said.append(summary.group(1).strip() if summary else body)
        return "platform", "\n\n".join(s for s in said if s) or None
    command = "\n".join(body for tag, body in blocks if tag == "bash-input" and body)
    if command:
        return "tool", f"$ {command}"
    stdout = "\n".join(body for tag, body in blocks if tag == "bash-stdout")
    stderr = "\n".join(body for tag, body in blocks if tag == "bash-stderr")
    from ..sources.toolfail import error_line, first_error_line  # lazy: sources import this module

    if stderr.strip() or error_line(stdout) is not None:
        detail = first_error_line(stderr if stderr.strip() else stdout) or "(no output)"
        return "tool", f"[tool exec failed: bash: {detail}]"
    return "tool", None


# --- who sent a chat message ------------------------------------------------------------
# OpenClaw marks a chat message three ways (docs/formats.md shows each, per channel):
# 1. the "Conversation info (untrusted metadata)" block (every channel since 2026.2):
#    ``"sender_id"`` and, in a group, ``"is_group_chat": true``; the "Sender" block adds the
#    sender's ``id``, ``username`` and ``e164``;
# 2. a system line from the Feishu plugin: ``Feishu[acct] DM from ou_x: …``, ``Feishu[acct]
#    group oc_y from ou_x: …`` / ``message in group oc_y``, ``Feishu[acct] DM | Name (ou_x) …``;
# 3. the envelope header ``[<Channel> <from> <time>] …`` (formatInboundEnvelope): a group's
#    ``from`` is the group ("Ops id:-100123", a WhatsApp ``…@g.us``, a Discord "#channel",
#    Feishu's ``oc_chat:ou_sender``) and its body starts with the sender ("Ann (@ann): …").
_INFO_BLOCK = LazyPattern(r"(Conversation info|Sender) \(untrusted metadata\):[ \t]*\n```(?:json)?\n(.*?)\n```", re.S)
_SYSTEM_CHAT = LazyPattern(
    r"^System(?: \([^)\n]{0,40}\))?:[ \t]*\[[^\]\n]{4,60}\][ \t]*([A-Z][\w-]{1,20})\[[^\]\n]{0,60}\] "
    r"(?:(DM)\b(?: from ([^\s:]{1,80}))?(?:[^\n(]*\(([^)\s]{1,80})\))?|(?:message in )?(group)\b"
    r"(?:[^\n]*?\bfrom ([^\s:]{1,80}))?)"
)
_HEADER_PARTS = LazyPattern(r"^\[(" + _CHANNELS + r")\b[ \t]*([^\]\n]{0,160})\]\s*")
_HEADER_TAIL = LazyPattern(r"\s+(?:\+\d+[smhd]\b|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b|\d{4}-\d\d-\d\d).*$")
_GROUP_FROM = LazyPattern(r"@g\.us\b|\bid:-\d|(?:^|\s)#[\w-]|\bgroup\b|\bchannel\b|^oc_\w+:|\broom\b|!\w+:", re.I)
_ID_IN = LazyPattern(r"\bid:\s*(\S+)|\((\+?[@\w.:=+-]{2,80})\)|^(\+\d{6,15})\b")
_BODY_SENDER = LazyPattern(r"^([^:\n]{1,80}): ")


def speaker(text: str):
    """The sender of a chat message in user-role text, read from its envelope before the
    envelope is stripped (:class:`distill.trust.Speaker`), or None for text with no chat
    envelope (the direct session). Costs a few ``startswith`` / ``in`` tests on other text."""
    from ..trust import Speaker

    if "(untrusted metadata)" in text:
        found = _info_blocks(text)
        if found is not None:
            return Speaker(_system_channel(text), *found)
    if text.startswith("System"):
        m = _SYSTEM_CHAT.match(text)
        if m:
            sender = m[3] or m[4] or m[6]
            return Speaker(m[1].lower(), m[5] is not None, (sender,) if sender else ())
    if text.startswith("["):
        m = _HEADER_PARTS.match(text)
        if m:
            return _header_speaker(m[1], m[2], text[m.end():])
    return None


def _info_blocks(text: str):
    """``(group, ids)`` from the metadata blocks, or None when they name no sender."""
    import json

    group, ids = False, []
    for m in _INFO_BLOCK.finditer(text):
        try:
            data = json.loads(m[2])
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        if m[1] == "Conversation info":
            group = group or data.get("is_group_chat") is True
            keys: tuple[str, ...] = ("sender_id",)
        else:
            keys = ("id", "username", "e164")
        ids += [str(data[k]) for k in keys if isinstance(data.get(k), (str, int)) and str(data[k]).strip()]
    return (group, tuple(dict.fromkeys(ids))) if ids or group else None


def _system_channel(text: str) -> str | None:
    m = _SYSTEM_CHAT.match(text) if text.startswith("System") else None
    if m:
        return m[1].lower()
    h = _HEADER_PARTS.match(text) if text.startswith("[") else None
    return h[1].lower().replace(" ", "") if h else None


def _header_speaker(channel: str, rest: str, body: str):
    from ..trust import Speaker

    frm = _HEADER_TAIL.sub("", rest).strip()
    name = channel.lower().replace(" ", "")
    if frm.startswith("oc_") and ":" in frm:  # Feishu group: "oc_chat:ou_sender"
        return Speaker(name, True, (frm.split(":", 1)[1],))
    if _GROUP_FROM.search(frm):
        said = _BODY_SENDER.match(body)
        return Speaker(name, True, _ids(said[1]) if said else ())
    return Speaker(name, False, _ids(frm)) if frm else None


def _ids(label: str) -> tuple[str, ...]:
    """The ids in a sender label ("Alice id:123", "Ann (@ann)", "+15550001111", "ou_x")."""
    out = [g for m in _ID_IN.finditer(label) for g in m.groups() if g]
    return tuple(dict.fromkeys(out or [label.strip()]))
