"""Claude Code transcripts: ``~/.claude/projects/<project>/<sessionId>.jsonl``.

Each line is one record: ``type`` user / assistant / system / summary / file-history-snapshot
/ …, with ``uuid``, ``sessionId``, ``timestamp``, ``isSidechain``, ``isMeta``,
``isCompactSummary`` and ``message`` (``role``, ``content`` as a string or blocks ``text``,
``thinking``, ``tool_use``, ``tool_result``, ``image``).

Choices:
- One API message is streamed as several assistant lines repeating ``message.id``, one
  block each; their text becomes one turn whose byte range runs from the start of its first
  line with text to the end of its last. It is emitted when another message's text starts,
  when any other turn is produced, or at ``finish()``. Lines that carry no text never end
  it, so skipping them (the bytes pre-test) changes nothing. A run can end between two lines
  of one message (a cron run, a hook fired mid-session): the next run reads the last 64 KiB
  before where it starts again (``recall``), and if the message goes on, its turn is the whole
  message (the pitfall in its first lines and the fix in its last are one turn; the first
  part was given once already, alone); a message that does not go on gives nothing again.
- Tool results live in user lines. Successful ones are dropped, failed ones become one trace
  turn. A user line with only tool results is not a user turn; one with text and a failed
  tool result gives one user turn with the trace appended (one turn per line keeps turn ids,
  which are per start byte, unique).
- ``isMeta``, ``isCompactSummary``, ``system``, ``summary`` and API-error lines give nothing.
- Sidechain (subagent) lines are kept: what a subagent learned is as useful as the rest; but
  their user text (``isSidechain`` lines, or any user line of an ``agent-*.jsonl`` file) is
  the task spec its parent agent wrote, attributed to ``parent_agent``.
- Text in user lines that nobody typed — ``!`` shell mode (``<bash-input>``, ``<bash-stdout>``),
  hook output and feedback, task notifications, teammate messages — is given its author by
  :func:`distill.text.envelopes.attribute` like every other envelope (docs/formats.md).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import orjson

from ..model import Turn
from .base import (
    TurnLimits, decode_line, drop_blobs, feed_again, finish_said, finish_text, id_or_none, iso_to_ms, session_id_or_none,
)
from ..text.noise import clip
from .toolfail import error_line, trace

_MAX_TOOL_NAMES = 2048
_BLOB_KEYS = (b'"data":"',)  # image data: emptied before decoding


class ClaudeCodeFormat:
    context_bytes = 1 << 16  # a streamed message a run boundary cut (see recall), and tool names
    name = "claude-code"

    def detect(self, first_line: bytes) -> bool:
        try:
            obj = orjson.loads(first_line)
        except orjson.JSONDecodeError:
            head = first_line[:2000]
            return b'"sessionId":"' in head and b'"uuid":"' in head
        if not isinstance(obj, dict) or "payload" in obj:
            return False
        if obj.get("type") in ("summary", "file-history-snapshot", "queue-operation"):
            return True
        return any(k in obj for k in ("sessionId", "parentUuid", "leafUuid"))

    def could_yield_at(self, buf: bytes, s: int, e: int) -> bool:
        """``could_yield(buf[s:e])`` (this format's test reads the line as one bytes object)."""
        return self.could_yield(buf if s == 0 and e == len(buf) else buf[s:e])

    def could_yield(self, line: bytes) -> bool:
        head = line[:4096]
        if not line.startswith(b"{") or b'"type":"' not in head:
            return True
        if b'"isMeta":true' in head or b'"isCompactSummary":true' in head:
            return False
        if b'"type":"assistant"' in head:
            # text gives a turn, tool_use gives the tool's name for a later failure trace
            return b'"type":"text"' in line or b'"type":"tool_use"' in line or b'"content":"' in line
        if b'"type":"user"' in head:
            # A tool result's is_error sits between the output and its copy in toolUseResult:
            # no bounded test finds it, and scanning the line costs more than decoding it.
            return True
        if any(b'"type":"%s"' % t in head[:64] or b',"type":"%s"' % t in head for t in _NEVER):
            return False
        return True

    def new_parser(
        self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits
    ) -> ClaudeCodeParser:
        return ClaudeCodeParser(agent_id=agent_id, file=file, session_id=session_id, counters=counters, limits=limits)


_NEVER = (b"system", b"summary", b"file-history-snapshot", b"queue-operation")


@dataclass
class _Held:
    """A streamed assistant message whose lines are still arriving."""

    message_id: str
    start: int
    end: int
    ts: int
    session_id: str
    parts: list[str] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)  # hashes of the parts, to drop repeated blocks
    size: int = 0
    recalled: bool = False  # its lines so far were read by an earlier run, which gave them as a turn

    def add(self, texts: list[str], max_chars: int) -> None:
        for t in texts:
            h = hash(t)
            if h in self.seen:
                continue
            self.seen.add(h)
            self.parts.append(t)
            self.size += len(t)
        if self.size > 8 * max_chars:  # a runaway stream: keep head and tail, as clip would
            joined, _ = clip("\n\n".join(self.parts), 2 * max_chars)
            self.parts, self.size = [joined], len(joined)


class ClaudeCodeParser:
    def __init__(self, *, agent_id: str, file: str, session_id: str, counters: Counter, limits: TurnLimits):
        self.agent_id, self.file, self.session_id = agent_id, file, session_id
        self.counters, self.limits = counters, limits
        self._held: _Held | None = None
        self._tool_names: dict[str, str] = {}
        # a sub-agent's own transcript (``agent-<id>.jsonl``): its user turns are the parent's
        self._sub_agent_file = os.path.basename(file).startswith("agent-")

    def feed(self, line: bytes, start: int, end: int) -> list[Turn]:
        obj = decode_line(drop_blobs(line, _BLOB_KEYS), self.counters)
        if obj is None:
            return []
        sid = session_id_or_none(obj.get("sessionId"), self.counters)
        if sid:
            self.session_id = sid
        kind = obj.get("type")
        if kind == "assistant":
            return self._assistant(obj, start, end)
        if kind == "user":
            return self._user(obj, start, end)
        self.counters[f"skipped_type:{str(kind)[:40]}"] += 1
        return []

    def finish(self) -> list[Turn]:
        return self._flush()

    def recall(self, lines: list[bytes]) -> None:
        feed_again(self, lines)
        if self._held is not None:
            self._held.recalled = True

    # --- assistant -----------------------------------------------------------------------

    def _assistant(self, obj: dict, start: int, end: int) -> list[Turn]:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            self.counters["bad_entry"] += 1
            return []
        if obj.get("isApiErrorMessage"):
            self.counters["api_error"] += 1
            return []
        content = msg.get("content")
        texts = [content] if isinstance(content, str) else []
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                self._remember_tool(b["id"], b.get("name"))
        mid = id_or_none(msg.get("id")) or id_or_none(obj.get("uuid")) or f"@{start}"
        if not texts:
            return []  # thinking or tool use only: no text, and no reason to end a held message
        held = self._held
        if held is not None and held.message_id == mid:
            held.add(texts, self.limits.max_turn_chars)
            if held.recalled:  # the message goes on after a run boundary: its turn is read here
                held.recalled, held.start = False, start
            held.end = end
            return []
        out = self._flush()
        self._held = _Held(mid, start, end, iso_to_ms(obj.get("timestamp")), self.session_id)
        self._held.add(texts, self.limits.max_turn_chars)
        return out

    def _flush(self) -> list[Turn]:
        held, self._held = self._held, None
        if held is None or held.recalled:
            return []
        said = finish_said("assistant", "\n\n".join(held.parts), self.limits, self.counters)
        if said is None:
            return []
        text = said[0]
        return [Turn(agent_id=self.agent_id, session_id=held.session_id, file=self.file, start=held.start,
                     end=held.end, entry_id=None if held.message_id.startswith("@") else held.message_id, ts=held.ts, role="assistant", text=text, author="assistant")]

    def _remember_tool(self, tool_id: str, name: object) -> None:
        if len(self._tool_names) >= _MAX_TOOL_NAMES:
            self._tool_names.pop(next(iter(self._tool_names)))
        self._tool_names[tool_id] = str(name)[:80] if name else "tool"

    # --- user ----------------------------------------------------------------------------

    def _user(self, obj: dict, start: int, end: int) -> list[Turn]:
        if obj.get("isMeta") or obj.get("isCompactSummary"):
            self.counters["meta"] += 1
            return []
        msg = obj.get("message")
        if not isinstance(msg, dict):
            self.counters["bad_entry"] += 1
            return []
        content = msg.get("content")
        texts: list[str] = [content] if isinstance(content, str) else []
        traces: list[str] = []
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") == "tool_result":
                t = self._tool_result(b)
                if t:
                    traces.append(t)
        sidechain = obj.get("isSidechain") is True or self._sub_agent_file
        said = finish_said("user", "\n\n".join(texts), self.limits, self.counters,
                           author="parent_agent" if sidechain else None) if texts else None
        text, author = said if said else (None, "tool")
        role = "user" if said else "tool"
        if traces:
            joined = "\n".join(traces)
            text = f"{text}\n{joined}" if text else joined
        out: list[Turn] = []
        if text:
            out = self._flush()  # a turn from another line ends a held message
            out.append(Turn(agent_id=self.agent_id, session_id=self.session_id, file=self.file, start=start,
                            end=end, entry_id=id_or_none(obj.get("uuid")), ts=iso_to_ms(obj.get("timestamp")),
                            role=role, text=text, author=author))
        return out

    def _tool_result(self, block: dict) -> str | None:
        output = _result_text(block.get("content"))
        if block.get("is_error") is not True and error_line(output) is None:
            self.counters["tool_ok"] += 1
            return None
        self.counters["tool_failure"] += 1
        tool = self._tool_names.get(str(block.get("tool_use_id")), None)
        return finish_text("tool", trace(tool, output, self.limits.max_tool_trace_chars, self.counters), self.limits,
                           self.counters, trace=True)


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""
