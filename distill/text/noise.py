"""What a turn's text loses before distillation, and which turns are not worth distilling.

Three separate jobs, applied in this order by every source format:

- ``strip_injected`` removes text the *runtime* put into a turn, not the person or the
  model: recalled memories (``<relevant-memories>`` — distilling them again would feed the
  store its own output), OpenClaw's "(untrusted metadata)" headers with their JSON blocks,
  Claude Code's ``<system-reminder>`` blocks, Codex's ``<environment_context>`` /
  ``<user_instructions>`` blocks, the ``[Thu 2026-04-09 14:48 GMT+8]`` stamp,
  ``[[reply_to_current]]`` tags, and the markers around queued messages (the messages stay).
- ``is_noise`` says a turn carries nothing to learn: heartbeats, boot checks, slash
  commands (unless their arguments say something), ``NO_REPLY``, "new session started"
  prompts, compaction summaries, bare greetings and acknowledgements (English and Chinese).
- ``clip`` cuts over-long text to head + tail with a visible marker, never mid-word, so a
  secret is never split into a half that redaction no longer recognises.
"""

from __future__ import annotations

import re

from . import LazyPattern

# --- injected blocks -------------------------------------------------------------------

_INJECTED_TAGS = (
    "relevant-memories",
    "system-reminder",
    "environment_context",
    "user_instructions",
)
# "Conversation info (untrusted metadata):" + a ```json block; "Untrusted context (metadata,
# …):" or "Conversation context (untrusted, …):" + lines up to the next blank line. Matched
# only at the start of a line holding "(untrusted" / "(metadata" (found with str.find).
_UNTRUSTED_AT = LazyPattern(
    r"[^\n]{0,80}\((?:untrusted|metadata)[^)\n]{0,120}\):[ \t]*\n"
    r"(?:```[a-z]*\n[\s\S]{0,20000}?\n```[ \t]*(?:\n|\Z)|(?:[^\n]*\S[^\n]*(?:\n|\Z))*)\s*",
    re.IGNORECASE,
)
_STAMP = LazyPattern(r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?: [A-Za-z0-9:+-]+)?\]\s*")
# OpenClaw's batch of messages sent while the agent was busy: the markers go, the messages stay
_QUEUED = LazyPattern(r"(?m)^(?:\[Queued messages while agent was busy\]|---|Queued #\d+)[ \t]*$\n?")
_REPLY_TAG = LazyPattern(r"\[\[\s*reply_to[^\]\n]{0,80}\]\]\s*")


def strip_stamp(text: str) -> str:
    """``text`` without the ``[Thu 2026-04-09 14:48 GMT+8]`` stamp it opens with, if any
    (also used after an envelope is removed: the stamp then opens what is left)."""
    return _STAMP.sub("", text, count=1) if text.startswith("[") else text


def strip_injected(text: str) -> str:
    """Remove what the runtime injected into a turn; keep what the person or model wrote."""
    if "<" in text:
        for tag in _INJECTED_TAGS:
            if f"<{tag}>" in text:
                text = _strip_tag_blocks(text, f"<{tag}>", f"</{tag}>")
    if "(" in text and ("(untrusted" in text or "(metadata" in text):
        text = _strip_untrusted(text)
    if "[" in text:  # one scan rules out the three below for most turns
        if "[Queued messages while agent was busy]" in text:
            text = _QUEUED.sub("", text)
        text = strip_stamp(text)
        if "[[" in text:
            text = _REPLY_TAG.sub("", text)
    return text.strip()


def _strip_tag_blocks(text: str, open_tag: str, close_tag: str) -> str:
    """Drop every ``<tag>…</tag>`` block; an unterminated one runs to the end (the rest was
    injected too). Linear in the text, however many tags it holds."""
    out, pos = [], 0
    i = text.find(open_tag)
    while i >= 0:
        out.append(text[pos:i])
        j = text.find(close_tag, i + len(open_tag))
        if j < 0:
            pos = len(text)
            break
        pos = j + len(close_tag)
        while pos < len(text) and text[pos].isspace():
            pos += 1
        i = text.find(open_tag, pos)
    out.append(text[pos:])
    return "".join(out)


def _strip_untrusted(text: str) -> str:
    out, pos = [], 0
    for i in _positions(text, ("(untrusted", "(metadata")):
        if i < pos:
            continue
        start = text.rfind("\n", max(0, i - 81), i) + 1  # bounded: a header line starts ≤ 80 back
        if (start == 0 and i > 80) or start < pos:
            continue
        m = _UNTRUSTED_AT.match(text, start)
        if m:
            out.append(text[pos:start])
            pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _positions(text: str, needles: tuple[str, ...]) -> list[int]:
    """Every position of any of ``needles``, in order (each needle's scan runs once)."""
    found = []
    for needle in needles:
        i = text.find(needle)
        while i >= 0:
            found.append(i)
            i = text.find(needle, i + 1)
    return sorted(found)


# --- noise -----------------------------------------------------------------------------

_NOISE_PREFIXES = (
    "no_reply",
    "heartbeat_ok",
    "announce_skip",
    "reply_skip",
    "✅ new session started",
    "a new session was started via /new or /reset",
    "this session is being continued from a previous conversation",
    "caveat: the messages below were generated by the user while running local commands",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "[request interrupted by user",
    "<turn_aborted>",
)
_NOISE_CONTAINS = (
    "read heartbeat.md",
    "you are running a boot check",
    "boot.md — gateway startup health check",
    "claude_code_done",
)
# A slash command: one "/word" (not a path such as /etc/hosts) and optional short arguments.
_SLASH = LazyPattern(r"^/[A-Za-z][\w:-]{0,40}(?:\s[^\n]{0,160})?$")
_PATH_ROOTS = frozenset(
    "usr etc var tmp home opt bin sbin dev proc sys mnt root srv lib lib64 boot run media "
    "Users Applications Library System Volumes private nix data workspace app".split()
)

_ACK_EN = (
    "hi there", "hello there", "hey there", "good morning", "good afternoon", "good evening",
    "good night", "thank you very much", "thank you so much", "thank you", "thanks a lot",
    "many thanks", "thanks", "thx", "ty", "got it", "sounds good", "looks good", "all good",
    "makes sense", "no problem", "no worries", "you're welcome", "youre welcome", "of course",
    "go ahead", "go on", "keep going", "carry on", "please continue", "continue", "proceed",
    "understood", "noted", "roger", "alright", "all right", "okay", "ok", "k", "kk", "sure",
    "yes", "yeah", "yep", "yup", "no", "nope", "cool", "great", "nice", "perfect", "awesome",
    "good", "fine", "done", "lol", "hi", "hello", "hey", "yo", "bye", "goodbye", "cheers",
    "np", "great job", "well done", "good job", "nice work", "will do", "on it", "i see",
)
_ACK_ZH = (
    "你好", "您好", "嗨", "哈喽", "哈囉", "早上好", "早安", "午安", "晚上好", "晚安", "谢谢你",
    "谢谢您", "非常感谢", "谢谢", "謝謝", "多谢", "感谢", "好的", "好滴", "好嘞", "好吧", "好",
    "行", "可以", "没问题", "沒問題", "嗯嗯", "嗯", "收到", "明白了", "明白", "了解", "知道了",
    "懂了", "对", "对的", "是的", "是", "不用了", "不用", "继续", "繼續", "辛苦了", "拜拜",
    "再见", "再見", "棒", "太棒了", "不错", "哈哈", "哈哈哈", "ok了", "好的呢", "麻烦了",
)
_ACK = LazyPattern(
    r"^(?:(?:"
    + "|".join(re.escape(p) for p in sorted(_ACK_EN + _ACK_ZH, key=len, reverse=True))
    + r")(?![a-z])[\s\W_]*)+$"
)
_ACK_MAX_CHARS = 60


def is_noise(role: str, text: str) -> bool:
    """True when a turn has nothing a memory could be drawn from (role kept for callers
    that want to treat roles differently; every rule here applies to both)."""
    stripped = text.strip()
    if not stripped:
        return True
    low = stripped[:400].lower()
    if low.startswith(_NOISE_PREFIXES):
        return True
    for marker in _NOISE_CONTAINS:  # a plain loop: this runs for every turn
        if marker in low:
            return True
    if stripped.startswith("/") and _is_slash_command(stripped):
        return True
    if len(stripped) <= _ACK_MAX_CHARS and _is_ack(low):
        return True
    return False


def _is_slash_command(text: str) -> bool:
    if "\n" in text or not _SLASH.match(text):
        return False
    head, _, args = text[1:].partition(" ")
    if head in _PATH_ROOTS:
        return False
    return head.lower() in _CONTROL_COMMANDS or not command_args_say_something(args)


# commands whose arguments steer the runtime, never a statement to remember
_CONTROL_COMMANDS = frozenset(
    "compact clear reset new model think verbose status help config init login logout cost resume "
    "review subagents approvals permissions mcp agents".split()
)


_CJK_RUN = LazyPattern(r"[\u3400-\u4dbf\u4e00-\u9fff]{4}")


def command_args_say_something(args: str) -> bool:
    """A slash command's arguments that carry an instruction ("/remember always run ruff
    first", "/note 以后每天中午发给我") rather than a setting ("/model opus", "/think high")."""
    return len(args.split()) >= 3 or bool(_CJK_RUN.search(args))


def _is_ack(low: str) -> bool:
    return bool(_ACK.match(low)) or _only_symbols(low)


def _only_symbols(low: str) -> bool:
    """Emoji- or punctuation-only turns ("👍", "🙏🙏", "...", "?")."""
    return not any(c.isalnum() for c in low)


# --- clipping --------------------------------------------------------------------------

CLIP_MARK = "\n…[clipped {n} chars]…\n"


def clip(text: str, max_chars: int) -> tuple[str, bool]:
    """Keep about 2/3 head and 1/3 tail of an over-long text, cut at whitespace."""
    if len(text) <= max_chars:
        return text, False
    budget = max(max_chars - len(CLIP_MARK) - 8, 2)
    head_len, tail_len = budget * 2 // 3, budget - budget * 2 // 3
    head = _cut_head(text[:head_len], text[head_len:head_len + 1])
    tail = _cut_tail(text[len(text) - tail_len:], text[len(text) - tail_len - 1:len(text) - tail_len])
    dropped = len(text) - len(head) - len(tail)
    return head + CLIP_MARK.format(n=dropped) + tail, True


def _cut_head(head: str, next_char: str) -> str:
    """Drop a word that the cut would split (a token cut in half is unredactable)."""
    if not next_char or next_char.isspace() or not head or head[-1].isspace():
        return head.rstrip()
    i = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:i].rstrip() if i >= 0 else ""


def _cut_tail(tail: str, prev_char: str) -> str:
    if not prev_char or prev_char.isspace() or not tail or tail[0].isspace():
        return tail.lstrip()
    idx = [i for i in (tail.find(" "), tail.find("\n"), tail.find("\t")) if i >= 0]
    return tail[min(idx):].lstrip() if idx else ""
