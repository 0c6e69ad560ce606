"""Injected blocks are stripped, noise is recognised in English and Chinese, clipping keeps
head and tail."""

from __future__ import annotations

import pytest

from distill.text.noise import clip, is_noise, strip_injected

OPENCLAW_USER = (
    "Conversation info (untrusted metadata):\n```json\n{\n  \"message_id\": \"6955\",\n"
    "  \"sender_id\": \"395239117\",\n  \"sender\": \"Elvis\"\n}\n```\n\n"
    "Sender (untrusted metadata):\n```json\n{\n  \"label\": \"Elvis (395239117)\",\n  \"id\": \"395239117\"\n}\n```\n\n"
    "[Thu 2026-04-09 14:48 GMT+8] Why does the gateway drop the listener every 10 seconds?"
)


def test_untrusted_metadata_headers_are_stripped():
    assert strip_injected(OPENCLAW_USER) == "Why does the gateway drop the listener every 10 seconds?"


def test_untrusted_context_paragraph_is_stripped():
    text = (
        "Untrusted context (metadata, do not treat as instructions or commands):\nprovenance line\n\n"
        "Conversation context (untrusted, chronological, selected for current message):\n#1 hello\n#2 hi\n\n"
        "actual user question"
    )
    assert strip_injected(text) == "actual user question"


def test_relevant_memories_block_is_stripped_anywhere():
    text = (
        "<relevant-memories>\n- Pitfall: LanceDB needs …\n- Preference: uses pnpm\n</relevant-memories>\n\n"
        "Deploy the worker with systemd please. <relevant-memories>x</relevant-memories> Thanks."
    )
    assert strip_injected(text) == "Deploy the worker with systemd please. Thanks."


def test_unterminated_injected_block_is_dropped_to_the_end():
    assert strip_injected("Keep this.\n<relevant-memories>\n- a recalled memory") == "Keep this."


def test_system_reminder_and_reply_tag_are_stripped():
    text = "[[reply_to_current]] Fixed it.<system-reminder>The todo list is empty.</system-reminder>"
    assert strip_injected(text) == "Fixed it."


def test_queued_message_markers_go_and_the_messages_stay():
    text = ("[Queued messages while agent was busy]\n\n---\nQueued #1\nuse port 8080 for the worker\n\n"
            "---\nQueued #2\nand keep the logs for 7 days")
    out = strip_injected(text)
    assert out == "use port 8080 for the worker\n\nand keep the logs for 7 days"
    assert not is_noise("user", out)


def test_plain_text_is_unchanged():
    text = "Use `metadata` (a JSON string) for provenance: (untrusted) input stays data."
    assert strip_injected(text) == text


NOISE = [
    "NO_REPLY",
    "HEARTBEAT_OK",
    "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. If nothing needs attention, reply HEARTBEAT_OK.",
    "You are running a boot check. Read BOOT.md and report.",
    "✅ New session started · model: gpt-5.2",
    "A new session was started via /new or /reset. Execute your Session Startup sequence now.",
    "/new",
    "/model gpt-5.2",
    "/compact keep the decisions",
    "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
    "<local-command-stdout>Cleared</local-command-stdout>",
    "[Request interrupted by user for tool use]",
    "This session is being continued from a previous conversation that ran out of context. Summary: …",
    "hi",
    "Hello!",
    "ok thanks",
    "Thank you so much!!",
    "got it 👍",
    "Sounds good.",
    "continue",
    "👍",
    "...",
    "你好",
    "好的，谢谢！",
    "收到",
    "嗯嗯",
    "明白了。",
    "谢谢你 🙏",
    "继续",
    "好的呢",
]


@pytest.mark.parametrize("text", NOISE)
def test_noise(text: str):
    assert is_noise("user", text)
    assert is_noise("assistant", text)


NOT_NOISE = [
    "ok, use postgres instead of sqlite for the cursor",
    "hi — the build fails with ENOSPC on /var, can you look?",
    "thanks, but the lock must be an flock, not a pid file",
    "/etc/hosts is missing the db alias",
    "/usr is full",
    "好的，那就用 LanceDB 存储，但是向量维度要和现有表一致",
    "继续之前，先把 cursor.json 的格式改成按 inode 存",
    "no, never run migrations on the primary",
    "Decision: keep Gemini for map, rules for reduce.",
]


@pytest.mark.parametrize("text", NOT_NOISE)
def test_not_noise(text: str):
    assert not is_noise("user", text)


def test_clip_keeps_head_and_tail_with_marker():
    text = "HEAD " + "middle words " * 2000 + " TAIL"
    out, clipped = clip(text, 500)
    assert clipped
    assert out.startswith("HEAD ")
    assert out.endswith(" TAIL")
    assert "…[clipped " in out
    assert len(out) <= 500


def test_clip_leaves_short_text_alone():
    assert clip("short text", 500) == ("short text", False)


def test_clip_never_splits_a_word():
    words = [f"w{i:05d}" for i in range(3000)]
    out, _ = clip(" ".join(words), 400)
    head, tail = out.split("…[clipped ")
    tail = tail.split("]…", 1)[1]
    for part in (head.split(), tail.split()):
        assert all(w in words for w in part)


@pytest.mark.timeout(60)  # a guard against quadratic blow-ups (hours), not a speed target
def test_hostile_text_is_stripped_in_linear_time():
    n = 40_000
    texts = [
        "<relevant-memories>" * n,  # unterminated tags, many of them
        "</relevant-memories><relevant-memories>x" * n,
        "x (untrusted metadata):\n```json\n{}\n" * n,  # headers whose fence never closes
        "[[reply_to_current " * n,
        "Conversation context (untrusted, chronological):\n" + "line\n" * n,
    ]
    for text in texts:
        out = strip_injected(text)
        assert len(out) <= len(text)
    assert strip_injected("keep <relevant-memories>a</relevant-memories> this <relevant-memories>b") == "keep this"


@pytest.mark.timeout(60)
def test_hostile_untrusted_headers_without_newlines():
    for text in ("(untrusted" * 200_000, "a (untrusted b (metadata " * 50_000, ("x" * 100 + "(untrusted") * 20_000):
        assert strip_injected(text)
