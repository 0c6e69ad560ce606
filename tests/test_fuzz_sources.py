"""Fuzzed transcripts through the real reader (`distill run`, a real process): every source
format, invalid UTF-8, truncated JSON, wrong types in every field, NUL bytes, CRLF, huge
numbers, deep nesting, no newline at EOF. Bounded (about 2,400 lines, seeded, a few seconds):
0 crashes, 0 stalls, every undecodable line the reader looks at counted."""

from __future__ import annotations

import json
import random

import orjson

from distill.sources import get_format
from tests.sources_lines import (
    FIRST_LINES,
    cc_assistant,
    cc_user,
    cx_event,
    cx_item,
    cx_output,
    oc_msg,
    oc_tool_result,
)
from tests.tail_helpers import cli

LINES_PER_FORMAT = 800
WEIRD = [None, True, False, 0, -1, 1e300, -1e30, 2**70, 10**30, "", "x" * 300, "\u0000", [], {}, [1, "a", None],
         {"a": {"b": [1, 2]}}, "2026-13-45T99:99:99Z", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace")]
FILES = {"openclaw": "agents/main/sessions/s1.jsonl", "claude-code": "cc/p/c1.jsonl", "codex": "cx/2026/x1.jsonl"}


def _good(fmt: str, r: random.Random, i: int) -> dict:
    text = f"Decision {i}: deploy the billing service with uv sync --frozen on Debian 12 hosts only"
    if fmt == "openclaw":
        line = r.choice([
            lambda: oc_msg("user", [{"type": "text", "text": text}]),
            lambda: oc_msg("assistant", [{"type": "text", "text": text},
                                         {"type": "toolCall", "id": f"c{i}", "name": "exec", "arguments": {"command": "ls"}}]),
            lambda: oc_tool_result("exec", "error: " + text, is_error=True),
        ])()
    elif fmt == "claude-code":
        line = r.choice([
            lambda: cc_user(text),
            lambda: cc_assistant(f"msg_{i}", [{"type": "text", "text": text},
                                              {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": "ls"}}]),
            lambda: cc_user([{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "Error: " + text, "is_error": True}]),
        ])()
    else:
        line = r.choice([
            lambda: cx_item("message", role="user", content=[{"type": "input_text", "text": text}]),
            lambda: cx_item("message", role="assistant", content=[{"type": "output_text", "text": text}]),
            lambda: cx_item("function_call", name="shell", arguments='{"command":["ls"]}', call_id=f"c{i}"),
            lambda: cx_output(f"c{i}", json.dumps({"output": "error: " + text, "metadata": {"exit_code": 1}})),
            lambda: cx_event("agent_message", message=text),
        ])()
    return orjson.loads(line)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from _paths(v, prefix + (k,))


def _set(obj, path, value):
    if not path:
        return value
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return obj


def _fuzz_line(fmt: str, r: random.Random, i: int) -> tuple[bytes, str]:
    """One line (with its newline) and what was done to it."""
    obj = _good(fmt, r, i)
    what = r.choice(["clean", "clean", "types", "types", "types", "truncate", "utf8", "nul", "crlf", "huge", "deep",
                     "inf"])
    if what == "types":
        for _ in range(r.randint(1, 3)):
            obj = _set(obj, r.choice(list(_paths(obj))), r.choice(WEIRD))
    if what == "huge":
        obj = _set(obj, r.choice([p for p in _paths(obj) if p]), r.choice([1e300, -1e30, 2**70, -(2**64)]))
    line = json.dumps(obj, ensure_ascii=r.random() < 0.3, separators=(",", ":")).encode()
    if what == "truncate":
        line = line[: r.randint(1, len(line) - 1)]
    elif what == "utf8":
        k = r.randint(0, len(line))
        line = line[:k] + r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f"]) + line[k:]
    elif what == "nul":
        k = r.randint(0, len(line))
        line = line[:k] + b"\x00" * r.randint(1, 8) + line[k:]
    elif what == "deep":
        depth = r.choice([200, 2000, 20000])
        line = line[:-1] + b',"nest":' + b"[" * depth + b"]" * depth + b"}"
    elif what == "inf":
        line = line[:-1] + b',"timestamp":1e400}'
    return line + (b"\r\n" if what == "crlf" else b"\n"), what


def _expect_undecodable(fmt: str, line: bytes) -> bool:
    """Whether the reader, which decodes only the lines the format's pre-test lets through,
    must count this line as undecodable (after its NUL / UTF-8 repairs)."""
    body = line.rstrip(b"\n")
    if not get_format(fmt).could_yield(body):
        return False
    fixed = body.replace(b"\x00", b"").decode("utf-8", "replace").encode()
    try:
        return not isinstance(orjson.loads(fixed), dict)
    except orjson.JSONDecodeError:
        return True


def test_fuzzed_transcripts_never_crash_or_stall_and_bad_lines_are_counted(tmp_path):
    r = random.Random(20261130)
    expected_bad = 0
    tails = {}
    for fmt, rel in FILES.items():
        lines = [FIRST_LINES[fmt]]
        for i in range(LINES_PER_FORMAT):
            line, _ = _fuzz_line(fmt, r, i)
            lines.append(line)
            expected_bad += _expect_undecodable(fmt, line)
        tail = _fuzz_line(fmt, r, LINES_PER_FORMAT)[0].rstrip(b"\r\n")  # no newline at EOF: not read yet
        tails[fmt] = len(tail)
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines) + tail)
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        f'[[sources]]\npath = "{tmp_path / "cc"}"\nagent_id = "claude-code"\nformat = "claude-code"\n'
        f'[[sources]]\npath = "{tmp_path / "cx"}"\nagent_id = "codex"\nformat = "codex"\n')
    flags = ("--agents-dir", str(tmp_path / "agents"))

    out = orjson.loads(cli(state, *flags, "run", "--json", timeout=120).stdout)
    counters = out["summary"]["counters"]
    assert out["action"] == "created" and out["summary"]["turns"] > 300, out
    assert out["errors"] == [] and counters.get("parser_error", 0) == 0, (out["errors"], counters)
    assert expected_bad > 100
    assert counters.get("invalid_json", 0) + counters.get("not_object", 0) == expected_bad, counters
    assert counters.get("nul_bytes", 0) > 0 and counters.get("invalid_utf8", 0) > 0, counters

    cli(state, *flags, "commit", "--batch-file", out["batchFile"], timeout=60)
    again = orjson.loads(cli(state, *flags, "run", "--json", timeout=60).stdout)
    assert again["action"] == "noop", again  # nothing left behind that a later run would trip on
    status = orjson.loads(cli(state, *flags, "status", "--json", timeout=60).stdout)
    behind = {a["agentId"]: a["behind"] for a in status["agents"]}
    assert behind == {"main": tails["openclaw"], "claude-code": tails["claude-code"], "codex": tails["codex"]}
