"""The offline rules extractor on transcripts in Chinese, English and both: it finds the explicit
preferences, decisions and error-then-fix pitfalls, and nothing from small talk."""

from distill.config import load_settings
from distill.distiller.rules import RulesExtractor, find_entities
from distill.pipeline import distill_batch

from tests.distiller_helpers import batch_of


def distill(turns, tmp_path, agent="main", **over):
    settings = load_settings(state_dir=tmp_path, **over)
    return distill_batch(settings, batch_of({agent: turns}), extractor=RulesExtractor(), budget=None)


def texts(result):
    return [m.text for m in result.memories]


def test_english_preference_rule_decision_and_pitfall(tmp_path):
    res = distill([
        ("user", "Hi! How was your weekend?"),
        ("assistant", "Great, thanks for asking. What are we doing today?"),
        ("user", "From now on, always use pnpm instead of npm in this repo."),
        ("assistant", "Understood. Installing dependencies."),
        ("tool", "[tool exec failed: pnpm install: ERR_PNPM_OUTDATED_LOCKFILE Cannot install with frozen-lockfile]"),
        ("assistant", "The lockfile is stale. Fixed it by running pnpm install --no-frozen-lockfile and committing pnpm-lock.yaml."),
        ("user", "We decided to deploy only on Debian 12. Because the production hosts run it."),
    ], tmp_path)
    got = {m.metadata["kind"]: m for m in res.memories}
    assert set(got) == {"rule", "pitfall", "decision"}
    assert "pnpm" in got["rule"].metadata["entity_keywords"] and "npm" in got["rule"].metadata["entity_keywords"]
    pit = got["pitfall"]
    assert "ERR_PNPM_OUTDATED_LOCKFILE" in pit.text and "--no-frozen-lockfile" in pit.text
    assert pit.text.startswith("Pitfall: ") and " Fix: " in pit.text
    assert len(pit.metadata["evidence"]) == 2
    assert "because the production hosts" in got["decision"].text.lower()
    assert got["decision"].scope == "agent:main" and got["rule"].scope == "global"
    assert not any("weekend" in t.lower() for t in texts(res))
    for m in res.memories:
        kw = m.text.rsplit("\n", 1)[1]
        assert kw.startswith("Keywords (zh): ") and 3 <= len(kw.split(": ", 1)[1].split("; ")) <= 8
        assert any("\u4e00" <= ch <= "\u9fff" for ch in kw)  # at least one Chinese phrase


def test_chinese_rules_preferences_and_pitfall(tmp_path):
    res = distill([
        ("user", "你好呀，今天天气真不错"),
        ("assistant", "是的！有什么可以帮你？"),
        ("user", "记住：以后都用 uv 管理依赖，不要再用 pip install 了。"),
        ("user", "我更喜欢用 ruff 做格式化，不用 black。"),
        ("tool", "[tool exec failed: Error: listen EADDRINUSE: address already in use :::3000]"),
        ("assistant", "端口 3000 被占用了，原因是上次的 node 进程没退出，kill 掉之后就好了。"),
        ("user", "我们决定把数据库从 sqlite 迁移到 postgres，因为要多进程写入。"),
        ("user", "谢谢，辛苦了"),
    ], tmp_path, max_per_agent=5, max_global=5)
    kinds = sorted(m.metadata["kind"] for m in res.memories)
    assert kinds == ["decision", "pitfall", "preference", "rule"]
    by_kind = {m.metadata["kind"]: m for m in res.memories}
    assert "uv" in by_kind["rule"].metadata["entity_keywords"]
    assert "ruff" in by_kind["preference"].metadata["entity_keywords"]
    assert "EADDRINUSE" in by_kind["pitfall"].metadata["entity_keywords"]
    assert {"sqlite", "postgres"} <= set(by_kind["decision"].metadata["entity_keywords"])
    assert "端口占用" in by_kind["pitfall"].metadata["keywords_zh"]
    assert not any("天气" in t or "辛苦" in t for t in texts(res))


def test_mixed_language_traditional_and_questions(tmp_path):
    res = distill([
        ("user", "記住 deploy 前一定要跑 make check"),
        ("user", "Should we always use docker compose for local dev?"),
        ("assistant", "Maybe; let's decide later."),
        ("user", "我們決定用 Caddy 取代 nginx，因為自動 HTTPS。"),
        ("user", "python main.py 报错 ModuleNotFoundError: No module named 'httpx'"),
        ("assistant", "原因是没有激活 .venv，先 source .venv/bin/activate 再运行就可以了。"),
    ], tmp_path, max_per_agent=5, max_global=5)
    kinds = sorted(m.metadata["kind"] for m in res.memories)
    assert kinds == ["decision", "pitfall", "rule"]
    joined = "\n".join(texts(res))
    assert "docker compose" not in joined  # a question is not a rule
    pit = next(m for m in res.memories if m.metadata["kind"] == "pitfall")
    assert "ModuleNotFoundError" in pit.metadata["entity_keywords"]
    assert ".venv/bin/activate" in pit.metadata["entity_keywords"]


def test_small_talk_only_gives_nothing(tmp_path):
    res = distill([
        ("user", "good morning!"),
        ("assistant", "Good morning! How can I help?"),
        ("user", "I always forget my umbrella when it rains, haha."),
        ("user", "I prefer tea over coffee in the afternoon."),
        ("user", "以后再说吧，我先去吃饭了"),
        ("assistant", "好的，祝你用餐愉快！"),
        ("user", "I don't remember where I left my keys."),
        ("user", "That failed miserably, my cake burned."),
        ("assistant", "Oh no! Next time it will work, I'm sure."),
    ], tmp_path)
    assert res.memories == []


def test_deterministic_and_entities_verbatim(tmp_path):
    turns = [("user", "Remember that `DISTILL_DB` must point at ~/.openclaw/memory/lancedb-pro on every host.")]
    a, b = distill(turns, tmp_path), distill(turns, tmp_path)
    assert [m.model_dump() for m in a.memories] == [m.model_dump() for m in b.memories]
    (mem,) = a.memories
    for ent in mem.metadata["entity_keywords"]:
        assert ent in turns[0][1]
    assert "DISTILL_DB" in mem.metadata["entity_keywords"]
    assert "~/.openclaw/memory/lancedb-pro" in mem.metadata["entity_keywords"]


def test_find_entities_shapes():
    ents = find_entities("run `uv sync --frozen` then pip install requests==2.31; see src/app/main.py, "
                         "E0433 and HTTP 429 on port 8080 with PermissionError and EACCES, set MAX_RETRIES", limit=20)
    for want in ("uv sync --frozen", "requests==2.31", "src/app/main.py", "429", "8080", "PermissionError",
                 "EACCES", "MAX_RETRIES", "E0433"):
        assert want in ents or any(want in e for e in ents), (want, ents)
