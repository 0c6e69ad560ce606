"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl``.

Lines are ``{"timestamp","type","payload"}`` envelopes: ``session_meta`` (``payload.id`` is
the session id), ``turn_context``, ``response_item`` (``payload.type`` message /
function_call / function_call_output / custom_tool_call(_output) / local_shell_call(_output)
/ reasoning / …) and ``event_msg`` (user_message / agent_message / token_count / …).

Choices:
- User and assistant text appears twice (a ``response_item`` message and an ``event_msg``).
  Whichever comes first is kept; a text from the other channel that matches one of the last
  few kept texts of that role is its copy and is dropped (counted ``duplicate``). A rollout
  with only one of the two channels loses nothing, and a person repeating themselves
  (same channel) is kept. The last 64 KiB before where a run starts are read again
  (``recall``), so a copy is still known when a run or a full batch ends between the two.
- Developer messages, ``<environment_context>``, ``<user_instructions>`` and AGENTS.md
  instructions (``# AGENTS.md instructions for …``) are injected, not said: skipped.
- A tool output fails on a non-zero exit code (``metadata.exit_code`` of the JSON form,
  ``Exit code: N`` / ``Process exited with code N`` of the text form) or an error line.
- Old rollouts (before the envelope, 2025) have bare items after a header line; items are
  read the same way.
"""

from __future__ import annotations

from collections import Counter, deque

import orjson

from ..text import LazyPattern
from ..model import Turn
from .base import (
    TurnLimits, decode_line, drop_blobs, feed_again, finish_said, finish_text, id_or_none, iso_to_ms, session_id_or_none,
)
from .toolfail import WINDOW_BYTES, bytes_window_may_fail, error_line, header_exit_code, trace

_ENVELOPE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
_INJECTED = LazyPattern(
    r"^\s*(?:<environment_context>|<user_instructions>|<INSTRUCTIONS>|# AGENTS\.md instructions for"
    r"|<user_shell_command>|<turn_aborted>)"
)
_RECENT = 16
_BLOB_KEYS = (b'"image_url":"',)  # image data: emptied before decoding


class CodexFormat:
    name = "codex"
    # the other channel's copy of a message read by the run before (a cron run, or a full
    # batch, can fall between the two writes), and the calls of outputs read now
    context_bytes = 1 << 16

    def detect(self, first_line: bytes) -> bool:
        try:
            obj = orjson.loads(first_line)
        except orjson.JSONDecodeError:
            return first_line.startswith(b'{"timestamp":"') and b'"type":"session_meta"' in first_line[:200]
        if not isinstance(obj, dict):
            return False
        if "payload" in obj and obj.get("type") in _ENVELOPE_TYPES:
            return True
        return "id" in obj and "timestamp" in obj and "instructions" in obj  # pre-envelope header

    def could_yield_at(self, buf: bytes, s: int, e: int) -> bool:
        """``could_yield(buf[s:e])`` (this format's test reads the line as one bytes object)."""
        return self.could_yield(buf if s == 0 and e == len(buf) else buf[s:e])

    def could_yield(self, line: bytes) -> bool:
        if not line.startswith(b'{"timestamp":"'):
            return True
        t = _value_after(line, b',"type":"', 0, 120)
        if t is None:
            return True
        if t == b"session_meta":
            return True
        if t in (b"turn_context", b"compacted"):
            return False
        pt = _value_after(line, b'"payload":{"type":"', 0, 200)
        if pt is None:
            return True
        if t == b"event_msg":
            return pt in (b"user_message", b"agent_message")
        if t != b"response_item":
            return True
        if pt == b"message":
            role = _value_after(line, b'"role":"', 0, 260)
            return role not in (b"developer", b"system")
        if pt in (b"function_call", b"custom_tool_call", b"local_shell_call"):
            return True  # small, and they name the tool for a later failure trace
        if pt in (b"function_call_output", b"custom_tool_call_output", b"local_shell_call_output"):
            return _output_may_fail(line)
        return False  # reasoning, web_search_call, …

    def new_parser(
        self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits
    ) -> CodexParser:
        return CodexParser(agent_id=agent_id, file=file, session_id=session_id, counters=counters, limits=limits)


def _value_after(line: bytes, key: bytes, lo: int, hi: int) -> bytes | None:
    i = line.find(key, lo, hi)
    if i < 0:
        return None
    s = i + len(key)
    e = line.find(b'"', s, s + 64)
    return line[s:e] if e >= 0 else None


def _output_may_fail(line: bytes) -> bool:
    i = line.find(b'"output":')
    if i < 0:
        return True
    v = i + 9
    if line.startswith(b'"{\\"output\\":\\"', v):  # {"output": "...", "metadata": {"exit_code": N}}
        s = v + 15
        if bytes_window_may_fail(line[s : s + WINDOW_BYTES], nested=True, exit_headers=True):
            return True
        j = line.rfind(b'exit_code\\":', max(s, len(line) - 512))
        if j < 0:
            return True  # exit code not where expected: decode to be sure
        code = line[j + 12 : j + 15].lstrip()
        return not (code.startswith(b"0") and code[1:2] in (b",", b"}", b" ", b"\\"))
    if line.startswith(b'"', v):
        if line.startswith(b'"{', v):
            return True  # some other JSON-in-a-string: decode
        return bytes_window_may_fail(line[v + 1 : v + 1 + WINDOW_BYTES], exit_headers=True)
    return line.startswith(b"{", v)  # an object: unusual, decode; a list (images): no


class CodexParser:
    def __init__(self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits):
        self.agent_id, self.file, self.session_id = agent_id, file, session_id
        self.counters, self.limits = counters, limits
        self._names: dict[str, str] = {}
        self._recent: dict[str, deque[tuple[str, str]]] = {"user": deque(maxlen=_RECENT), "assistant": deque(maxlen=_RECENT)}

    def feed(self, line: bytes, start: int, end: int) -> list[Turn]:
        obj = decode_line(drop_blobs(line, _BLOB_KEYS), self.counters)
        if obj is None:
            return []
        kind, payload = obj.get("type"), obj.get("payload")
        ts = iso_to_ms(obj.get("timestamp"))
        if "payload" not in obj:
            if "instructions" in obj and "id" in obj:  # pre-envelope header
                self._set_session(obj.get("id"))
                return []
            kind, payload = "response_item", obj  # pre-envelope item
        if not isinstance(payload, dict):
            self.counters["bad_entry"] += 1
            return []
        if kind == "session_meta":
            self._set_session(payload.get("id"))
            return []
        if kind == "response_item":
            return self._item(payload, ts, start, end)
        if kind == "event_msg":
            return self._event(payload, ts, start, end)
        self.counters[f"skipped_type:{str(kind)[:40]}"] += 1
        return []

    def finish(self) -> list[Turn]:
        return []

    def recall(self, lines: list[bytes]) -> None:
        feed_again(self, lines)

    def _set_session(self, value: object) -> None:
        sid = session_id_or_none(value, self.counters)
        if sid:
            self.session_id = sid

    def _item(self, p: dict, ts: int, start: int, end: int) -> list[Turn]:
        pt = p.get("type")
        if not isinstance(pt, str):
            pt = str(pt)[:40]  # a list or dict here would not even be hashable
        if pt == "message":
            role = p.get("role")
            if role not in ("user", "assistant"):
                self.counters[f"skipped_role:{str(role)[:40]}"] += 1
                return []
            return self._said(role, _message_text(p.get("content")), "item", p.get("id"), ts, start, end)
        if pt in _CALLS:
            call_id = p.get("call_id") or p.get("id")
            if isinstance(call_id, str):
                if len(self._names) > 2048:
                    self._names.pop(next(iter(self._names)))
                self._names[call_id] = str(p.get("name") or ("shell" if pt == "local_shell_call" else "tool"))[:80]
            return []
        if pt in _OUTPUTS:
            return self._output(p, ts, start, end)
        self.counters[f"skipped_item:{str(pt)[:40]}"] += 1
        return []

    def _event(self, p: dict, ts: int, start: int, end: int) -> list[Turn]:
        pt = p.get("type")
        if pt == "user_message" and isinstance(p.get("message"), str):
            return self._said("user", p["message"], "event", None, ts, start, end)
        if pt == "agent_message" and isinstance(p.get("message"), str):
            return self._said("assistant", p["message"], "event", None, ts, start, end)
        self.counters[f"skipped_event:{str(pt)[:40]}"] += 1
        return []

    def _said(self, role: str, raw: str, channel: str, entry_id: object, ts: int, start: int, end: int) -> list[Turn]:
        if role == "user" and _INJECTED.match(raw):
            self.counters["injected"] += 1
            return []
        other = ("event" if channel == "item" else "item", raw.strip())
        recent = self._recent[role]
        if other in recent:  # the same words from the other channel: one copy is enough
            recent.remove(other)
            self.counters["duplicate"] += 1
            return []
        recent.append((channel, other[1]))
        said = finish_said(role, raw, self.limits, self.counters)
        return self._turn(role, *said, entry_id, ts, start, end) if said else []

    def _output(self, p: dict, ts: int, start: int, end: int) -> list[Turn]:
        body, exit_code = _output_body(p.get("output"))
        if exit_code is None:
            exit_code = header_exit_code(body)
        if not exit_code and error_line(body) is None:
            self.counters["tool_ok"] += 1
            return []
        self.counters["tool_failure"] += 1
        tool = self._names.get(str(p.get("call_id")))
        text = finish_text("tool", trace(tool, body, self.limits.max_tool_trace_chars, self.counters), self.limits,
                           self.counters, trace=True)
        return self._turn("tool", text, "tool", p.get("call_id"), ts, start, end)

    def _turn(self, role: str, text: str, author: str, entry_id: object, ts: int, start: int, end: int) -> list[Turn]:
        return [Turn(agent_id=self.agent_id, session_id=self.session_id, file=self.file, start=start, end=end,
                     entry_id=id_or_none(entry_id), ts=ts, role=role, text=text, author=author)]


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in ("input_text", "output_text", "text") and isinstance(b.get("text"), str)
    )


def _output_body(output: object) -> tuple[str, int | None]:
    """(text of the output, exit code if the JSON form states one)."""
    if isinstance(output, dict):
        output = output.get("content") if isinstance(output.get("content"), str) else ""
    if not isinstance(output, str):
        return "", None  # a list: images and other structured output
    if output.startswith("{"):
        try:
            inner = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output, None
        if isinstance(inner, dict) and isinstance(inner.get("output"), str):
            meta = inner.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return inner["output"], code if isinstance(code, int) and not isinstance(code, bool) else None
    return output, None
