"""OpenClaw session transcripts: ``~/.openclaw/agents/<agentId>/sessions/<sessionId>.jsonl``.

First line ``{"type":"session","id":<sessionId>,…}``; then entries ``{"type":"message",
"id","parentId","timestamp","message":{"role":"user"|"assistant"|"toolResult"|…}}`` and
other entry types (``custom``, ``compaction``, ``model_change``, …) that carry no turn.
OpenClaw writes compact JSON (``JSON.stringify``), which the bytes pre-test relies on: a
line that does not start exactly like that is always decoded.
"""

from __future__ import annotations

import re
from collections import Counter

from ..text import LazyPattern
from ..model import Turn
from .base import (
    TurnLimits, decode_line, drop_blobs, finish_said, finish_text, id_or_none, iso_to_ms, session_id_or_none, str_or_none,
)
from .toolfail import (
    FIRST_LINE, PLAIN_FIRST_LINE, WINDOW_BYTES, bytes_window_may_fail, error_line, first_line_may_fail,
    plain_first_line_may_fail, plain_line_may_fail, trace,
)

_HEAD = b'{"type":"'
_MESSAGE = b'{"type":"message",'
_ROLE_AT = b'"message":{"role":"'
_TEXT_BLOCK = b'{"type":"text","text":"'
_LIST_TEXT = b"[" + _TEXT_BLOCK
# the end of a successful tool result as OpenClaw writes it: content, details, isError, timestamp
_PLAIN_SUCCESS_TAIL = LazyPattern(
    rb'\],(?:"details":\{"exitCode":0(?:,"durationMs":\d+)?\},)?"isError":false(?:,"timestamp":\d+)?\}\}\r?\n?\Z'
)
_LIST_TEXT_FIRST_LINE = LazyPattern(re.escape(_LIST_TEXT) + PLAIN_FIRST_LINE.pattern)
# a tool result line exactly as OpenClaw writes it, up to the first line of its output
_USUAL_TOOL_RESULT = LazyPattern(
    rb'\{"type":"message","id":"[^"\\]{0,128}","parentId":(?:"[^"\\]{0,128}"|null),"timestamp":"[^"\\]{0,64}",'
    rb'("message":\{"role":")toolResult","toolCallId":"[^"\\]{0,256}","toolName":"[^"\\]{0,256}",("content":)'
    + re.escape(_LIST_TEXT) + FIRST_LINE.pattern
)
_BLOB_KEYS = (b'"data":"',)  # image data: emptied before decoding


class OpenClawFormat:
    name = "openclaw"
    context_bytes = 0

    def detect(self, first_line: bytes) -> bool:
        if first_line.startswith(b'{"type":"session"'):
            return True
        import orjson  # here: a file of a fixed format is never detected, and orjson is slow to import

        try:
            obj = orjson.loads(first_line)
        except orjson.JSONDecodeError:
            return False
        return isinstance(obj, dict) and obj.get("type") == "session" and "payload" not in obj

    def could_yield(self, line: bytes) -> bool:
        return self.could_yield_at(line, 0, len(line))

    def could_yield_at(self, buf: bytes, s: int, e: int) -> bool:
        """``could_yield(buf[s:e])`` without copying the line out of the block it was read in."""
        if not buf.startswith(_MESSAGE, s, e):
            if not buf.startswith(_HEAD, s, e):
                return True  # unusual writer or a damaged line: let the parser decide and count
            # session header: yes (session id); custom, compaction, model_change, …: never a turn
            return buf.startswith(b'{"type":"session"', s, e)
        r = buf.find(_ROLE_AT, s, min(s + 600, e))
        if r < 0:
            return True
        rs = r + len(_ROLE_AT)
        if buf.startswith(b'toolResult"', rs, e):
            # the role found here is the one the regex finds (no quote before it), so this
            # asks the same lines the regex could have matched
            m = _USUAL_TOOL_RESULT.match(buf, s, e)
            if m is not None:  # most tool results: decided in a few steps
                verdict = _usual_tool_result_may_fail(buf, s, e, m)
                if verdict is not None:
                    return verdict
            return _tool_result_may_fail(buf, s, e)
        if buf.startswith(b'assistant","content":[{', rs, e):  # blocks: only text blocks make a turn
            return buf.find(b'"type":"text"', s, e) >= 0
        # user, bashExecution, assistant with string content or keys in another order: decode;
        # other roles (custom, …) never make a turn
        return buf.startswith((b'user"', b'assistant"', b'bashExecution"'), rs, e)

    def new_parser(
        self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits
    ) -> OpenClawParser:
        return OpenClawParser(agent_id=agent_id, file=file, session_id=session_id, counters=counters, limits=limits)


def _usual_tool_result_may_fail(buf: bytes, s: int, e: int, m: re.Match) -> bool | None:
    """The answer of the full test below for a line ``_USUAL_TOOL_RESULT`` matched, or None
    when it needs the full test. The match finds the same role and ``content`` the full test
    finds (the values before them hold no quote, so no key can hide in them); what is left is
    the full test's limits, its usual ending, and the first line of the output."""
    c = m.start(2) - 1  # the comma before "content"
    if m.end(1) > s + 600 or c + 11 > s + 1024:
        return None
    k = buf.rfind(b"],", max(c, e - 160), e)
    if k <= c or _PLAIN_SUCCESS_TAIL.match(buf, k, e) is None or buf.find(b'"details":', max(c, e - 1024), k) >= 0:
        return None
    t = m.start(3)
    return first_line_may_fail(m[3], buf, t, min(t + WINDOW_BYTES, e))


def _tool_result_may_fail(buf: bytes, s: int, e: int) -> bool:
    """Bounded work whatever the line's (``buf[s:e]``) size: its head (where ``content``
    starts), its last KiB (``details`` and ``isError``, which OpenClaw writes after the
    content, in that order) and a window at the start of the output text. Anything not in
    that order is decoded; a writer that put ``details`` before some other large key would
    defeat the tail test."""
    c = buf.find(b',"content":', s, min(s + 1024, e))
    if c < 0 or buf.find(b'"details":', s, c) >= 0:
        return True
    tail_at = max(c, e - 1024)
    k = buf.rfind(b"],", max(c, e - 160), e)
    if k > c and _PLAIN_SUCCESS_TAIL.match(buf, k, e) and buf.find(b'"details":', tail_at, k) < 0:
        return _first_text_may_fail(buf, c + 11, e)  # the usual ending, checked in one step
    i = buf.rfind(b',"isError":', tail_at, e)
    if i <= tail_at or not buf.startswith(b"false", i + 11, e) or buf.find(b'"details":', i, e) >= 0:
        return True  # isError true, odd, or not where OpenClaw puts it
    before = buf[i - 1]
    if before == 125:  # "}": a details object sits between the content and isError
        d = buf.rfind(b',"details":{', tail_at, i)
        if d <= tail_at or buf[d - 1] != 93 or _nonzero_exit_code(buf[d:i]):
            return True
    elif before != 93:  # "]": the content array ends right there
        return True
    return _first_text_may_fail(buf, c + 11, e)


def _first_text_may_fail(buf: bytes, v: int, e: int) -> bool:
    """``v``: where the content value starts; ``e``: where the line ends."""
    m = _LIST_TEXT_FIRST_LINE.match(buf, v, min(v + len(_LIST_TEXT) + 400, e))
    if m is not None:  # the usual shape, in one regex step (the same test as below)
        verdict = plain_line_may_fail(m[1])
        if verdict is not None:
            return verdict
    if buf.startswith(b'"', v, e):
        return bytes_window_may_fail(buf[v + 1 : min(v + 1 + WINDOW_BYTES, e)])
    if buf.startswith(_LIST_TEXT, v, e):
        t = v + len(_LIST_TEXT)
        return _window_may_fail(buf, t, min(t + WINDOW_BYTES, e))
    if buf.startswith(b"[]", v, e):
        return False
    if buf.startswith(b'[{"type":"image"', v, e):
        t = buf.find(_TEXT_BLOCK, v, e)  # base64 never contains it: the first text block, if any
        return t >= 0 and _window_may_fail(buf, t + len(_TEXT_BLOCK), min(t + len(_TEXT_BLOCK) + WINDOW_BYTES, e))
    return True


def _window_may_fail(buf: bytes, t: int, w: int) -> bool:
    """``bytes_window_may_fail(buf[t:w])``, deciding the usual case without the copy."""
    verdict = plain_first_line_may_fail(buf, t, w)
    return bytes_window_may_fail(buf[t:w]) if verdict is None else verdict


def _nonzero_exit_code(details: bytes) -> bool:
    i = details.find(b'"exitCode":')
    while i >= 0:
        v = details[i + 11 : i + 14]
        if not (v.startswith(b"0") and v[1:2] in (b",", b"}")) and not v.startswith(b"nul"):
            return True
        i = details.find(b'"exitCode":', i + 11)
    return False


class OpenClawParser:
    def __init__(self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits):
        self.agent_id, self.file, self.session_id = agent_id, file, session_id
        self.counters, self.limits = counters, limits

    def feed(self, line: bytes, start: int, end: int) -> list[Turn]:
        obj = decode_line(drop_blobs(line, _BLOB_KEYS), self.counters)
        if obj is None:
            return []
        kind = obj.get("type")
        if kind == "session":
            sid = session_id_or_none(obj.get("id"), self.counters)
            if sid:
                self.session_id = sid
            return []
        if kind != "message":
            self.counters[f"skipped_type:{str(kind)[:40]}"] += 1
            return []
        msg = obj.get("message")
        if not isinstance(msg, dict):
            self.counters["bad_entry"] += 1
            return []
        role = msg.get("role")
        if role in ("user", "assistant"):
            said = finish_said(role, _content_text(msg.get("content")), self.limits, self.counters)
            return self._turn(obj, msg, role, *said, start, end) if said else []
        if role == "toolResult":
            return self._tool_result(obj, msg, start, end)
        if role == "bashExecution":
            return self._bash(obj, msg, start, end)
        self.counters[f"skipped_role:{str(role)[:40]}"] += 1
        return []

    def finish(self) -> list[Turn]:
        return []

    def recall(self, lines: list[bytes]) -> None:
        pass

    def _tool_result(self, obj: dict, msg: dict, start: int, end: int) -> list[Turn]:
        content = msg.get("content")
        details = msg.get("details")
        exit_code = details.get("exitCode") if isinstance(details, dict) else None
        failed = (
            msg.get("isError") is True
            or (isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0)
            or error_line(_first_text(content)) is not None
        )
        if not failed:
            self.counters["tool_ok"] += 1
            return []
        return self._trace(obj, msg, str_or_none(msg.get("toolName")), _content_text(content), start, end)

    def _bash(self, obj: dict, msg: dict, start: int, end: int) -> list[Turn]:
        """A ``!command`` the user ran: kept only when it failed, like a tool call."""
        output = msg.get("output") if isinstance(msg.get("output"), str) else ""
        code = msg.get("exitCode")
        if not ((isinstance(code, int) and not isinstance(code, bool) and code != 0) or error_line(output)):
            self.counters["tool_ok"] += 1
            return []
        command = str(msg.get("command") or "")[:80]
        return self._trace(obj, msg, f"bash {command}".strip(), output, start, end)

    def _trace(self, obj: dict, msg: dict, tool: str | None, output: str, start: int, end: int) -> list[Turn]:
        self.counters["tool_failure"] += 1
        text = finish_text("tool", trace(tool, output, self.limits.max_tool_trace_chars, self.counters), self.limits,
                           self.counters, trace=True)
        return self._turn(obj, msg, "tool", text, "tool", start, end)

    def _turn(self, obj: dict, msg: dict, role: str, text: str, author: str, start: int, end: int) -> list[Turn]:
        ts = iso_to_ms(obj.get("timestamp")) or iso_to_ms(msg.get("timestamp"))
        # in order, not by keyword: this builds every OpenClaw turn (see Turn)
        return [Turn(self.agent_id, self.session_id, self.file, start, end, id_or_none(obj.get("id")), ts, role, text,
                     author)]


def _content_text(content: object) -> str:
    """User and assistant text: string content, or the ``text`` blocks (thinking, tool
    calls and images are dropped)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for b in content:  # a loop, not a generator: most lists are one or two blocks
        if isinstance(b, dict) and b.get("type") == "text":
            text = b.get("text")
            if isinstance(text, str):
                texts.append(text)
    return texts[0] if len(texts) == 1 else "\n\n".join(texts)


def _first_text(content: object) -> str:
    """Where an error line is looked for: the start of the first text (see toolfail)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                return b["text"]
    return ""
