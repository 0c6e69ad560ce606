"""The keyword lines that let a question in one language find a memory in the other."""

from __future__ import annotations

import pytest

from distill.store.dedup import content_hash
from distill.text.keywords import (GENERIC, concept_share, grounded, query_concepts, translate_query, with_keywords,
                                   zh_keywords)


def zh_line(text: str) -> list[str]:
    return [w.strip() for w in text.splitlines()[-1].removeprefix("Keywords (zh):").split(";")]


def test_an_english_memory_is_named_in_chinese_by_its_subject():
    assert zh_keywords("Pitfall: docker compose up fails: port 5432 is already allocated.")[0] == "端口占用"
    assert "数据库迁移" in zh_keywords("Rule: run `alembic upgrade head` before deploying the API.")
    assert "日报" in zh_keywords("Preference: the daily report has three bullet points.")
    assert "发票" in zh_keywords("Decision: supplier invoices are paid on the 25th.", limit=6)


def test_generic_words_only_when_nothing_specific_fits():
    line = zh_line(with_keywords("Rule: always send the weekly digest via `mailer.py`.\nKeywords (zh): mailer.py; 规则; 经验"))
    assert line[0] == "mailer.py" and "周报" in line
    assert not GENERIC & set(line)
    assert zh_line(with_keywords("Rule: nothing specific here at all.")) == ["经验"]


def test_a_models_keyword_is_kept_only_when_the_memory_says_it():
    body = "Pitfall: the deploy failed because port 8080 was in use."
    line = zh_line(with_keywords(body + "\nKeywords (zh): 8080; 天气; 部署"))
    assert line[:2] == ["8080", "部署"] and "天气" not in line
    assert grounded("失败", body) and not grounded("天气", body)


def test_a_chinese_memory_gets_an_english_line_and_keywords_never_split_a_fact():
    text = "踩坑：重启 Nginx 之后网站返回 502。原因：后端的 gunicorn 进程没有启动。"
    out = with_keywords(text)
    en = out.splitlines()[-2]
    assert en.startswith("Keywords (en): ") and "restart" in en and "process" in en
    assert out.splitlines()[-1].startswith("Keywords (zh): ")
    assert with_keywords(out) == out  # idempotent
    assert content_hash(out) == content_hash(text)  # dedup reads the body only


def test_a_query_reaches_the_other_language():
    assert {"port", "occupy"} <= set(translate_query("端口被占用怎么办"))
    assert "端口占用" in translate_query("port 3000 already in use")
    assert query_concepts("What is the capital of Australia?")[-1] == ["australia"]  # a name stays a concept


def concept(query: str, word: str) -> list[str]:
    return next(g for g in query_concepts(query) if g[0] == word)


def test_a_query_word_meets_its_own_inflections_and_no_longer_word():
    assert concept_share([concept("How should release tags be named?", "tags")], "规则：发版前先打 tag。") == 1.0
    git = concept("how do I undo the last git commit?", "git")
    assert concept_share([git], "CI takes its secrets from GitHub Actions.") == 0.0
    assert concept_share([git], "Rule: git pull before pushing.") == 1.0
    assert concept_share([["sql"]], "the SQLite file is locked") == 0.0 == concept_share([["cooker"]], "Keywords (en): cooking")


def test_how_a_question_asks_is_not_what_it_asks_about():
    words = [g[0] for g in query_concepts("Where do our logs end up and how long are they kept?")]
    assert "logs" in words and "long" not in words
    assert "won" not in [g[0] for g in query_concepts("The redis container won't start.")]
    assert len([g for g in query_concepts("pip fails on dependencies") if "依赖管理" in g]) == 1  # one word, one concept


def test_a_name_no_dictionary_knows_is_still_a_concept():
    assert ["statefulset"] in query_concepts("What's the difference between a Kubernetes Deployment and a StatefulSet?")


def test_an_adverb_takes_the_sense_of_its_adjective():
    assert "自动" in concept("Can you commit automatically?", "automatically")
    line = zh_line(with_keywords("Rule: never push to main automatically; the owner merges manually."))
    assert {"自动", "手动"} <= set(line) and "自然而然" not in line


@pytest.mark.parametrize("text, right, wrong", [
    ("Pitfall: Postgres connection pool exhausted under load. Fix: put pgbouncer in front.",
     {"连接池", "耗尽", "连接"}, {"池塘", "疲惫", "联系"}),
    ("Pitfall: exec: Failed to connect to bus: No medium found Cause: the user bus is missing in SSH sessions.",
     {"总线", "连接"}, {"公共汽车", "巴士", "中等", "沟通"}),
    ("Rule: always send the weekly digest via `mailer.py`.", {"周报", "发送"}, {"消化"}),
    ("Pitfall: Celery tasks retried instantly and hammered the payment provider's API.", {"重试", "付款"}, {"锤子"}),
    ("Rule: never run `prisma migrate dev` against the shared staging database.", {"预发环境", "迁移"}, {"阶段", "移民"}),
    ("Pitfall: WebSocket connections through nginx dropped after 60 seconds; the proxy forwards nothing after that.",
     {"连接", "断开"}, {"联系", "下降", "废品", "向前"}),
])
def test_an_english_word_is_named_in_its_sense_at_work(text, right, wrong):
    """A keyword in a word's everyday sense (pool → 池塘 "pond", bus → 公共汽车) names nothing the
    memory is about, and makes a Chinese question about ponds or buses find it."""
    zh = set(zh_keywords(text, limit=8))
    assert zh & right and not zh & wrong, zh


def test_a_chinese_memory_is_named_in_english_in_its_sense_at_work():
    """The English line of a Chinese memory is what an English question meets: 部署 is "deploy",
    not "dispose"; 机器人 a bot, not a "mechanical person"; and 不到 / 原来 name nothing."""
    text = with_keywords("踩坑：飞书机器人部署到生产后消息发不出去，接口返回超时。原来的签名校验没改到。")
    en = text.splitlines()[-2].removeprefix("Keywords (en): ").split("; ")
    assert {"deploy", "bot", "message", "timeout"} <= set(en), en
    assert not {"dispose", "mechanical person", "news", "overtime", "original"} & set(en), en
    assert not {"不到", "原来"} & set(zh_line(text))
