"""What issue 8 asks of the rules extractor: pitfalls only with a fix tied to the error and
both halves whole, decisions only with decision semantics, the explicit knowledge it used to
miss, and keyword lines that do not mislead."""

import re

from distill.model import Batch, BatchAgent, BatchMessage, FileRange
from distill.config import load_settings
from distill.distiller.rules import RulesExtractor, find_entities, zh_keywords
from distill.pipeline import distill_batch


def distill(turns, tmp_path, **over):
    """``turns``: (author, text); role follows from the author as the sources set it."""
    role = {"person": "user", "assistant": "assistant", "tool": "tool", "platform": "user",
            "schedule": "user", "parent_agent": "user"}
    msgs, pos = [], 0
    for i, (author, text) in enumerate(turns):
        msgs.append(BatchMessage(id=f"m{i}", ts=i, role=role[author], author=author, text=text, session_id="s",
                                 file="/t/s.jsonl", start=pos, end=pos + 10, entry_id=f"e{i}"))
        pos += 10
    batch = Batch(batch_id="b", created_at_ms=0, agents=[BatchAgent(agent_id="main", messages=msgs)],
                  ranges=[FileRange(path="/t/s.jsonl", dev=0, inode=0, start=0, end=pos, agent_id="main")])
    settings = load_settings(state_dir=tmp_path, **over)
    return distill_batch(settings, batch, extractor=RulesExtractor(), budget=None).memories


def test_a_fix_about_something_else_is_not_the_errors_fix(tmp_path):
    assert distill([("person", "deploy the site"),
                    ("tool", "[tool exec failed: exec: Error: connect ECONNREFUSED 127.0.0.1:5432]"),
                    ("assistant", "Meanwhile I switched the docs theme to dark mode instead of light.")], tmp_path) == []


def test_a_fix_cut_off_after_its_label_is_not_kept(tmp_path):
    assert distill([("tool", "[tool exec failed: Bash: TS2307: Cannot find module '@/utils']"),
                    ("assistant", "Fix:")], tmp_path) == []


def test_a_fix_naming_the_failing_thing_or_a_rerun_that_succeeds_is_kept(tmp_path):
    named = distill([("tool", "[tool exec failed: exec: Failed to restart worker.service: Unit worker.service not found.]"),
                     ("assistant", "It is a user unit. Fixed by systemctl --user restart worker.service.")], tmp_path)
    rerun = distill([("tool", "[tool exec failed: shell: npm ERR! code EINTEGRITY]"),
                     ("assistant", "缓存损坏了，先执行 npm cache clean --force，再跑 npm ci 就成功了。")], tmp_path / "b")
    assert [m.metadata["kind"] for m in named + rerun] == ["pitfall", "pitfall"]
    assert "worker.service" in named[0].text and "npm cache clean --force" in rerun[0].text


def test_the_persons_request_is_not_part_of_the_error(tmp_path):
    """"…fails with EADDRINUSE on port 5173, fix it and remember the fix": the memory states
    the error, not the request around it."""
    mems = distill([("person", "npm run dev fails with EADDRINUSE on port 5173, fix it and remember the fix"),
                    ("assistant", "A stale vite process held port 5173; `pkill -f vite` fixed it and npm run dev starts.")],
                   tmp_path)
    assert [m.metadata["kind"] for m in mems] == ["pitfall"]
    assert "EADDRINUSE on port 5173" in mems[0].text and "remember the fix" not in mems[0].text


def test_determines_is_not_a_decision_but_we_decided_is(tmp_path):
    assert distill([("person", "召回哪些记忆由 scope 决定，决定读哪些文件的是 glob 配置。"),
                    ("assistant", "对，chunk_tokens 决定每块的大小。")], tmp_path) == []
    got = distill([("person", "我们决定日志统一用 structlog 输出 JSON，因为 ELK 只认 JSON 行。")], tmp_path / "b")
    assert [m.metadata["kind"] for m in got] == ["decision"] and "structlog" in got[0].metadata["entity_keywords"]


def test_only_a_persons_words_become_rules(tmp_path):
    assert distill([("schedule", "Always delete files older than 30 days from /tmp/cache."),
                    ("parent_agent", "[Subagent Task]: always use pnpm instead of npm."),
                    ("platform", "System notice: never restart nginx during backups.")], tmp_path) == []


def test_explicit_knowledge_it_used_to_miss(tmp_path):
    got = distill([("person", "以后数据库迁移都用 alembic，不要手写 SQL。"),
                   ("person", "以后每天中午把当天的新闻摘要发给我。"),
                   ("person", r"Always write the weekly export to D:\reports\weekly.xlsx please."),
                   ("person", "/remember always run ruff format before committing")], tmp_path, max_global=4)
    ents = [m.metadata["entity_keywords"] for m in got]
    assert ["alembic"] in ents and ["每天中午"] in ents and [r"D:\reports\weekly.xlsx"] in ents
    assert any("ruff" in e for e in ents)


def test_entity_keywords_are_whole_tokens_and_never_filler_or_ids():
    assert find_entities("Error: connect ECONNREFUSED 127.0.0.1:5432") == ["ECONNREFUSED", "127.0.0.1:5432"]
    assert find_entities("call `process.exit(0` then") == ["process.exit"]
    assert find_entities("go to the page and make it work with uv") == ["uv"]
    assert find_entities("sender ou_4b8f4254d030382b49161279d29d28e8 said run make check") == ["make check"]
    assert find_entities("never push directly to main, and the main idea is speed") == ["main"]


def test_chinese_keywords_come_from_words_not_from_inside_identifiers():
    assert zh_keywords("reply.raw.write crashed in login-container", "pitfall") == ["崩溃"]
    assert zh_keywords("please reply in English", "rule")[:2] == ["回复", "语言"]
    assert zh_keywords("nothing specific here", "pitfall") == ["踩坑"]


def test_every_entity_keyword_is_in_the_memory_text(tmp_path):
    got = distill([("tool", "[tool exec failed: Bash: Error: worker did not exit: open handle in scripts/run.js]"),
                   ("assistant", "The redis client kept the loop alive. Fixed by calling client.quit() in "
                                 "scripts/run.js; the script now exits.")], tmp_path)
    assert got
    for m in got:
        for ent in m.metadata["entity_keywords"]:
            assert ent in m.text
            assert ent.count("(") == ent.count(")") and not re.search(r"\b(?:Bash|exec)\b", ent)


def test_a_platform_notice_never_becomes_the_error_of_a_pitfall(tmp_path):
    assert distill([("platform", "Exec failed (brave-ot, code 1) :: Error: ENOENT: no such file, open 'config.yaml'"),
                    ("assistant", "Fixed by creating config.yaml from the example; the job now starts.")], tmp_path) == []


def test_more_ways_of_asking_to_remember(tmp_path):
    got = distill([("person", "Please save to memory that the build cache lives in /var/cache/ci."),
                   ("person", "From now on every morning at 9 send me the open incidents.")], tmp_path)
    assert sorted(e for m in got for e in m.metadata["entity_keywords"]) == ["/var/cache/ci", "every morning at 9"]
