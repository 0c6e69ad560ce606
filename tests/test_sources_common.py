"""What every format shares: detection, bad input, the bytes pre-test, archive names, and
secrets never leaving a parse. Also holds the helpers the per-format test files use."""

from __future__ import annotations


import pytest

from distill.config import load_settings
from distill.errors import ConfigError, DistillError
from distill.errors import UnknownFormat
from distill.model import TurnLimits
from distill.sources import FORMATS, detect_format, get_format, is_archive_name
from sources_lines import (
    FIRST_LINES, GOOD_USER_LINE, assert_filter_loses_nothing, cc_assistant, cc_user, cx_item, cx_output, jl, oc_msg,
    oc_tool_result, parse,
)


# --- detection ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FIRST_LINES))
def test_detect_from_first_line(name: str):
    assert detect_format(FIRST_LINES[name], "/x.jsonl").name == name


def test_detect_claude_code_files_that_start_with_a_summary_or_snapshot():
    for first in (jl({"type": "summary", "summary": "Fix cursor", "leafUuid": "l1"}),
                  jl({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False})):
        assert detect_format(first, "/x.jsonl").name == "claude-code"


def test_detect_legacy_codex_header():
    first = jl({"id": "0198", "timestamp": "2025-08-01T10:00:00.000Z", "instructions": None, "git": None})
    assert detect_format(first, "/x.jsonl").name == "codex"


@pytest.mark.parametrize("first", [b'{"event":"start","ts":1}\n', b"not json at all\n", b"[1,2,3]\n", b"\n",
                                   b"\xff\xfe\x00garbage\n"])
def test_unknown_format_names_the_file_and_the_line(first: bytes):
    with pytest.raises(UnknownFormat) as err:
        detect_format(first, "/home/u/.claude/projects/p/weird.jsonl")
    msg = str(err.value)
    assert "/home/u/.claude/projects/p/weird.jsonl" in msg
    assert "openclaw" in msg and "claude-code" in msg and "codex" in msg
    assert isinstance(err.value, DistillError)
    if first.strip():
        assert first.decode("utf-8", "replace").strip()[-4:] in msg


def test_get_format_rejects_unknown_names_clearly():
    with pytest.raises(ConfigError, match="'cursor'.*openclaw, claude-code, codex"):
        get_format("cursor")


def test_turn_limits_come_from_settings():
    s = load_settings(state_dir="/tmp/none", max_turn_chars=1234, max_tool_trace_chars=99)
    assert TurnLimits.from_settings(s) == TurnLimits(max_turn_chars=1234, max_tool_trace_chars=99)


@pytest.mark.parametrize("name,expected", [
    ("abc.jsonl", False),
    ("abc.jsonl.reset.2026-11-29T10-00-00.000Z", True),
    ("abc.jsonl.deleted.2026-11-29T10-00-00.000Z", True),
    ("abc.jsonl.lock", True),
    ("rollout-2026-11-29T10-00-00-0198.jsonl", False),
    ("reset.jsonl", False),
])
def test_archive_names(name: str, expected: bool):
    assert is_archive_name(name) is expected


# --- bad input: counted, never raised ------------------------------------------------------

BAD_LINES = {
    "invalid_json": b'{"type":"message","message":{"role":"user","content":"cut off\n',
    "not_object": b'[{"type":"message"}]\n',
    "scalar": b'"just a string"\n',
    "blank": b"   \n",
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_bad_lines_are_counted_not_raised(name: str):
    good = GOOD_USER_LINE[name]
    lines = [FIRST_LINES[name], BAD_LINES["invalid_json"], good, BAD_LINES["not_object"], BAD_LINES["scalar"],
             BAD_LINES["blank"], good.replace(b"\n", b"") + b"\n"]
    turns, counters = parse(name, lines, filtered=False)
    assert counters["invalid_json"] == 1
    assert counters["not_object"] == 2
    assert counters["blank"] == 1
    assert [t.text for t in turns if t.role == "user"] == ["the cursor must be keyed by inode", "the cursor must be keyed by inode"]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_invalid_utf8_is_repaired_and_counted(name: str):
    bad = GOOD_USER_LINE[name].replace(b"keyed by", b"keyed \xff\xfe by")
    turns, counters = parse(name, [FIRST_LINES[name], bad], filtered=False)
    assert counters["invalid_utf8"] == 1
    assert [t.text for t in turns if t.role == "user"] == ["the cursor must be keyed \ufffd\ufffd by inode"]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_nul_bytes_are_removed_and_counted(name: str):
    padded = b"\x00" * 64 + GOOD_USER_LINE[name]
    only_nul = b"\x00" * 100 + b"\n"
    turns, counters = parse(name, [FIRST_LINES[name], only_nul, padded], filtered=True)
    assert counters["nul_bytes"] == 2
    assert [t.text for t in turns if t.role == "user"] == ["the cursor must be keyed by inode"]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_random_garbage_never_raises(name: str):
    import random

    rng = random.Random(7)
    base = GOOD_USER_LINE[name]
    lines = [FIRST_LINES[name]]
    for _ in range(400):
        b = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(len(b) - 1)] = rng.randrange(256)
        lines.append(bytes(b))
    turns, counters = parse(name, lines, filtered=True)
    assert sum(counters.values()) > 0
    assert all(isinstance(t.text, str) for t in turns)


# --- secrets never leave a parse ----------------------------------------------------------

def test_secrets_in_a_transcript_never_reach_a_turn():
    from test_redact import CORPUS

    for i, (text, secret, _) in enumerate(CORPUS):
        cases = {
            "openclaw": [FIRST_LINES["openclaw"], oc_msg("user", f"here: {text}"),
                         oc_msg("assistant", [{"type": "text", "text": f"noted {text}"}]),
                         oc_tool_result("bash", f"Error: bad credentials {text}", is_error=True)],
            "claude-code": [cc_user(f"here: {text}"), cc_assistant("msg_1", [{"type": "text", "text": text}]),
                            cc_user([{"tool_use_id": "t1", "type": "tool_result", "content": f"error: {text}",
                                      "is_error": True}])],
            "codex": [FIRST_LINES["codex"], cx_item("message", role="user", content=[{"type": "input_text", "text": text}]),
                      cx_output("c1", f"Exit code: 1\nWall time: 0.1 seconds\nOutput:\nfatal: {text}")],
        }
        for name, lines in cases.items():
            turns, counters = parse(name, lines, limits=TurnLimits(max_tool_trace_chars=4000))
            assert turns, (name, i)
            for t in turns:
                assert secret not in t.text, (name, i, t.text)
            assert any(k.startswith("redacted:") for k in counters), (name, i)


# --- the bytes pre-test against many generated tool outputs ---------------------------------

PIECES = ["", "   ", "\t", "Exit code: 0", "Exit code: 2", "Exit code:1", "Wall time: 0.1 seconds", "Output:",
          "Process exited with code 0", "Process exited with code 1", "error: x", "Error: y", "ERROR z",
          "  Traceback (most recent call last):", "fatal: no", "C:\\new\\error", "C:\\\\no", "ok", "fine line",
          "错误：z", "失败了", "— — —", "\u00a0", "\u00a0error: nbsp", "\r", "\u2028panic: q", "x" * 200,
          "❌ failed", "warning: x", "panic: y", "\\n literal", 'quote " error', "😀 emoji", "bash: rg: command not found",
          "ls: /x: No such file or directory", "EACCES", "compiled 3 files", "  ", "\\", "Exception: e",
          "exit code: 0", "Unhandled rejection", "all good", "部署完成", "部署 error: x", "构建失败", "\u3000Exit code: 0",
          "\u3000error: ideographic space", "é error", "TRACEBAC\u212a (most recent call last):", "\u0085fatal: x",
          "\u00a0\u00a0Output:", "x\u2029error: y", "İ FAİLED"]


def random_output(rng) -> str:
    n = rng.randint(0, 8)
    sep = rng.choice(["\n", "\n", "\n", "\r\n", "\n\n"])
    out = sep.join(rng.choice(PIECES) for _ in range(n))
    if rng.random() < 0.2:
        out += sep + "filler line\n" * rng.randint(50, 400)
    return out


def test_pretest_agrees_with_the_parser_on_generated_outputs():
    import json
    import random

    rng = random.Random(11)
    for _ in range(600):
        out = random_output(rng)
        flag = rng.random() < 0.1
        code = rng.choice([0, 0, 0, 1, None])
        oc = [FIRST_LINES["openclaw"],
              oc_tool_result("bash", out, is_error=flag, details=None if code is None else {"exitCode": code}),
              oc_tool_result("bash", rng.choice([out, [{"type": "text", "text": out}, {"type": "text", "text": out}]]))]
        cc = [cc_assistant("m1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
              cc_user([{"tool_use_id": "t1", "type": "tool_result", "content": rng.choice([out, [{"type": "text", "text": out}]]),
                        **({"is_error": True} if flag else {})}])]
        inner = json.dumps({"output": out, "metadata": {"exit_code": code or 0, "duration_seconds": 0.1}},
                           separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
        cx = [FIRST_LINES["codex"], cx_output("c1", out), cx_output("c2", inner),
              cx_item("custom_tool_call_output", call_id="c3", output=inner)]
        for name, lines in (("openclaw", oc), ("claude-code", cc), ("codex", cx)):
            assert_filter_loses_nothing(name, lines)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_cut_surrogate_pair_is_repaired_and_counted(name: str):
    bad = GOOD_USER_LINE[name].replace(b"keyed by", b"keyed \\ud83d by")
    turns, counters = parse(name, [FIRST_LINES[name], bad], filtered=True)
    assert counters["invalid_surrogate"] == 1
    assert [t.text for t in turns if t.role == "user"] == ["the cursor must be keyed \ufffd by inode"]


def random_blocks(rng, fmt: str) -> list:
    text = {"openclaw": "text", "claude-code": "text", "codex": rng.choice(["input_text", "output_text"])}[fmt]
    kinds = [lambda: {"type": text, "text": rng.choice(["", "ok", "the flock is per state dir", random_output(rng)])},
             lambda: {"type": "thinking", "thinking": "hmm " * rng.randint(1, 50)},
             lambda: {"type": "image", "data": "QUJD" * rng.randint(1, 3000), "mimeType": "image/png"},
             lambda: {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"type": "text", "content": "x"}},
             lambda: {"type": "tool_use", "id": "t9", "name": "Edit", "input": {"file_path": "/a"}}]
    if fmt == "claude-code":
        kinds.append(lambda: {"tool_use_id": "t9", "type": "tool_result",
                              "content": rng.choice([random_output(rng), [{"type": "text", "text": random_output(rng)}]]),
                              **({"is_error": True} if rng.random() < 0.2 else {})})
    return [rng.choice(kinds)() for _ in range(rng.randint(0, 4))]


def test_pretest_agrees_with_the_parser_on_generated_messages():
    import random

    from sources_lines import cx_event

    rng = random.Random(5)
    for _ in range(600):
        role = rng.choice(["user", "assistant"])
        oc_content = rng.choice([random_blocks(rng, "openclaw"), rng.choice(["", "plain string", random_output(rng)])])
        cc_content = rng.choice([random_blocks(rng, "claude-code"), rng.choice(["", "plain string", random_output(rng)])])
        cx_content = random_blocks(rng, "codex")
        oc = [FIRST_LINES["openclaw"], oc_msg(role, oc_content), oc_msg(role, oc_content, thinkingLevel="high")]
        cc = [cc_assistant("m1", cc_content if isinstance(cc_content, list) else [{"type": "text", "text": cc_content}])
              if role == "assistant" else cc_user(cc_content),
              cc_assistant("m1", [{"type": "text", "text": "second part"}])]
        cx = [FIRST_LINES["codex"], cx_item("message", role=rng.choice([role, "developer"]), content=cx_content),
              cx_event(rng.choice(["user_message", "agent_message", "token_count"]), message=rng.choice(["", "hi there, use uv", "x"]))]
        for name, lines in (("openclaw", oc), ("claude-code", cc), ("codex", cx)):
            assert_filter_loses_nothing(name, lines)


def test_a_session_id_from_the_transcript_cannot_smuggle_a_path():
    header = jl({"type": "session", "version": 3, "id": "../../etc/passwd\nx", "timestamp": "2026-11-29T10:00:00.000Z"})
    turns, counters = parse("openclaw", [header, GOOD_USER_LINE["openclaw"]], session_id="from-file-name")
    assert turns[0].session_id == "from-file-name"
    assert counters["bad_session_id"] == 1


def test_a_trace_quotes_the_first_line_that_mentions_an_error():
    """``first_error_line`` searches the whole output at once; it must give what reading it
    line by line (``str.splitlines``, headers and blank lines skipped) gives: the first line
    mentioning an error that says more than a prefix ("npm ERR!", "Error:"), a traceback's
    closing exception, else the first bare one, else the last line."""
    import random
    import re

    from distill.sources.toolfail import exception_line, first_error_line

    mentions = re.compile(r"(?i)\b(?:error|errors|failed|failure|fatal|exception|traceback|panic|denied|not found|"
                          r"cannot|could not|unable to|no such|refused|timed out|enoent|eacces)\b|\berr!|"
                          r"错误|失败")
    bare = re.compile(r"(?i)[\W_]*(?:[\w.-]+[ \t]+)?(?:error|errors|err!|failed|failure|fatal|exception|panic)[\W_]*")
    header = re.compile(r"^(?:exit code:|wall time:|output:|process exited with code|chunk id:|original token count:)")

    def by_lines(output: str) -> str:
        last, first_bare = "", ""
        lines = output.splitlines()
        for i, raw in enumerate(lines):
            line = raw.strip()
            if line and not header.match(line.lower()):
                if mentions.search(line):
                    if re.match(r"(?i)[\W_]*traceback \(most recent call last\)", line):
                        return exception_line(lines[i + 1:]) or line  # line by line already
                    if not bare.fullmatch(line):
                        return line
                    first_bare = first_bare or line
                last = line
        return first_bare or last

    rng = random.Random(3)
    breaks = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\n\n", " "]
    words = PIECES + ["Output: error x", "not\nfound", "xerror", "errors", "TRACEBAC\u212a", "\u3000error",
                      "npm ERR!", "npm ERR! Missing script: \"test\"", "  File \"a.py\", line 3", "KeyError: 'k'",
                      "UnicodeEncodeError: 'ascii' codec", "During handling of the above exception:", "Traceback",
                      "Traceback (most recent call last):", "build failed"]
    for _ in range(5000):
        output = "".join(rng.choice(words) + rng.choice(breaks) for _ in range(rng.randint(0, 10)))
        assert first_error_line(output) == by_lines(output), repr(output)


def test_the_written_out_unicode_spaces_are_every_one_str_strip_drops():
    """toolfail's bytes pre-test must know every non-ASCII space ``str.strip`` drops (a header
    can hide behind one); the list is written out for speed, so check it against Python's."""
    from distill.sources.toolfail import _UNICODE_SPACES

    assert _UNICODE_SPACES == tuple(chr(i).encode() for i in range(0x80, 0x110000) if chr(i).isspace())
