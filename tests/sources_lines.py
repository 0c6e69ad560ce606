"""Real-shaped transcript lines for the source-format tests, and the parse helpers they share.

Key order and compact separators follow what each agent writes (JSON.stringify for OpenClaw
and Claude Code, serde for Codex), because the bytes pre-test relies on them.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
from collections import Counter

from distill.model import Turn, TurnLimits
from distill.sources import get_format

_ids = itertools.count(1)

def jl(obj: object) -> bytes:
    """One line as the agents write it: compact JSON, raw UTF-8."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def png(n: int) -> str:
    return base64.b64encode(os.urandom(n)).decode()


def lay_out(lines: list[bytes]) -> list[tuple[bytes, int, int]]:
    """``(line, start, end)`` as the tail hands them out: the line without its newline,
    ``[start, end)`` with it."""
    out, pos = [], 0
    for line in lines:
        out.append((line[:-1] if line.endswith(b"\n") else line, pos, pos + len(line)))
        pos += len(line)
    return out


def parse(fmt_name: str, lines: list[bytes], *, filtered: bool = True, limits: TurnLimits | None = None,
          session_id: str = "from-file-name") -> tuple[list[Turn], Counter]:
    """Parse like the tail does: ``could_yield`` first (when ``filtered``), then ``feed``."""
    fmt = get_format(fmt_name)
    counters: Counter = Counter()
    parser = fmt.new_parser(agent_id="main", file="/t/s.jsonl", session_id=session_id, counters=counters,
                            limits=limits or TurnLimits())
    turns: list[Turn] = []
    for line, start, end in lay_out(lines):
        if not filtered or fmt.could_yield(line):
            turns += parser.feed(line, start, end)
    turns += parser.finish()
    return turns, counters


def assert_filter_loses_nothing(fmt_name: str, lines: list[bytes]) -> None:
    """The bytes pre-test may only skip lines that give no turn and change no state."""
    everything, _ = parse(fmt_name, lines, filtered=False)
    filtered, _ = parse(fmt_name, lines, filtered=True)
    assert filtered == everything
    assert_pretest_reads_only_its_line(fmt_name, lines)


def assert_pretest_reads_only_its_line(fmt_name: str, lines: list[bytes]) -> None:
    """``could_yield_at`` on a line inside the whole block (as the tail calls it) answers what
    ``could_yield`` answers on the line alone: it never reads its neighbours."""
    fmt = get_format(fmt_name)
    block = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    for line, start, _ in lay_out(lines):
        assert fmt.could_yield_at(block, start, start + len(line)) == fmt.could_yield(line), line[:200]


def brief(turns: list[Turn]) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in turns]


TS = "2026-11-29T10:00:01.000Z"
TS_MS = 1795946401000


# --- OpenClaw ----------------------------------------------------------------------------

def oc_msg(role: str, content: object, *, id: str | None = None, ts: str = TS, **extra: object) -> bytes:
    msg = {"role": role, "content": content, **extra, "timestamp": TS_MS}
    return jl({"type": "message", "id": id or f"e{next(_ids):07x}", "parentId": None, "timestamp": ts, "message": msg})


def oc_tool_result(tool: str, content: object, *, is_error: bool = False, details: dict | None = None,
                   id: str | None = None) -> bytes:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    msg: dict = {"role": "toolResult", "toolCallId": "call_1", "toolName": tool, "content": content}
    if details is not None:
        msg["details"] = details
    msg["isError"] = is_error
    msg["timestamp"] = TS_MS
    return jl({"type": "message", "id": id or f"e{next(_ids):07x}", "parentId": None, "timestamp": TS, "message": msg})


# --- Claude Code -------------------------------------------------------------------------

def cc_line(kind: str, message: dict | None, *, uuid: str | None = None, ts: str = TS, session: str = "c1",
            after: dict | None = None, **before: object) -> bytes:
    obj: dict = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w/proj",
                 "sessionId": session, "version": "2.0.14", "gitBranch": "main", **before, "type": kind}
    if message is not None:
        obj["message"] = message
    obj.update(after or {})
    obj["uuid"] = uuid or f"u{next(_ids):07x}"
    obj["timestamp"] = ts
    return jl(obj)


def cc_user(content: object, **kw: object) -> bytes:
    return cc_line("user", {"role": "user", "content": content}, **kw)


def cc_assistant(mid: str, blocks: list, **kw: object) -> bytes:
    message = {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant", "content": blocks,
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 4, "cache_read_input_tokens": 1200, "output_tokens": 7}}
    return cc_line("assistant", message, requestId="req_011", **kw)


# --- Codex CLI ---------------------------------------------------------------------------

def cx(kind: str, payload: dict, ts: str = TS) -> bytes:
    return jl({"timestamp": ts, "type": kind, "payload": payload})


def cx_item(ptype: str, **fields: object) -> bytes:
    return cx("response_item", {"type": ptype, **fields})


def cx_event(ptype: str, **fields: object) -> bytes:
    return cx("event_msg", {"type": ptype, **fields})


def cx_output(call_id: str, output: object) -> bytes:
    return cx_item("function_call_output", call_id=call_id, output=output)


# --- shared first lines and one good user line per format --------------------------------

FIRST_LINES = {
    "openclaw": jl({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/w"}),
    "claude-code": cc_user("hi", session="c1"),
    "codex": cx("session_meta", {"id": "x1", "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/w",
                                 "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None}),
}
SAY = "the cursor must be keyed by inode"
GOOD_USER_LINE = {
    "openclaw": oc_msg("user", SAY),
    "claude-code": cc_user(SAY),
    "codex": cx_item("message", role="user", content=[{"type": "input_text", "text": SAY}]),
}


def respaced(lines: list[bytes]) -> list[bytes]:
    """The same records as another writer would put them: spaces, ASCII escapes."""
    out = []
    for line in lines:
        try:
            out.append(json.dumps(json.loads(line)).encode() + b"\n")
        except ValueError:
            out.append(line)
    return out
