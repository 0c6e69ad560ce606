"""Codex CLI rollouts: one copy of each user/assistant text, injected context skipped,
failed tool outputs (exit code or error line) kept as traces."""

from __future__ import annotations

import json

from distill.sources import get_format
from sources_lines import (
    FIRST_LINES, assert_filter_loses_nothing, brief, cx, cx_event, cx_item, cx_output, jl, parse, png,
)

FMT = get_format("codex")


def out_json(output: str, code: int) -> str:
    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}}, separators=(",", ":"))


TRANSCRIPT: list[bytes] = [
    FIRST_LINES["codex"],
    # 1-3: injected context: developer instructions, AGENTS.md, environment
    cx_item("message", role="developer", content=[{"type": "input_text", "text": "<permissions instructions>…"}]),
    cx_item("message", role="user", content=[{"type": "input_text", "text":
            "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nUse uv. Never commit.\n</INSTRUCTIONS>"}]),
    cx_item("message", role="user", content=[{"type": "input_text", "text":
            "<environment_context>\n  <cwd>/w</cwd>\n  <shell>bash</shell>\n</environment_context>"}]),
    cx("turn_context", {"cwd": "/w", "approval_policy": "on-request", "model": "gpt-5-codex"}),
    # 5-6: the user's message, twice (response_item, then event_msg)
    cx_item("message", role="user", content=[{"type": "input_text", "text": "Why is the no-op run slow on 10k files?"}]),
    cx_event("user_message", message="Why is the no-op run slow on 10k files?", images=[]),
    cx_event("token_count", info={"total_token_usage": {"input_tokens": 9000}}),
    cx_item("reasoning", summary=[{"type": "summary_text", "text": "**Profiling**"}], encrypted_content="gAAAA" * 400),
    # 9-10: a call that fails with a non-zero exit (text form)
    cx_item("function_call", name="exec_command", arguments=json.dumps({"cmd": "python -m cProfile x"}), call_id="c1"),
    cx_output("c1", "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nModuleNotFoundError: No module named 'x'\n"),
    # 11-12: a call that succeeds with a long output (JSON form)
    cx_item("function_call", name="shell", arguments=json.dumps({"command": ["bash", "-lc", "ls -R"]}), call_id="c2"),
    cx_output("c2", out_json("./a\n" * 20000, 0)),
    # 13: JSON form, non-zero exit code at the very end of a long output
    cx_output("c3", out_json("compiling...\n" * 5000 + "linker failed", 2)),
    # 14: an image output: dropped
    cx_output("c4", [{"type": "input_image", "image_url": "data:image/png;base64," + png(200_000)}]),
    # 15-16: the assistant's answer, twice (event_msg first this time)
    cx_event("agent_message", message="Each run re-reads cursor.json; cache stat results instead."),
    cx_item("message", role="assistant", content=[{"type": "output_text",
            "text": "Each run re-reads cursor.json; cache stat results instead."}]),
    # 17: a custom tool (apply_patch) that failed verification
    cx_item("custom_tool_call", name="apply_patch", call_id="c5", input="*** Begin Patch\n…"),
    cx_item("custom_tool_call_output", call_id="c5", output=out_json("apply_patch verification failed: hunk 2 "
                                                                      "does not match", 1)),
    # 19: a bare acknowledgement, in both channels
    cx_item("message", role="user", content=[{"type": "input_text", "text": "ok"}]),
    cx_event("user_message", message="ok"),
    jl({"timestamp": "2026-11-29T10:09:00.000Z", "type": "compacted", "payload": {"message": "summary " * 300}}),
]


def test_transcript_gives_exactly_the_expected_turns():
    turns, counters = parse("codex", TRANSCRIPT)
    assert brief(turns) == [
        ("user", "Why is the no-op run slow on 10k files?"),
        ("tool", "[tool exec failed: exec_command: ModuleNotFoundError: No module named 'x']"),
        ("tool", "[tool exec failed: tool: linker failed]"),
        ("assistant", "Each run re-reads cursor.json; cache stat results instead."),
        ("tool", "[tool exec failed: apply_patch: apply_patch verification failed: hunk 2 does not match]"),
    ]
    assert counters["duplicate"] == 3
    assert counters["injected"] == 2
    assert all(t.session_id == "x1" for t in turns)
    assert turns[0].ts == 1795946401000


def test_bytes_pretest_skips_the_bulk():
    skipped = [i for i, line in enumerate(TRANSCRIPT) if not FMT.could_yield(line)]
    # developer, turn_context, token_count, reasoning, long ok output, image output, compacted
    assert skipped == [1, 4, 7, 8, 12, 14, 21]


def test_bytes_pretest_loses_nothing():
    assert_filter_loses_nothing("codex", TRANSCRIPT)


def test_a_repeated_message_in_the_same_channel_is_kept():
    say = cx_item("message", role="user", content=[{"type": "input_text", "text": "run the benchmark again please"}])
    turns, _ = parse("codex", [FIRST_LINES["codex"], say, say])
    assert len(turns) == 2


def test_only_event_messages_are_kept_when_items_are_missing():
    lines = [FIRST_LINES["codex"], cx_event("user_message", message="index the docs folder too"),
             cx_event("agent_message", message="Added docs/ to the source roots.")]
    assert brief(parse("codex", lines)[0]) == [("user", "index the docs folder too"),
                                             ("assistant", "Added docs/ to the source roots.")]


def test_exit_code_zero_outputs_are_dropped():
    lines = [FIRST_LINES["codex"],
             cx_output("a", "Exit code: 0\nWall time: 1 seconds\nOutput:\n" + "fine\n" * 500),
             cx_output("b", "Process exited with code 0\n" + "fine\n" * 500),
             cx_output("c", out_json("fine\n" * 500, 0))]
    assert not any(FMT.could_yield(line) for line in lines[1:])
    assert parse("codex", lines, filtered=False)[0] == []


def test_failure_shapes_the_pretest_must_not_skip():
    lines = [FIRST_LINES["codex"],
             cx_output("a", "Process exited with code 127\nbash: rg: command not found"),
             cx_output("b", "Exit code: 3\nOutput:\n" + "quiet\n" * 5000),
             cx_output("c", out_json("x\n" * 20000, 137)),
             cx_output("d", "failed to parse function arguments: missing field `cmd`"),
             cx_output("e", out_json("\n\nTraceback (most recent call last):\n" + "  frame\n" * 4000, 0))]
    assert all(FMT.could_yield(line) for line in lines)
    turns, _ = parse("codex", lines)
    assert len(turns) == 5
    assert turns[0].text == "[tool exec failed: tool: bash: rg: command not found]"
    assert turns[1].text == "[tool exec failed: tool: quiet]"
    assert_filter_loses_nothing("codex", lines)


def test_legacy_rollout_without_envelopes():
    lines = [jl({"id": "0198-legacy", "timestamp": "2025-08-01T10:00:00.000Z", "instructions": None}),
             jl({"record_type": "state"}),
             jl({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "keep ids stable"}]}),
             jl({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Ids are now per start byte."}]})]
    turns, _ = parse("codex", lines)
    assert brief(turns) == [("user", "keep ids stable"), ("assistant", "Ids are now per start byte.")]
    assert turns[0].session_id == "0198-legacy"


def test_other_writers_spacing_and_escapes_give_the_same_turns():
    from sources_lines import respaced

    assert brief(parse("codex", respaced(TRANSCRIPT))[0]) == brief(parse("codex", TRANSCRIPT)[0])
