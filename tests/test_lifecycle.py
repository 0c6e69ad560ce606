"""Memories that stay true: a newer rule supersedes the older one, a contradiction is kept
beside it, history is kept and shown, use is counted off the table and ranks, cold rows are
archived and restorable. Real local embedder, real LanceDB, the real ``distill`` command."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import pytest

from distill.store import MemoryDraft, MemoryStore
from distill.store.lifecycle import MS_PER_DAY, is_current, now_ms
from pipeline_helpers import settings as pipeline_settings
from pipeline_helpers import write_session
from store_helpers import HashEmbedder, settings_for
from tail_helpers import cli

SESSION_1 = "Remember: always install dependencies with `pip install -r requirements.txt` in the api repo."
SESSION_2 = ("From now on use `uv sync` instead of `pip install -r requirements.txt` in the api repo; "
             "pip is no longer allowed there.")


@pytest.fixture(scope="module")
def embedder():
    from distill.store.embedders import LocalEmbedder

    return LocalEmbedder()


def version(s) -> int:
    return lancedb.connect(str(s.db)).open_table("memories").version


def run(s, *args, **kw):
    return cli(s, *args, env={"DISTILL_DB": str(s.db)}, **kw)


def as_json(s, *args) -> dict:
    return json.loads(run(s, *args, "--json").stdout)


def test_the_issues_pip_then_uv_sessions_leave_uv_current_and_pip_superseded(tmp_path):
    s = pipeline_settings(tmp_path)
    run(s, "init")
    write_session(tmp_path, "main", "s1", [("user", SESSION_1), ("assistant", "Noted.")])
    first = run(s, "run", "--distill").stdout
    assert "1 memories added" in first
    write_session(tmp_path, "main", "s2", [("user", SESSION_2), ("assistant", "Understood.")])
    second = run(s, "run", "--distill").stdout
    assert "1 memories added (1 superseding an older one), 0 skipped as duplicate" in second

    current = as_json(s, "memories", "list")["memories"]
    every = as_json(s, "memories", "list", "--include-history")["memories"]
    assert len(current) == 1 and "uv sync" in current[0]["text"]
    pip = next(m for m in every if m["id"] != current[0]["id"])
    assert "pip install" in pip["text"] and "uv" not in pip["text"].split("Keywords")[0]
    assert pip["metadata"]["superseded_by"] == current[0]["id"] and pip["metadata"]["invalidated_at"] > 0
    assert current[0]["metadata"]["supersedes"] == pip["id"]
    assert current[0]["metadata"]["fact_key"] == pip["metadata"]["fact_key"]

    before = version(s)
    hits = as_json(s, "memories", "search", "how do I install dependencies in the api repo")["memories"]
    assert hits and hits[0]["id"] == current[0]["id"] and all(h["id"] != pip["id"] for h in hits)
    shown = run(s, "memories", "show", current[0]["id"][:8]).stdout
    assert f"supersedes {pip['id']}" in shown and pip["id"][:8] in shown
    assert [m["id"] for m in as_json(s, "memories", "history", pip["id"][:8])["memories"]] == [
        pip["id"], current[0]["id"]]
    assert version(s) == before

    # replaying the first session adds nothing and brings nothing back
    write_session(tmp_path, "main", "s3", [("user", SESSION_1)])
    third = run(s, "run", "--distill").stdout
    assert "0 memories added" in third and "1 skipped as duplicate" in third
    assert [m["id"] for m in as_json(s, "memories", "list")["memories"]] == [current[0]["id"]]


def test_a_contradiction_is_kept_beside_the_row_and_related_to_it(tmp_path, embedder):
    store = MemoryStore.open(settings_for(tmp_path), embedder=embedder)
    old = store.add([MemoryDraft(text="Rule: always squash commits before merging to main.", category="preference")])[0]
    new = store.add([MemoryDraft(text="Rule: never squash commits when merging to main.", category="preference")])[0]
    assert new.status == "added" and new.relation == "contradicts" and new.related == old.id
    rows = {r.id: r for r in store.list()}
    assert set(rows) == {old.id, new.id}  # both current: a person decides
    assert {"type": "contradicts", "targetId": old.id} in rows[new.id].metadata["relations"]
    assert [r.id for r in store.history(old.id)] == [old.id, new.id]


def test_a_paraphrase_still_merges_and_an_update_in_the_same_write_supersedes(tmp_path, embedder):
    store = MemoryStore.open(settings_for(tmp_path), embedder=embedder)
    out = store.add([
        MemoryDraft(text="Decision: the staging database runs on PostgreSQL 14.", category="decision"),
        MemoryDraft(text="Decision: staging moved from PostgreSQL 14 to PostgreSQL 16; 14 is no longer used.",
                    category="decision"),
        MemoryDraft(text="Decision: staging was moved from PostgreSQL 14 to PostgreSQL 16, and 14 is no longer used.",
                    category="decision"),
    ])
    assert [o.status for o in out] == ["added", "added", "duplicate"]
    assert out[1].relation == "supersedes" and out[1].related == out[0].id and out[2].id == out[1].id
    assert [r.id for r in store.list()] == [out[1].id]


def test_a_person_supersedes_and_restores(tmp_path, monkeypatch):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    a, b = (o.id for o in store.add([MemoryDraft(text="Rule: deploy the api on Fridays only."),
                                     MemoryDraft(text="Rule: deploy the api any weekday before 16:00.")]))
    monkeypatch.setenv("DISTILL_DB", str(s.db))
    out = cli(s.state_dir, "memories", "supersede", a[:8], "--by", b[:8]).stdout
    assert f"superseded [{a[:8]}]" in out and f"by [{b[:8]}]" in out
    assert [r.id for r in store.list()] == [b]
    restored = cli(s.state_dir, "memories", "restore", a[:8]).stdout
    assert "status: current" in restored and "still current too" in restored
    assert {r.id for r in store.list()} == {a, b}
    bad = cli(s.state_dir, "memories", "supersede", a[:8], "--by", a[:8], check=False)
    assert bad.returncode != 0 and "same memory" in bad.stderr


def test_recalls_are_counted_off_the_table_and_folded_in_by_the_next_writer(tmp_path, embedder):
    from distill.mcp import Memories

    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=embedder)
    used, idle = (o.id for o in store.add([
        MemoryDraft(text="Pitfall: the api tests need the redis container running first."),
        MemoryDraft(text="Decision: the worker service restarts nightly at 03:00."),
    ]))
    reader = Memories(s, store=MemoryStore.open(s, embedder=embedder, read_only=True))
    before = version(s)
    for _ in range(3):
        assert [h.id for h in reader.recall("api tests redis container").hits] == [used]
    assert version(s) == before  # counting a read wrote no table version
    assert store.access_log().pending()[used][0] == 3

    store.add([MemoryDraft(text="Decision: the api runs on port 8080.")])  # the next writer folds the counts in
    rows = {r.id: r for r in store.list()}
    assert rows[used].metadata["access_count"] == 3 and rows[used].metadata["last_accessed_at"] > 0
    assert "access_count" not in rows[idle].metadata
    assert store.access_log().pending() == {}


def test_among_equally_relevant_hits_the_used_one_ranks_first():
    from distill.store.memory import life_rank
    from distill.store.models import MemoryHit

    now = now_ms()
    month_ago = now - 30 * MS_PER_DAY

    def hit(i: str, md: dict) -> MemoryHit:
        return MemoryHit(id=i, text="t", category="fact", scope="global", importance=0.7, timestamp=month_ago,
                         metadata=md, score=0.8)

    hits = [hit("a", {}), hit("b", {"access_count": 12, "last_accessed_at": now - MS_PER_DAY})]
    assert [h.id for h in life_rank(hits, {})] == ["b", "a"]
    assert [h.id for h in life_rank([hit("a", {}), hit("b", {})], {"a": (12, now)})] == ["a", "b"]  # pending uses count
    gone = hit("c", {"invalidated_at": now - 1})
    assert [h.id for h in life_rank([gone], {})] == [] and life_rank([gone], {}, include_history=True) == [gone]


def test_housekeeping_archives_what_went_cold_and_restore_brings_it_back(tmp_path):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    old_ts = now_ms() - 200 * MS_PER_DAY
    cold, used, fresh = "11111111-0000-4000-8000-000000000001", "11111111-0000-4000-8000-000000000002", None
    store.import_({"memories": [
        {"id": cold, "text": "Fact: the old wiki lives at wiki.internal.", "importance": 0.5, "timestamp": old_ts},
        {"id": used, "text": "Fact: the build cache lives on the NAS.", "importance": 0.5, "timestamp": old_ts},
    ]})
    fresh = store.add([MemoryDraft(text="Fact: the api docs live in docs/api.md.", importance=0.5)])[0].id
    for _ in range(10):
        store.access_log().record([used])

    assert store.archive_stale() == [cold]
    rows = {r.id: r for r in store.list(include_history=True)}
    assert rows[cold].metadata["state"] == "archived" and not is_current(rows[cold].metadata, rows[cold].timestamp)
    assert rows[used].metadata["access_count"] == 10 and is_current(rows[used].metadata, rows[used].timestamp)
    assert {r.id for r in store.list()} == {used, fresh}
    store.restore(cold)
    assert {r.id for r in store.list()} == {cold, used, fresh}


def test_the_worker_housekeeping_pass_archives(tmp_path, monkeypatch):
    from distill.queue import Queue
    from worker import housekeeping

    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    store.import_({"memories": [{"id": "22222222-0000-4000-8000-000000000001", "text": "Fact: the old wiki is gone.",
                                 "importance": 0.3, "timestamp": now_ms() - 300 * MS_PER_DAY}]})
    hk = housekeeping.Housekeeping(s, Queue(s.state.queue))
    monkeypatch.setattr(housekeeping, "ARCHIVE_EVERY_S", 0.0)
    hk.run()
    assert store.list() == [] and len(store.list(include_history=True)) == 1


def test_mcp_remember_replaces_and_recall_leaves_history_out(tmp_path):
    import anyio

    from test_mcp_server import call, stdio

    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            pip = await call(client, "remember", category="preference", scope="global",
                             text="Rule: install dependencies in the api repo with pip install -r requirements.txt.")
            uv = await call(client, "remember", category="preference", scope="global", replaces=pip["id"][:8],
                            text="Rule: install dependencies in the api repo with uv sync.")
            recall = await call(client, "recall", query="install dependencies in the api repo")
            history = await call(client, "recall", query="install dependencies in the api repo", include_history=True)
            facts = await call(client, "list_facts")
            return pip, uv, recall, history, facts

    pip, uv, recall, history, facts = anyio.run(go)
    assert uv["status"] == "added" and uv["answer"] == f"added, supersedes {pip['id']}"
    assert [h["id"] for h in recall["hits"]] == [uv["id"]]
    assert {h["id"] for h in history["hits"]} == {pip["id"], uv["id"]}
    assert [f["id"] for f in facts["facts"]] == [uv["id"]]
    log = Path(tmp_path, "state", "access", "memories.jsonl").read_text().splitlines()
    assert json.loads(log[0])["ids"] == [uv["id"]]


def _second(tmp_path, embedder, old: str, new: str, category: str = "preference"):
    store = MemoryStore.open(settings_for(tmp_path), embedder=embedder)
    first = store.add([MemoryDraft(text=old, category=category)])[0]
    return first, store.add([MemoryDraft(text=new, category=category)])[0]


@pytest.mark.parametrize("old,new", [
    ("Rule: lint the web repo with `eslint .` before pushing.",
     "Rule: lint the web repo with `biome check` before pushing; eslint was retired."),
    ("规则：每周备份保留 4 份。", "规则：每周备份保留份数调整为 8 份。"),
    ("Preference: the daily digest email arrives at 7:00.",
     "Preference: as of this week, the daily digest email arrives at 9:30."),
    ("Rule: code reviews need one approval.", "规则：从下周起代码评审需要两个人批准。"),
    # "改成 X，原来的 Y …": the old value named as the one that was wrong
    ("规则：api 服务的数据库连接池大小设为 20。", "规则：api 服务的数据库连接池大小改成 50，原来的 20 不够用。"),
    ("决定：代码托管在公司自建的 GitLab 上。", "决定：我们已经迁到 GitHub 组织 distill-dev，代码都在那边。"),
    ("偏好：用户希望 agent 每完成一步就汇报一次进度。", "偏好：用户改主意了，只要最后汇报一次结果，中间步骤不用逐条汇报。"),
    # across languages: the same names, another number, weekday or tool
    ("规则：Python 版本固定为 3.11，`.python-version` 里写 3.11。", "Rule: pin Python to 3.12; `.python-version` contains 3.12."),
    ("Rule: the Redis `maxmemory` on the cache nodes is 2gb.", "规则：缓存节点 Redis 的 `maxmemory` 调成 4gb，2gb 不够用。"),
    ("Rule: hold the team retro every other Thursday.", "规则：每两周的周五开团队 retro。"),
    ("Decision: application logs are shipped to Elasticsearch with Filebeat.",
     "决定：日志采集从 Filebeat 换成 Vector，仍然写入 Elasticsearch。"),
    # a pitfall whose fix now does something else, saying what it no longer does
    ("Pitfall: `pytest` crashed with `numpy.dtype size changed`. Cause: pandas was built against an older numpy. "
     "Fix: pin numpy to 1.26.",
     "Pitfall: `pytest` crashed with `numpy.dtype size changed`. Fix: instead of pinning numpy to 1.26, "
     "upgrade pandas to 2.2."),
])
def test_an_update_in_words_the_old_rule_did_not_know_is_kept_as_the_new_version(tmp_path, embedder, old, new):
    first, second = _second(tmp_path, embedder, old, new)
    assert second.status == "added" and second.relation == "supersedes" and second.related == first.id


def test_a_new_value_in_the_same_slot_supersedes_a_choice_and_contradicts_an_observation(tmp_path, embedder):
    first, second = _second(tmp_path / "a", embedder, "Preference: the team standup is at 9:30 every weekday.",
                            "Preference: the team standup is at 10:15 every weekday.")
    assert second.status == "added" and second.relation == "supersedes" and second.related == first.id
    first, second = _second(tmp_path / "b", embedder,
                            "Pitfall: the worker container starts with 512 MB of memory and gets OOM-killed.",
                            "Pitfall: the worker container starts with 256 MB of memory and gets OOM-killed.", "fact")
    assert second.status == "added" and second.relation == "contradicts" and second.related == first.id


@pytest.mark.parametrize("old,new", [
    ("偏好：用户希望回答用中文。", "偏好：用户希望代码注释用中文写。"),
    ("偏好：用户希望回答用中文。", "偏好：用户希望提交信息用中文。"),
    ("Preference: the user wants answers in English.", "Preference: the user wants commit messages in English."),
    ("Decision: the free plan allows 5 seats per team.", "Decision: the free plan allows 5 projects per team."),
])
def test_one_template_said_of_another_subject_is_another_memory(tmp_path, embedder, old, new):
    """The same value (中文, English, 5) said of another thing: merging would lose one memory,
    superseding would retire a rule that still holds. Both stay current, unrelated."""
    _, second = _second(tmp_path, embedder, old, new)
    assert second.status == "added" and second.relation is None


@pytest.mark.parametrize("old,new,category", [
    ("Preference: the user wants short answers: code or command first, then at most three bullet points of"
     " explanation, no preamble or recap.",
     "Preference: in suggested shell commands, use `rg` (ripgrep) and `fd` instead of `grep -r` and `find`.",
     "preference"),
    ("Pitfall: in Vite only variables prefixed with `VITE_` are exposed to client code; `import.meta.env.API_URL`"
     " was `undefined` in the production build. Rename it to `VITE_API_URL` in `.env.production`.",
     "踩坑：`.gitlab-ci.yml` 里同一个 job 同时写 `only` 和 `rules` 会报 `config key may not be used with rules:"
     " only`，统一改成 `rules:` 写法。", "fact"),
    ("Pitfall: `npm run dev` in the web repo fails with EADDRINUSE on port 5173 because a stale vite process"
     " holds it. Fix: `pkill -f vite`.",
     "规则：web 仓库用 pnpm 管理依赖，安装用 `pnpm install --frozen-lockfile`，不要再用 npm。", "fact"),
])
def test_a_change_about_another_thing_retires_nothing(tmp_path, embedder, old, new, category):
    """A change word ("instead of", 改成) and a cosine over the floor — e5 puts two short rules on
    unrelated things there — used to retire the nearest row, which then vanished from recall.
    What the new text replaces must be in the row, the two must share a word at least, and a rule
    does not retire a pitfall (what was seen stays true: a rule and a pitfall are two memories). Stored
    as ``import`` and ``remember`` store them: with their keyword lines."""
    from distill.text.keywords import keyword_draft

    store = MemoryStore.open(settings_for(tmp_path), embedder=embedder)
    first = store.add([keyword_draft(MemoryDraft(text=old, category=category))])[0]
    second = store.add([keyword_draft(MemoryDraft(text=new, category=category))])[0]
    assert second.status == "added" and second.relation is None
    assert {h.id for h in store.list()} == {first.id, second.id}  # both current


def test_a_choice_restated_with_instead_of_merges_and_a_fix_that_says_change_to_is_no_update(tmp_path, embedder):
    """"chose X over Y" already rules out Y, so "X instead of Y" restates it; "解决：改成 X"
    says what was done about another error, not that the stored fix changed."""
    first, second = _second(tmp_path / "a", embedder,
                            "Decision: we chose Argo CD over Flux because the team wanted a UI that shows sync status.",
                            "Decision: Argo CD was picked instead of Flux; having a web dashboard to see what is in "
                            "sync was what the team cared about.", "decision")
    assert second.status == "duplicate" and second.id == first.id
    _, second = _second(tmp_path / "b", embedder,
                        "踩坑：MySQL 导入数据报 `Incorrect string value`。原因：表的字符集是 utf8。解决：改成 utf8mb4。",
                        "踩坑：MySQL 联表查询报 `Illegal mix of collations`。原因：两张表的 collation 一个是 "
                        "`utf8mb4_general_ci` 一个是 `utf8mb4_0900_ai_ci`。解决：统一改成 `utf8mb4_0900_ai_ci`。", "fact")
    assert second.status == "added" and second.relation != "supersedes"


@pytest.mark.parametrize("old,new", [
    ("Decision: we will ship offline mode in the iOS app.", "决定：iOS app 不做离线模式。"),
    ("Preference: the user wants the agent to open a draft PR before pushing.", "偏好：用户不希望 agent 开 draft PR。"),
    ("决定（周一例会）：移动端统一用 Flutter。", "决定（技术委员会纪要）：移动端统一用 React Native。"),
])
def test_one_side_denying_across_languages_or_two_sources_disagreeing_is_a_contradiction(tmp_path, embedder,
                                                                                         old, new):
    first, second = _second(tmp_path, embedder, old, new, "decision")
    assert second.status == "added" and second.relation == "contradicts" and second.related == first.id


def test_a_language_named_in_each_language_compares_as_one_value(tmp_path, embedder):
    """中文 is "Chinese": the translation merges, and a rule that switches the language across
    scripts is the newer rule."""
    first, second = _second(tmp_path / "a", embedder, "Preference: the user wants replies in Chinese.",
                            "偏好：用户希望用中文回复。")
    assert second.status == "duplicate" and second.id == first.id
    first, second = _second(tmp_path / "b", embedder, "Rule: code comments in the `sdk` repo are written in English.",
                            "规则：`sdk` 仓库的代码注释用中文写。", "decision")
    assert second.relation == "supersedes" and second.related == first.id


def test_a_pitfalls_inline_fix_is_no_word_of_change(tmp_path, embedder):
    """"…，把 react-dom 升级到 18 就好了" says what fixed the error, as "解决：" would: the stored
    pitfall is not retired by its own restatement."""
    _, second = _second(tmp_path, embedder,
                        "踩坑：`npm install` 报 `ERESOLVE unable to resolve dependency tree`，原因是 react 18 和旧版 "
                        "react-dom 的 peer 依赖冲突。解决：把 react-dom 升到 18。",
                        "踩坑：装依赖时出现 ERESOLVE unable to resolve dependency tree，是 react-dom 版本太老、和 react 18 "
                        "的 peer 依赖冲突，把 react-dom 升级到 18 就好了。", "fact")
    assert second.relation != "supersedes"


def test_a_negated_bound_across_languages_is_no_contradiction(tmp_path, embedder):
    """"never more than 3 times" is "最多 3 次": the negation is the bound, not a denial."""
    _, second = _second(tmp_path, embedder, "Rule: never retry the payment webhook more than 3 times.",
                        "规则：payment webhook 最多重试 3 次。")
    assert second.relation != "contradicts"


@pytest.mark.parametrize("old,new", [
    ("Rule: nightly backups of the staging database run at 02:00 UTC.",
     "Rule: nightly backups of the production database run at 02:00 UTC."),
    ("Fact: the cache server listens on 7001 and the admin panel on 7002.",
     "Fact: the cache server listens on 7002 and the admin panel on 7001."),
    ("决定：五一去杭州，住西湖边的客栈。", "决定：元旦去杭州，住灵隐寺附近的酒店。"),
    ("Rule: code reviews need one approval.", "规则：代码评审需要两个人批准。"),
    # another language, named in the other language (英文 / Chinese)
    ("偏好：用户希望提交信息用英文写。", "Preference: the user wants commit messages written in Chinese."),
    ("Rule: code comments in the `sdk` repo are written in English.", "规则：`sdk` 仓库的代码注释用中文写。"),
])
def test_near_identical_texts_that_state_other_values_are_never_merged(tmp_path, embedder, old, new):
    _, second = _second(tmp_path, embedder, old, new)
    assert second.status == "added"


def test_a_paraphrase_whose_commands_and_numbers_agree_still_merges(tmp_path, embedder):
    first, second = _second(tmp_path, embedder,
                            "Rule: in the docs repo, run `mkdocs build --strict` before every push.",
                            "Rule: always run `mkdocs build --strict` in the docs repo before pushing.", "decision")
    assert second.status == "duplicate" and second.id == first.id


# (stored, a text that negates as often but in the other clause: the opposite, a paraphrase
# that negates the same thing in other words)
CLAUSE_POLARITY = [
    ("Rule: the web app must never read the orders table directly; it goes through the orders API.",
     "Rule: the web app reads the orders table directly; it must not go through the orders API.",
     "Rule: the web app never reads the orders table itself and always goes through the orders API."),
    ("规则：前端请求都必须走 BFF 层，不允许直连后端。", "规则：前端直接请求后端，不需要经过 BFF 层。",
     "规则：前端不允许直连后端，所有请求都必须经过 BFF 层。"),
    ("Rule: never commit directly to main; open a pull request.",
     "Rule: commit directly to main; never open a pull request.",
     "Rule: all changes to main have to go through a pull request, no direct commits."),
    ("Rule: verbose request logging stays off in production.", "Rule: verbose request logging stays on in production.",
     "Rule: in production, verbose request logging stays off."),
]


def test_uncertain_in_chinese_negates_nothing_so_its_translation_merges_and_never_asking_does_not(tmp_path, embedder):
    """不确定 is "unclear", not a "不": the English that asks first is the same preference, the
    English that never asks its opposite."""
    old = "偏好：需求不确定的时候，先停下来问用户。"
    first, second = _second(tmp_path / "a", embedder, old, "Preference: when a requirement is unclear, stop and ask the user first.")
    assert second.status == "duplicate" and second.id == first.id
    _, second = _second(tmp_path / "b", embedder, old, "Preference: when a requirement is unclear, never stop to ask the "
                        "user; pick the likeliest reading and carry on.")
    assert second.status == "added"


# (stored, the same words saying the opposite, a paraphrase of the stored text)
OPPOSITE_WORDINGS = [
    # one fix adds the flag, the other removes it
    ("Pitfall: the e2e job hangs in CI. Cause: the browser waits for a display. Fix: add `--headless` to the "
     "Playwright command.",
     "Pitfall: the e2e job hangs in CI. Cause: the browser waits for a display. Fix: remove `--headless` from the "
     "Playwright command.",
     "Pitfall: Playwright e2e tests hang in CI because the browser waits for a display; adding `--headless` to the "
     "command fixed it."),
    ("Rule: in the web repo, remove the `--fix` flag from the lint step in CI.",
     "Rule: in the web repo, add the `--fix` flag to the lint step in CI.", None),
    # the same two steps in the other order
    ("规则：上线时先备份数据库，再执行迁移。", "规则：上线时先执行迁移，再备份数据库。", "规则：上线前先备份数据库，然后再跑迁移。"),
    ("Rule: back up the database before running the migrations.",
     "Rule: run the migrations before backing up the database.",
     "Rule: always run the database backup first, then the migrations."),
    # both deny with 不需要, each in the other clause
    ("规则：改了接口要更新文档，但不需要通知前端。", "规则：改了接口不需要更新文档，但要通知前端。",
     "规则：接口改动后文档要同步更新，前端不需要通知。"),
]


@pytest.mark.parametrize("old,turned,same", CLAUSE_POLARITY + OPPOSITE_WORDINGS)
def test_what_each_clause_affirms_or_denies_decides_between_a_merge_and_a_contradiction(tmp_path, embedder, old,
                                                                                        turned, same):
    """Counting negations cannot tell these apart (or there is none: off / on), nor can a
    cosine of 0.99 (add / remove, 先 A 再 B / 先 B 再 A); which clause each one negates, what
    each does to the thing and in which order can. Merging would lose one of them."""
    first, second = _second(tmp_path / "turned", embedder, old, turned, "decision")
    assert second.status == "added" and second.relation == "contradicts" and second.related == first.id
    if same:
        first, second = _second(tmp_path / "same", embedder, old, same, "decision")
        assert second.status == "duplicate" and second.id == first.id
