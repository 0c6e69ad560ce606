"""OpenClaw transcripts: real-shaped lines, including the awkward ones, give exactly the
expected turns; the bytes pre-test skips the bulk and loses nothing."""

from __future__ import annotations

from distill.model import TurnLimits
from distill.sources import get_format
from sources_lines import (
    FIRST_LINES, TS_MS, assert_filter_loses_nothing, brief, jl, oc_msg, oc_tool_result, parse, png,
)

FMT = get_format("openclaw")
LONG_OUTPUT = "\n".join(f"drwxr-xr-x  2 u u 4096 Nov 29 10:00 dir{i}" for i in range(3000))

TRANSCRIPT: list[bytes] = [
    FIRST_LINES["openclaw"],
    jl({"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2026-11-29T10:00:00.100Z",
        "provider": "openai", "modelId": "gpt-5.2"}),
    jl({"type": "thinking_level_change", "id": "m2", "parentId": "m1", "timestamp": "2026-11-29T10:00:00.200Z",
        "thinkingLevel": "high"}),
    jl({"type": "custom", "customType": "openclaw.cache-ttl", "data": {"ttl": 300}, "id": "m3", "parentId": "m2",
        "timestamp": "2026-11-29T10:00:00.300Z"}),
    # 4: user text behind OpenClaw's metadata headers and recalled memories
    oc_msg("user", "Conversation info (untrusted metadata):\n```json\n{\n  \"message_id\": \"10285\",\n"
           "  \"sender\": \"1801759510\"\n}\n```\n\n<relevant-memories>\n- Preference: short answers\n"
           "</relevant-memories>\n\nWhy does `distill run` stall on the 50 MB line?", id="u1"),
    # 5: assistant: thinking + text + a tool call
    oc_msg("assistant", [{"type": "thinking", "thinking": "Let me check the max line setting. " * 50},
                         {"type": "text", "text": "[[reply_to_current]] I will check the line limit."},
                         {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls -la"}}],
           id="a1", api="openai-responses", provider="openai", model="gpt-5.2", stopReason="toolUse"),
    # 6: a long successful tool output: dropped, never decoded
    oc_tool_result("bash", LONG_OUTPUT, details={"exitCode": 0}),
    # 7: a failed tool call (error flag)
    oc_tool_result("bash", "total 0\nls: cannot access '/var/log/distill': No such file or directory\n\n"
                   "Command exited with code 2", is_error=True, id="t1"),
    # 8: an error flagged only by its first line
    oc_tool_result("read", "Error: ENOENT: no such file or directory, open '/w/cursor.json'", id="t2"),
    # 9: a non-zero exit code in details, output fine-looking
    oc_tool_result("exec", "building…\ndone with warnings", details={"exitCode": 1, "durationMs": 3}, id="t3"),
    # 10: an image result: dropped
    oc_tool_result("read", [{"type": "text", "text": "Read image file [image/png]"},
                            {"type": "image", "data": png(300_000), "mimeType": "image/png"}]),
    # 11: assistant with only a tool call: nothing
    oc_msg("assistant", [{"type": "toolCall", "id": "call_2", "name": "write",
                          "arguments": {"path": "/w/a.py", "content": "x = 1\n" * 2000}}], id="a2"),
    # 12: user with an attached image and text: the text is kept, the image never decoded
    oc_msg("user", [{"type": "text", "text": "This is the error dialog I get"},
                    {"type": "image", "data": png(600_000), "mimeType": "image/jpeg"}], id="u2"),
    # 13-16: noise
    oc_msg("user", "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. "
           "If nothing needs attention, reply HEARTBEAT_OK."),
    oc_msg("assistant", [{"type": "text", "text": "HEARTBEAT_OK"}]),
    oc_msg("assistant", "NO_REPLY"),
    oc_msg("user", "好的，谢谢！"),
    # 17: compaction: its summary was already read
    jl({"type": "compaction", "id": "c1", "parentId": "a2", "timestamp": "2026-11-29T10:05:00.000Z",
        "summary": "The user asked about the line limit; the assistant checked it. " * 40,
        "firstKeptEntryId": "u2", "tokensBefore": 120000}),
    # 18: a user `!command` that failed
    oc_msg("bashExecution", None, id="b1", command="systemctl --user start distill-worker", output=
           "Failed to start distill-worker.service: Unit distill-worker.service not found.", exitCode=5),
    # 19: assistant final answer
    oc_msg("assistant", [{"type": "text", "text": "Lines over 8 MiB are now skipped and counted, not waited on."}],
           id="a3"),
]


def test_transcript_gives_exactly_the_expected_turns():
    turns, counters = parse("openclaw", TRANSCRIPT)
    assert brief(turns) == [
        ("user", "Why does `distill run` stall on the 50 MB line?"),
        ("assistant", "I will check the line limit."),
        ("tool", "[tool exec failed: bash: ls: cannot access '/var/log/distill': No such file or directory]"),
        ("tool", "[tool exec failed: read: Error: ENOENT: no such file or directory, open '/w/cursor.json']"),
        ("tool", "[tool exec failed: exec: done with warnings]"),
        ("user", "This is the error dialog I get"),
        ("tool", "[tool exec failed: bash systemctl --user start distill-worker: Failed to start "
                 "distill-worker.service: Unit distill-worker.service not found.]"),
        ("assistant", "Lines over 8 MiB are now skipped and counted, not waited on."),
    ]
    assert counters["noise"] == 4
    assert counters["tool_failure"] == 4


def test_turn_provenance():
    turns, _ = parse("openclaw", TRANSCRIPT)
    offsets = [0]
    for line in TRANSCRIPT:
        offsets.append(offsets[-1] + len(line))
    first = turns[0]
    assert (first.agent_id, first.session_id, first.file) == ("main", "s1", "/t/s.jsonl")
    assert (first.start, first.end) == (offsets[4], offsets[5])
    assert first.entry_id == "u1"
    assert first.ts == 1795946401000 == TS_MS
    assert {t.entry_id for t in turns} >= {"u1", "a1", "t1", "t2", "t3", "u2", "b1", "a3"}


def test_bytes_pretest_skips_the_bulk():
    skipped = [i for i, line in enumerate(TRANSCRIPT) if not FMT.could_yield(line)]
    # model_change, thinking_level_change, custom, long output, image result, tool-call-only
    # assistant, compaction
    assert skipped == [1, 2, 3, 6, 10, 11, 17]


def test_bytes_pretest_loses_nothing():
    assert_filter_loses_nothing("openclaw", TRANSCRIPT)


def test_error_shapes_the_pretest_must_not_skip():
    lines = [
        FIRST_LINES["openclaw"],
        oc_tool_result("bash", "x" * 100_000, is_error=True),  # flag far behind a long output
        oc_tool_result("bash", "\n\n  Traceback (most recent call last):\n  File \"a.py\"" + "y" * 50_000),
        oc_tool_result("bash", "错误：找不到文件 config.toml"),
        oc_tool_result("bash", "ok", details={"exitCode": 127}),
        oc_tool_result("bash", [{"type": "image", "data": png(10_000), "mimeType": "image/png"}], is_error=True),
        oc_msg("assistant", "plain string content is text too"),
        oc_msg("toolResult", "fatal: not a git repository", toolName="git"),  # string content
    ]
    assert all(FMT.could_yield(line) for line in lines)
    turns, _ = parse("openclaw", lines)
    assert [t.role for t in turns] == ["tool", "tool", "tool", "tool", "tool", "assistant", "tool"]
    assert turns[1].text.startswith("[tool exec failed: bash: Traceback (most recent call last):")
    assert turns[4].text == "[tool exec failed: bash: (no output)]"
    assert_filter_loses_nothing("openclaw", lines)


def test_successful_results_that_mention_errors_later_are_dropped():
    long_tail = "all 42 tests passed\n" + "ok\n" * 2000 + "error: none\nTraceback: none\n"
    lines = [FIRST_LINES["openclaw"],
             oc_tool_result("grep", "src/a.py:10: handle the error here\nsrc/b.py: raise ValueError"),
             oc_tool_result("bash", long_tail)]
    assert not FMT.could_yield(lines[2])  # the error words are past the bounded window
    assert parse("openclaw", lines, filtered=False)[0] == []


def test_trace_is_capped():
    line = oc_tool_result("bash", "Error: " + "word " * 5000, is_error=True)
    turns, _ = parse("openclaw", [line], limits=TurnLimits(max_tool_trace_chars=300))
    assert len(turns) == 1 and len(turns[0].text) <= 300
    assert turns[0].text.startswith("[tool exec failed: bash: Error: word")


def test_long_text_is_clipped_not_dropped():
    text = "START " + "the reason is subtle " * 2000 + " END"
    turns, counters = parse("openclaw", [oc_msg("assistant", [{"type": "text", "text": text}])],
                            limits=TurnLimits(max_turn_chars=1000))
    assert len(turns) == 1
    assert turns[0].text.startswith("START ") and turns[0].text.endswith(" END")
    assert "…[clipped " in turns[0].text and len(turns[0].text) <= 1000
    assert counters["clipped"] == 1


def test_without_header_the_given_session_id_is_used():
    turns, _ = parse("openclaw", [oc_msg("user", "a real question about flock")], session_id="abc")
    assert turns[0].session_id == "abc"


def test_pretty_printed_or_reordered_lines_are_still_read():
    odd = b'{"message": {"role": "toolResult", "toolName": "bash", "isError": true, "content": "boom"}, "type": "message"}\n'
    assert FMT.could_yield(odd)
    turns, _ = parse("openclaw", [odd])
    assert brief(turns) == [("tool", "[tool exec failed: bash: boom]")]


def test_other_writers_spacing_and_escapes_give_the_same_turns():
    from sources_lines import respaced

    assert brief(parse("openclaw", respaced(TRANSCRIPT))[0]) == brief(parse("openclaw", TRANSCRIPT)[0])


def test_tool_result_endings_the_pretest_reads():
    body = "all good\n" * 3000
    ok = [oc_tool_result("exec", body),
          oc_tool_result("exec", body, details={"exitCode": 0}),
          oc_tool_result("exec", body, details={"exitCode": 0, "durationMs": 12}),
          oc_tool_result("exec", body, details={"exitCode": 0, "truncation": {"lines": 2000, "bytes": 50000}})]
    failed = [oc_tool_result("exec", body, details={"exitCode": 2}),
              oc_tool_result("exec", body, details={"exitCode": 0, "signal": None, "exitCodeOfChild": 1}),
              oc_tool_result("exec", body, details={"truncation": {"lines": 9}, "exitCode": 137}),
              oc_tool_result("exec", body, is_error=True, details={"exitCode": 0})]
    assert [FMT.could_yield(line) for line in ok] == [False, False, False, False]
    assert all(FMT.could_yield(line) for line in failed[0:1] + failed[2:])
    turns, _ = parse("openclaw", [FIRST_LINES["openclaw"], *ok, *failed])
    assert [t.role for t in turns] == ["tool", "tool", "tool"]  # exitCodeOfChild is not an exit code
    assert_filter_loses_nothing("openclaw", [FIRST_LINES["openclaw"], *ok, *failed])


def test_non_ascii_first_lines_the_pretest_decides():
    """A first output line with UTF-8 in it is decided from the line itself, as an ASCII one
    is, except where the decoded text reads differently: a Unicode space hiding a header, a
    Kelvin sign that lowercases into "traceback". Those must still be decoded."""
    rest = "\n" + "日志 INFO ok\n" * 200
    ok = [oc_tool_result("exec", "部署完成 build 42 ok" + rest),
          oc_tool_result("exec", "-rw-r--r-- 1 u u 7675 Nov 20 09:00 src/预算_301.py" + rest)]
    failed = [oc_tool_result("exec", "构建 error: 找不到 config.toml" + rest),
              oc_tool_result("exec", "部署失败 build 42" + rest),
              oc_tool_result("exec", "\u3000exit code: 0\nError: 部署 broke" + rest),
              oc_tool_result("exec", "TRACEBAC\u212a (most recent call last): 日志" + rest)]
    assert [FMT.could_yield(line) for line in ok] == [False, False]
    assert all(FMT.could_yield(line) for line in failed)
    turns, _ = parse("openclaw", [FIRST_LINES["openclaw"], *ok, *failed])
    assert [t.role for t in turns] == ["tool"] * 4
    assert_filter_loses_nothing("openclaw", [FIRST_LINES["openclaw"], *ok, *failed])
