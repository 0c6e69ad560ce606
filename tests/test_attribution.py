"""Every envelope, notice, schedule prompt, sub-agent spec and IDE-context shape, written as a
real transcript and read by the real tails (what ``distill run`` does): the batch holds the
person's own words with the envelope gone, and says who wrote each turn."""

import json
from pathlib import Path

import pytest

from distill.tails.ledger import create_batch
from distill.config import load_settings

from tests.quality_set import write_item

SUB = ("[Subagent Context] You are running as a subagent (depth 1/1). Results auto-announce to your "
       "requester; do not busy-poll for status.\n\n[Subagent Task]: ")
SHAPES = [
    # (format, user text, author, text the batch must hold (None: no turn), strings it must not hold)
    ("openclaw", "System: [2026-03-01 15:40:52 GMT+8] Feishu[openclaw] DM from ou_4b8f4254d030382b49161279d29d28e8: "
                 "以后数据库迁移都用 alembic", "person", "以后数据库迁移都用 alembic", ["ou_4b8f", "Feishu", "System:"]),
    ("openclaw", "System: [2026-04-13 02:02:07 GMT+8] Feishu[cto] DM | 李智 (ou_3e3724bbf84b5fac8dc0c1f524563d5a) "
                 "[msg:om_x100b5289af232ca4c2c69b79b962d45]\n\nConversation info (untrusted metadata):\n```json\n"
                 "{\n  \"message_id\": \"om_x100b5289af232ca4c2c69b79b962d45\"\n}\n```\n\n帮我把 worker 服务重启一下",
     "person", "帮我把 worker 服务重启一下", ["ou_3e37", "om_x100b", "李智"]),
    ("openclaw", "[Telegram Alice Chen id:5551203 +2m 2026-03-02 09:14 UTC] release with make release [message_id: 812]",
     "person", "release with make release", ["5551203", "message_id", "Telegram"]),
    ("openclaw", "[Telegram Bob Li id:88120 +1m 2026-03-02 10:01 UTC] hi there! [message_id: 901]", None, None, []),
    # the audit's newer Feishu message: header, two metadata blocks, then the stamped message;
    # the stamp goes too, as it does when it opens a turn
    ("openclaw", "System: [2026-12-01 10:02:07 GMT+8] Feishu[cto] DM | 王磊 (ou_7f3a9c21d4e5b6a7c8d9e0f1a2b3c4d5) "
                 "[msg:om_x100b4c2d9e8f7a6b5c4d3e2f1a0b9c8d]\n\nConversation info (untrusted metadata):\n```json\n"
                 "{\n  \"message_id\": \"om_x100b4c2d9e8f7a6b5c4d3e2f1a0b9c8d\",\n  \"sender\": \"王磊\",\n"
                 "  \"timestamp\": \"Mon 2026-12-01 10:02 GMT+8\"\n}\n```\n\nSender (untrusted metadata):\n```json\n"
                 "{\n  \"label\": \"王磊 (ou_7f3a9c21d4e5b6a7c8d9e0f1a2b3c4d5)\",\n  \"name\": \"王磊\"\n}\n```\n\n"
                 "[Mon 2026-12-01 10:02 GMT+8] 以后数据库迁移都用 alembic，不要再手写 SQL 脚本了。",
     "person", "以后数据库迁移都用 alembic，不要再手写 SQL 脚本了。", ["[Mon", "GMT+8", "ou_7f3a", "王磊", "untrusted"]),
    ("openclaw", "System: [2026-03-05 08:00:01 GMT+1] WhatsApp gateway connected as +15550001111.\n\n"
                 "[WhatsApp +15552223333 +1m 2026-03-05 08:00 GMT+1] backups go to /mnt/backup/nightly",
     "person", "backups go to /mnt/backup/nightly", ["gateway connected", "WhatsApp"]),
    ("openclaw", "System: [2026-03-01 15:37:04 GMT+8] Exec completed (crisp-cl, code 0) :: cleanup done\n"
                 "System: [2026-03-01 15:38:10 GMT+8] Exec failed (brave-ot, code 1) :: Error: ENOENT config.yaml",
     "platform", "Exec completed (crisp-cl, code 0) :: cleanup done", ["System: ["]),
    ("openclaw", "[System Message] [sessionId: 605f4a22] A cron job \"nightly-backup\" just completed successfully.",
     "platform", "[System Message]", []),
    ("openclaw", "[cron:8f2a91 daily-report] 每天早上汇总 nginx 的 error.log", "schedule", "每天早上汇总 nginx 的 error.log",
     ["cron:8f2a91"]),
    ("openclaw", "Pre-compaction memory flush. Store durable memories only in memory/2026-05-01.md.", None, None, []),
    ("openclaw", "[Sat 2026-04-18 15:10 GMT+8] " + SUB + "Clone the repo and always use pnpm.", "parent_agent",
     "[Subagent Task]: Clone the repo and always use pnpm.", []),
    ("claude-code", "[SUGGESTION MODE: Suggest what the user might naturally type next into Claude Code.]", None, None, []),
    ("claude-code", "<command-message>remember is running…</command-message>\n<command-name>/remember</command-name>\n"
                    "<command-args>always run ruff format before committing</command-args>",
     "person", "/remember always run ruff format before committing", ["command-"]),
    ("claude-code", "<command-name>/clear</command-name>\n<command-args></command-args>", None, None, []),
    # Claude Code's "!" shell mode: the command and its output are the tool's, never the person's
    ("claude-code", "<bash-input>cat CONTRIBUTING.md</bash-input>", "tool", "$ cat CONTRIBUTING.md", ["bash-input"]),
    ("claude-code", "<bash-stdout># Contributing\n\nAlways run `make lint-all` before pushing.\nWe decided to use Postgres "
                    "16 because the JSON path queries need it.</bash-stdout><bash-stderr></bash-stderr>", None, None, []),
    ("claude-code", "<bash-stdout></bash-stdout><bash-stderr>cat: NOTES.md: No such file or directory</bash-stderr>",
     "tool", "[tool exec failed: bash: cat: NOTES.md: No such file or directory]", ["bash-std"]),
    # hook output and feedback, background-task notifications, teammate messages: the platform's
    ("claude-code", "<user-prompt-submit-hook>Remember: always use the staging database for migrations."
                    "</user-prompt-submit-hook>", "platform", "Remember: always use the staging database", ["<user-prompt"]),
    ("claude-code", "Why does the login test fail?\n\n<user-prompt-submit-hook>Remember: always use the staging database."
                    "</user-prompt-submit-hook>", "person", "Why does the login test fail?", ["staging", "hook"]),
    ("claude-code", "Stop hook feedback:\n- [/home/ana/bin/check.sh]: Always run `pnpm test --run` before finishing the "
                    "task.", "platform", "Always run `pnpm test --run`", []),
    ("claude-code", "<task-notification>\n<task-id>b7f2c1</task-id>\n<status>completed</status>\n<summary>Background "
                    "command \"Run the test suite\" completed (exit code 0)</summary>\n</task-notification>\nRead the output "
                    "file to retrieve the result: /tmp/claude/tasks/b7f2c1.output", "platform",
     "Background command \"Run the test suite\" completed (exit code 0)", ["task-id", "Read the output"]),
    ("claude-code", "<teammate-message teammate_id=\"team-lead\" color=\"blue\" summary=\"deploy rule\">We always deploy "
                    "with the blue-green script.</teammate-message>", "platform",
     "We always deploy with the blue-green script.", ["teammate_id"]),
    ("codex", "# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## Open tabs:\n- app.py: src/app.py\n\n"
              "## My request for Codex:\nrun pytest with -x", "person", "run pytest with -x", ["Active file", "Open tabs"]),
    ("codex", "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>\nAlways use 4 spaces.\n</INSTRUCTIONS>",
     None, None, []),
    ("codex", "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>", None, None, []),
]


def read(tmp_path: Path, item: dict) -> list[dict]:
    over = write_item(tmp_path, {"agent": "main", **item})
    made = create_batch(load_settings(state_dir=tmp_path / "state", db=tmp_path / "db", **over))
    if made.action != "created":
        return []
    batch = json.loads(Path(made.batch_file).read_text())
    return [m for a in batch["agents"] for m in a["messages"]]


@pytest.mark.parametrize("fmt,text,author,held,never", SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def test_shape_is_read_and_attributed(tmp_path, fmt, text, author, held, never):
    msgs = read(tmp_path, {"id": "s1", "format": fmt, "turns": [["user", text], ["assistant", "I will look into the worker config now."]]})
    users = [m for m in msgs if m["role"] == "user"]
    assert [m["author"] for m in msgs if m["role"] == "assistant"] == ["assistant"]
    if author is None:
        assert users == []
        return
    (turn,) = users
    assert turn["author"] == author and held in turn["text"]
    for s in never:
        assert s not in turn["text"]


def test_a_sub_agent_transcript_is_its_parents_words_and_its_own_work(tmp_path):
    msgs = read(tmp_path, {"id": "side", "format": "claude-code", "sidechain": True, "turns": [
        ["user", "Search for the config loader. Never edit files under migrations/."],
        ["tool_error", "Bash", "ModuleNotFoundError: No module named 'tomli'"],
        ["assistant", "tomli is missing; installed it with uv add tomli."]]})
    assert [(m["role"], m["author"]) for m in msgs] == [
        ("user", "parent_agent"), ("tool", "tool"), ("assistant", "assistant")]


def test_a_hook_message_in_a_sub_agent_transcript_is_still_the_platforms(tmp_path):
    msgs = read(tmp_path, {"id": "side", "format": "claude-code", "sidechain": True, "turns": [
        ["user", "Search for the config loader."],
        ["user", "SubagentStop hook feedback:\n- [/home/ana/bin/check.sh]: Always run the linter first."],
        ["assistant", "The loader is in settings/load.py."]]})
    assert [(m["role"], m["author"]) for m in msgs] == [
        ("user", "parent_agent"), ("user", "platform"), ("assistant", "assistant")]


@pytest.mark.parametrize("text,author,said", [
    ("[message_id: om_x100b531f570748a4eea0b1d53f8d0e7]\n听风: 以后每天中午发日报给我", "person", "以后每天中午发日报给我"),
    ("[WIP] the branch is not ready", "person", "[WIP] the branch is not ready"),
    ("System: [2026-12-01 10:02:07 GMT+8] Feishu[cto] DM | 王磊 (ou_7f3a9c21d4e5b6a7c8d9e0f1a2b3c4d5)\n\n"
     "[Mon 2026-12-01 10:02 GMT+8] 以后数据库迁移都用 alembic", "person", "以后数据库迁移都用 alembic"),
    ("[Telegram Alice id:5551203 +2m 2026-03-02 09:14 UTC] [Tue 2026-03-02 09:14 UTC] ship it", "person", "ship it"),
    ("System: [2026-03-01 15:37:04 GMT+8] Exec completed (a, code 0) :: ok\n\nplease also run the linter", "person",
     "please also run the linter"),
    ("System (untrusted): [2026-04-18 14:58:51 GMT+8] Exec failed (b, code 2) :: boom", "platform",
     "Exec failed (b, code 2) :: boom"),
    ("# Context from my IDE setup:\n\n## Open tabs:\n- a.py: a.py", "platform", None),
])
def test_attribute_keeps_only_the_persons_words(text, author, said):
    from distill.text.envelopes import attribute

    assert attribute(text) == (author, said)


def test_claude_code_shell_hook_and_notification_text_never_becomes_the_users_words(tmp_path):
    """The audit's session: a ``!cat`` of a contributing guide, a hook's reminder, a Stop hook's
    feedback, a task notification and a teammate's message, each stating a rule or decision in
    the first person; only the person's own rule may become "the user said"."""
    from distill.pipeline import distill_batch
    from distill.distiller.rules import RulesExtractor
    from distill.tails.ledger import load_batch

    over = write_item(tmp_path, {"agent": "main", "id": "s1", "format": "claude-code", "turns": [
        ["user", "<bash-input>cat CONTRIBUTING.md</bash-input>"],
        ["user", "<bash-stdout># Contributing\n\nAlways run `make lint-all` before pushing; never commit directly to the "
                 "release branch.\nWe decided to use Postgres 16 because the JSON path queries need it.</bash-stdout>"
                 "<bash-stderr></bash-stderr>"],
        ["user", "<user-prompt-submit-hook>Remember: always use the staging database for migrations."
                 "</user-prompt-submit-hook>"],
        ["user", "Stop hook feedback:\n- [/home/ana/bin/check.sh]: Always run `pnpm test --run` before finishing the task."],
        ["user", "<task-notification>\n<task-id>b7f2c1</task-id>\n<status>completed</status>\n<summary>We decided to "
                 "keep the nightly job.</summary>\n</task-notification>"],
        ["user", "<teammate-message teammate_id=\"team-lead\">We always deploy with the blue-green script."
                 "</teammate-message>"],
        ["user", "Always use uv instead of pip in this repo.\n\n<user-prompt-submit-hook>Never touch prod."
                 "</user-prompt-submit-hook>"],
        ["assistant", "Understood, I will use uv from now on."]]})
    settings = load_settings(state_dir=tmp_path / "state", db=tmp_path / "db", **over)
    made = create_batch(settings)
    batch = load_batch(Path(made.batch_file))
    authors = [(m.author, m.text[:12]) for a in batch.agents for m in a.messages]
    assert authors == [("tool", "$ cat CONTRI"), ("platform", "Remember: al"), ("platform", "Stop hook fe"),
                       ("platform", "We decided t"), ("platform", "We always de"), ("person", "Always use u"),
                       ("assistant", "Understood, ")]
    texts = [m.text for m in distill_batch(settings, batch, extractor=RulesExtractor(), budget=None).memories]
    said = " ".join(texts)
    for injected in ("Postgres 16", "make lint-all", "staging database", "pnpm test", "nightly job", "blue-green",
                     "Never touch prod", "bash-std"):
        assert injected not in said
    assert any("Always use uv instead of pip" in t for t in texts)
