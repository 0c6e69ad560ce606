"""The exact-duplicate key and the near-duplicate decision, on the cases the issue names.

Cosines come from the real local embedder, so these tests also fail if the embedder drifts
far enough that the shipped thresholds stop making these calls.
"""

from __future__ import annotations

import re

import pytest

from distill.config import DedupThresholds, Settings
from distill.store.dedup import DEFAULT_THRESHOLDS
from distill.store.dedup import PLUGIN_COSINE, content_hash, contradictions, is_near_duplicate, lexical_similarity, normalise

LOCAL = DEFAULT_THRESHOLDS["local"]


@pytest.fixture(scope="module")
def cosine():
    from distill.store.embedders import LocalEmbedder

    embedder = LocalEmbedder()

    def cos(a: str, b: str) -> float:
        va, vb = embedder.passages([a, b])
        return float(va @ vb)

    return cos


def same(a: str, b: str, cos) -> bool:
    return is_near_duplicate(a, b, cos(a, b), LOCAL)


# --- normalise / content_hash


def test_keywords_line_is_not_part_of_the_key():
    body = "Decision: use uv instead of pip."
    assert normalise(body + "\nKeywords (zh): 依赖管理; uv; pip") == normalise(body)
    assert content_hash(body + "\nKeywords (zh): 依赖管理; uv") == content_hash(body + "\nKeywords (zh)：uv；pip")


def test_only_a_final_keywords_line_is_dropped():
    text = "Fact: the header reads Keywords (zh): literally.\nSecond line."
    assert "keywords" in normalise(text)


def test_case_width_whitespace_and_punctuation_are_folded():
    variants = [
        "Decision: use uv instead of pip.",
        "decision -  USE uv instead of pip!!",
        "  Decision:\tuse uv\ninstead of pip  ",
        "Ｄｅｃｉｓｉｏｎ：use uv instead of pip。",  # full-width, as pasted from Chinese text
    ]
    assert len({content_hash(v) for v in variants}) == 1
    assert normalise(variants[0]) == "decision use uv instead of pip"


def test_punctuation_inside_a_token_is_kept():
    assert content_hash("needs Python 3.11") != content_hash("needs Python 311")
    assert content_hash("set core.autocrlf=input") != content_hash("set core autocrlf input")
    assert "core.autocrlf=input" in normalise("Fix: set core.autocrlf=input.")


def test_different_text_gives_a_different_hash():
    h = content_hash("Decision: use uv instead of pip.")
    assert re.fullmatch(r"[0-9a-f]{64}", h)
    assert h != content_hash("Decision: use poetry instead of pip.")
    assert h != content_hash("Decision: use uv instead of pip for scripts.")


def test_chinese_text_keeps_its_characters():
    assert normalise("决定：使用 uv，而不是 pip。") == "决定 使用 uv 而不是 pip"
    assert content_hash("使用 uv 而不是 pip") != content_hash("使用 poetry 而不是 pip")


# --- the canonical examples


def test_paraphrase_and_translation_are_one_memory(cosine):
    assert same("use uv instead of pip", "the repo manages dependencies with uv, not pip", cosine)
    assert same("use uv instead of pip", "使用 uv 而不是 pip", cosine)


def test_another_tool_is_another_memory_although_it_embeds_closer(cosine):
    a, poetry, zh = "use uv instead of pip", "use poetry instead of pip", "使用 uv 而不是 pip"
    assert cosine(a, poetry) > cosine(a, zh)  # why cosine alone cannot decide
    assert cosine(a, poetry) >= LOCAL.cosine
    assert not same(a, poetry, cosine)
    assert not same(zh, "使用 poetry 而不是 pip", cosine)


def test_a_tool_named_in_lower_case_is_another_memory_wherever_it_recurs(cosine):
    nginx = "Pitfall: nginx logs filled the disk on the build runner. Fix: cap the log size of nginx to 100 MB."
    docker = "Pitfall: Docker logs filled the disk on the build runner. Fix: cap the log size of Docker to 100 MB."
    webpack = "Fact: the webpack dashboard is linked from the team wiki page 'webpack runbook'."
    kafka = "Fact: the Kafka dashboard is linked from the team wiki page 'Kafka runbook'."
    assert cosine(nginx, docker) > 0.96  # with the keywords line as stored: 0.977
    assert not same(nginx, docker, cosine) and not same(webpack, kafka, cosine)
    # a word in another form, wherever it recurs, is still the same memory
    assert same("Fact: the deploy script runs the deploy checks before each release.",
                "Fact: the deploy script runs the deployment checks before each release.", cosine)


def test_a_fact_and_a_decision_are_two_memories_in_either_language(cosine):
    fact = "Fact: upgrades of nginx are done by the platform team in the Tuesday maintenance window."
    decision = "Decision: upgrades of nginx are done by the platform team in the Tuesday maintenance window."
    assert not same(fact, decision, cosine)
    assert not same("决定：nginx 的配置由运维组统一管理。", "Fact: nginx config is managed by the ops team.", cosine)
    assert same("决定：使用 uv 而不是 pip 管理 Python 依赖。", "Decision: use uv instead of pip for Python dependencies.", cosine)


def test_a_weekday_is_kept_by_a_translation_and_anchors_it(cosine):
    en = "Do not run database migrations on Friday afternoons."
    assert same(en, "周五下午不要执行数据库迁移。", cosine)  # cosine ~0.89: under the same-language floor
    assert same(en, "星期五下午不要执行数据库迁移。", cosine)
    assert not same(en, "周六下午不要执行数据库迁移。", cosine)
    # the reduce step (no vectors) keeps another weekday apart too
    assert contradictions("Fact: the backup runs every Sunday.", "事实：备份每周六运行。")
    assert not contradictions("Fact: the backup runs every Sunday.", "事实：备份每个星期日运行。")


def test_another_os_release_is_another_memory(cosine):
    assert not same("deploy only on Debian 12", "deploy only on Ubuntu 22.04", cosine)
    assert not same("Decision: deploy only on Debian 12.", "Decision: deploy only on Debian 11.", cosine)
    assert same("Decision: deploy only on Debian 12.", "决定：只在 Debian 12 上部署。", cosine)


def test_another_number_or_unit_is_another_memory(cosine):
    assert not same("timeout is 30 s", "timeout is 60 s", cosine)
    assert not same("Fact: the cache expires after 10 minutes.", "Fact: the cache expires after 10 seconds.", cosine)
    assert same("Pitfall: the request timeout is 30 seconds.", "坑：请求超时是 30 秒。", cosine)


def test_negation_and_contradiction_are_other_memories(cosine):
    assert not same("Decision: commit the lock file.", "Decision: don't commit the lock file.", cosine)
    assert not same("Always rebase feature branches before merging.", "Never rebase feature branches before merging.", cosine)
    assert not same("Decision: enable HTTP/2 on the load balancer.", "Decision: disable HTTP/2 on the load balancer.", cosine)
    assert not same("Run the migrations before restarting.", "Run the migrations after restarting.", cosine)
    # a negation explained by a contrast is the same advice
    assert same("Decision: don't use pip; manage dependencies with uv.", "决定：使用 uv 而不是 pip 管理依赖。", cosine)


def test_a_chinese_memory_that_names_nothing_the_english_one_names_is_another(cosine):
    en = "Use uv instead of pip for Python dependencies.\nKeywords (zh): 依赖管理; uv; pip"
    zh = "部署服务之前必须先运行数据库迁移脚本，否则启动会报错。\nKeywords (zh): 部署; 数据库迁移"
    assert cosine(en, zh) >= LOCAL.cosine_cross  # close enough to be taken for a translation
    assert not same(en, zh, cosine)


def test_a_translation_naming_nothing_in_common_must_translate_word_for_word(cosine):
    """The real wrong merges: an English rule or install note folded into an unrelated
    Chinese memory at a translation's cosine. With nothing named on both sides, the pair
    reaches the translation floor only when the Chinese words mean most of the English ones
    (read through CC-CEDICT), and a weekday on one side only keeps them apart."""
    en, zh = "Fact: the search index is rebuilt every Sunday night.", "事实：搜索索引每天晚上重建。"
    assert LOCAL.cosine_cross <= cosine(en, zh) < LOCAL.cosine  # would pass as a translation
    assert not same(en, zh, cosine)
    assert not same("Rule: never overwrite a vault node without asking the user first.",
                    "规则：不要凭空猜测，没有证据就说不知道。", cosine)
    assert not same("Note: installed ffmpeg with Homebrew for the video scripts.",
                    "偏好：用户希望每周五下午收到项目周报。", cosine)
    # a translation that keeps a name is still one memory at the lower floor
    assert same("Note: installed pnpm globally with corepack.", "备注：用 corepack 全局安装了 pnpm。", cosine)
    # and one that keeps none, word for word, is one memory too (it used to stay two rows)
    en, zh = "Decision: feature branches are deleted after they are merged.", "决定：功能分支合并之后就删除。"
    assert LOCAL.cosine_cross <= cosine(en, zh) < LOCAL.cosine
    assert same(en, zh, cosine)
    assert same("Decision: database passwords are rotated every quarter by the security team.",
                "决定：数据库密码每个季度由安全组轮换一次。", cosine)


def test_a_chinese_memory_about_the_same_tool_that_says_something_else_is_another(cosine):
    """dedup_corpus.py's 47 wrong merges: one kind, one tool, different facts (cosine
    0.90–0.94 with the keywords line). The tool is all they share; the dictionary shows the
    Chinese words mean none of the English ones."""
    k = "\nKeywords (zh): Docker; 配置; 运维"
    en = "Fact: the Docker dashboard is linked from the team wiki page 'Docker runbook'." + k
    zh = "事实：Docker 的配置由运维组统一管理，修改需要提工单。" + k
    assert cosine(en, zh) >= 0.90
    assert not same(en, zh, cosine)
    assert "the Chinese words translate" in "; ".join(contradictions(en, zh))
    assert not same("Preference: the user wants nginx settings explained with a short example before changing them.",
                    "偏好：用户希望 nginx 相关的回答先给结论再给步骤。", cosine)
    # the same tool, translated: still one memory
    assert same("Decision: Sentry alerts go to the on-call channel, not to email.",
                "决定：Sentry 的告警发到值班频道，而不是发邮件。", cosine)


def test_chinese_is_cut_into_dictionary_words():
    from distill.store.glossary import segment

    assert segment("功能分支合并之后就删除") == ("功能", "分支", "合并", "之后", "就", "删除")
    assert segment("只在上部署") == ("只", "在", "上", "部署")  # not 上部 署: the cut with fewer words wins
    # as many words either way: the cut leaving 都 alone, not 构 of 构建 ("to establish a capital", 建都)
    assert segment("镜像每次构建都要重新装") == ("镜像", "每次", "构建", "都", "要", "重新", "装")


def test_an_irregular_english_form_meets_the_dictionarys_gloss():
    """A translation's English inflects words the glosses do not ("sent" / 发出 *to send
    out*): read in their dictionary form, 4 of the 5 English words are translated, enough to
    anchor a translation that names nothing (it was 3 of 5, under the 75 % anchor)."""
    from distill.store import lexical_guard as guard

    assert guard.lemma_stem("sent") == guard.lemma_stem("send")
    assert guard.lemma_stem("wrote") == guard.lemma_stem("writes")
    en = guard.profile("Preference: the user wants meeting invitations sent a day in advance.")
    zh = guard.profile("偏好：用户希望会议邀请提前一天发出。")
    assert guard.translated_overlap(en, zh)[:2] == (4, 5)
    assert guard.translates(en, zh)


def test_a_number_written_as_a_word_is_the_same_number():
    """A translation writes "6 pm" as 六点 and "3" as 三; a word never adds a number of its
    own ("两次" may be "twice"), it only stands in for the digit on the other side."""
    assert not contradictions("Decision: keep 3 replicas of the database.", "决定：数据库保留三个副本。")
    assert contradictions("Decision: keep 3 replicas of the database.", "决定：数据库保留五个副本。")
    assert not contradictions("Fact: the request timeout is two minutes.", "Fact: the request timeout is 2 minutes.")
    assert contradictions("Fact: the request timeout is two minutes.", "Fact: the request timeout is 3 minutes.")
    assert not contradictions("Pitfall: pytest hangs when the table is opened twice.", "坑：表打开两次时 pytest 会卡住。")


def test_small_and_large_contradict_across_languages():
    assert any(why.startswith("polar") for why in contradictions("偏好：用户喜欢小的合并请求。",
                                                                  "Preference: the user prefers large merge requests."))


def test_a_word_written_as_two_is_shared_wording():
    assert lexical_similarity("Fact: the server's timezone is UTC+8.", "The server runs in the UTC+8 time zone.") == 1.0


def test_a_verb_the_dictionary_gives_one_sense_is_not_a_swapped_slot():
    """"changes" / "switches" are whole glosses of the same Chinese words (换, 转换); "reads" /
    "writes" are not, and "lends" / "borrows" (both 借) are a polar pair."""
    assert not contradictions("Fact: the build image changes every release.", "Fact: the build image switches each release.")
    assert contradictions("Fact: the job reads the config.", "Fact: the job writes the config.")
    assert contradictions("Fact: the team lends laptops to interns.", "Fact: the team borrows laptops from interns.")


def test_a_translation_may_meet_the_english_words_through_a_synonym():
    """简短 is glossed *brief*, not *short*; through a word of the same sense the Chinese side
    translates both English words and anchors the pair. Synonyms never lift the 20 % floor:
    the corpus's Docker pair (统一 *to integrate* ~ "linked") stays apart (test above)."""
    from distill.store import lexical_guard as guard

    en, zh = guard.profile("Preference: the user wants short answers."), guard.profile("偏好：用户希望回答简短。")
    assert guard.translated_overlap(en, zh)[:2] == (1, 2)
    assert guard.translates(en, zh)


def test_a_hyphenated_word_names_a_thing():
    """"byte-offset cursors" / "line-number cursors" embed at 0.92 and share most words; the
    compounds are what each memory is about, as a proper noun would be."""
    a = "Decision: the worker reads only new bytes, tracked with byte-offset cursors."
    b = "Decision: the worker re-reads whole files, tracked with line-number cursors."
    assert any(why.startswith("names") for why in contradictions(a, b))
    assert not is_near_duplicate(a, b, 0.95, LOCAL)
    # the same compound on both sides is no conflict
    assert not contradictions("Fact: the on-call rotation is in the wiki.", "Fact: the wiki holds the on-call rotation.")


def test_swapped_roles_are_another_memory(cosine):
    assert not same("format Python code with ruff, not black", "format Python code with black, not ruff", cosine)


def test_keywords_line_does_not_sway_the_decision(cosine):
    a = "Decision: use uv instead of pip.\nKeywords (zh): 依赖管理; uv; pip"
    b = "Decision: use poetry instead of pip.\nKeywords (zh): 依赖管理; uv; pip"
    assert not same(a, b, cosine)


def test_cosine_below_the_floor_is_never_a_duplicate():
    text = "Decision: use uv instead of pip."
    assert not is_near_duplicate(text, "The repo manages dependencies with uv, not pip.", LOCAL.cosine - 0.01, LOCAL)
    assert not is_near_duplicate("use uv instead of pip", "使用 uv 而不是 pip", LOCAL.cosine_cross - 0.01, LOCAL)
    assert is_near_duplicate("use uv instead of pip", "使用 uv 而不是 pip", LOCAL.cosine_cross, LOCAL)


def test_lexical_threshold_is_honoured():
    a, b = "Fact: the staging server is reachable only through the VPN.", "Staging can only be accessed over the VPN."
    sim = lexical_similarity(a, b)
    assert 0 < sim < 1
    assert is_near_duplicate(a, b, 0.95, DedupThresholds(cosine=0.9, lexical=sim))
    assert not is_near_duplicate(a, b, 0.95, DedupThresholds(cosine=0.9, lexical=sim + 0.01))


def test_above_the_plugins_threshold_only_a_contradiction_keeps_two_rows():
    """memory-lancedb-pro refuses a write whose nearest row scores > 0.98 (1 / (1 + cosine
    distance)); distill merges there too, however little wording the two share — unless
    the texts contradict, where a merge would lose a fact."""
    a, b = "Fact: the staging server is reachable only through the VPN.", "Staging can only be accessed over the VPN."
    strict = DedupThresholds(cosine=0.9, lexical=0.99)
    assert PLUGIN_COSINE == pytest.approx(0.97959, abs=1e-5)
    assert not is_near_duplicate(a, b, PLUGIN_COSINE - 0.001, strict)
    assert is_near_duplicate(a, b, PLUGIN_COSINE + 0.001, strict)
    assert not is_near_duplicate("Fact: the request timeout is 30 seconds.", "Fact: the request timeout is 60 seconds.",
                                 0.99, strict)


def test_lexical_similarity_bounds():
    a = "Pitfall: npm install fails behind the corporate proxy."
    assert lexical_similarity(a, a) == 1.0
    assert lexical_similarity(a, "Preference: answers in Chinese, please.") == 0.0
    b = "Behind the company proxy npm install breaks."
    assert lexical_similarity(a, b) == lexical_similarity(b, a)


def test_thresholds_come_from_config_per_embedder():
    assert Settings().dedup_thresholds() == DEFAULT_THRESHOLDS["local"]
    override = Settings(dedup={"local": DedupThresholds(cosine=0.97, lexical=0.6)})
    assert override.dedup_thresholds() == DedupThresholds(cosine=0.97, lexical=0.6)
    assert Settings(embedder="gemini").dedup_thresholds() == DEFAULT_THRESHOLDS["gemini"]


def test_the_reduce_step_keeps_apart_what_the_store_keeps_apart():
    """Candidates of one run are merged by shared wording before they reach the store; a
    contradiction the store's guard sees must not be merged there either (one is lost)."""
    from collections import Counter

    from distill.distiller.reduce import merge_near_duplicates
    from distill.distiller.schema import Candidate

    def cand(text: str) -> Candidate:
        return Candidate(text=text, kind="decision", importance=0.7, scope="agent", keywords=["超时", "配置", "决策"],
                         entity_keywords=[], evidence=["m1"], agent_id="main", chunk=0)

    counters: Counter = Counter()
    apart = [("The request timeout is 30 seconds.", "The request timeout is 60 seconds."),
             ("Enable strict mode in the TypeScript config.", "Disable strict mode in the TypeScript config."),
             ("Use uv instead of pip for Python dependencies.", "Use poetry instead of pip for Python dependencies.")]
    for a, b in apart:
        assert len(merge_near_duplicates([cand(a), cand(b)], counters)) == 2, (a, b)
    same = merge_near_duplicates([cand("Use uv instead of pip for Python dependencies."),
                                  cand("Use uv instead of pip for the Python dependencies.")], counters)
    assert len(same) == 1 and counters["merged_in_run"] == 1


def test_blocking_contradicts_allowing_across_languages():
    assert any(why.startswith("polar") for why in contradictions("Rule: the proxy allows uploads from the build servers.",
                                                                  "规则：代理拦截来自构建服务器的上传。"))


def test_a_latin_product_name_against_chinese_text_is_another_product_unless_it_translates():
    """Between two Chinese memories, "Figma" against a Chinese word that does not gloss it is
    another tool (墨刀 is a product of its own); "push" against 推送 is the same word translated."""
    assert contradictions("事实：设计稿放在墨刀上。", "事实：设计稿放在 Figma 上。")
    assert not contradictions("偏好：手机 app 的 push 通知要先征求用户同意。", "偏好：手机应用的推送通知要先征求用户同意。")


def test_a_memory_cut_off_mid_sentence_is_not_the_whole_memory():
    """Merging the opening into the whole would keep whichever came first: a store holding
    "Rule: after a deploy, always" would swallow the rule itself."""
    assert any(why.startswith("only the opening") for why in contradictions(
        "Rule: after a deploy, always", "Rule: after a deploy, always watch the error rate for ten minutes."))
    assert any(why.startswith("only the opening") for why in contradictions("规则：周五下午", "规则：周五下午不要发布新版本。"))
    # one more word of no weight is still the same memory
    assert not contradictions("Rule: never deploy on Fridays.", "Rule: never deploy on Fridays again.")


def test_the_same_subject_with_another_predicate_is_another_memory():
    assert any(why.startswith("same subject") for why in contradictions(
        "事实：咖啡机在二楼茶水间。", "事实：咖啡机每周五清洗一次。"))
    assert any(why.startswith("same subject") for why in contradictions(
        "Fact: the staging cluster scales down at night.", "Fact: the staging cluster rejects unsigned images."))
    # the same predicate reworded, or naming the same thing, is one memory
    assert not contradictions("Fact: the staging cluster scales down every night.",
                              "Fact: the staging cluster scales down at night.")
    assert not contradictions("决定：前端打包用 Vite 完成。", "决定：前端打包统一交给 Vite。")


def test_preferring_one_thing_over_another_is_a_contrast():
    assert any(why.startswith("rejects") for why in contradictions(
        "Preference: for status updates the user prefers Teams over Zoom.",
        "Preference: for status updates the user prefers Zoom over Teams."))
    # "over" alone is no contrast
    assert not contradictions("Rule: never send passwords over chat.", "Rule: passwords must never be sent over chat.")


def test_obeying_contradicts_ignoring_across_languages():
    assert any(why.startswith("polar") for why in contradictions("Decision: the link checker obeys the nofollow hints.",
                                                                  "决定：链接检查器忽略 nofollow 提示。"))


def test_a_place_or_a_persons_name_written_in_chinese_is_the_same_name():
    """The dictionary glosses 杭州 as *Hangzhou*; 刘洋 is read in pinyin, liu yang."""
    from distill.store.dedup import Evidence

    for en, zh in (("Fact: the Hangzhou team owns the payment service.", "事实：杭州团队负责支付服务。"),
                   ("Fact: the new designer is Liu Yang.", "事实：新来的设计师是刘洋。")):
        ev = Evidence(en, zh)
        assert ev.anchored and not ev.conflicts, (en, ev.conflicts)
    # another city is not the same name
    assert contradictions("Fact: the Hangzhou team owns the payment service.", "事实：苏州团队负责支付服务。")


def test_a_numeronym_is_the_word_it_shortens():
    assert not any(why.startswith("entities") for why in contradictions(
        "Fact: the k8s cluster in staging runs three nodes.", "Fact: the staging Kubernetes cluster runs three nodes."))
    assert not any(why.startswith("entities") for why in contradictions(
        "Decision: i18n strings live in locales/.", "Decision: internationalization strings live in locales/."))


def test_a_month_or_a_number_in_words_is_its_number():
    assert not any(why.startswith("numbers") for why in contradictions(
        "Note: the audit is due on 3 June.", "备注：审计截止日期是 6 月 3 日。"))
    assert not any(why.startswith("numbers") for why in contradictions(
        "Rule: standups last 15 minutes.", "Rule: standups last fifteen minutes."))


def test_one_hyphenated_word_in_another_form_is_not_another_name():
    assert not any(why.startswith("names") for why in contradictions(
        "Pitfall: re-indexed documents lost their tags.", "Pitfall: re-indexing documents lost their tags."))


def test_two_negations_in_one_language_cancel_out():
    assert not any(why == "negation" for why in contradictions(
        "Rule: don't ship a release without a changelog.", "Rule: every release ships with a changelog."))
    assert "negation" in contradictions("Rule: the cache can be cleared without asking anyone.",
                                        "Rule: the cache cannot be cleared without asking the owner.")


def test_each_side_ruling_out_what_the_other_keeps_is_a_contrast():
    assert any(why.startswith("rejects") for why in contradictions(
        "Preference: the user prefers aisle seats over window seats.",
        "Preference: the user prefers window seats over aisle seats."))
    # ruling out one more thing is no contrast
    assert not any(why.startswith("rejects") for why in contradictions(
        "Decision: manage Python packages with uv, not pip or poetry.", "Decision: manage Python packages with uv, not pip."))


def test_an_abbreviation_is_the_words_it_stands_for():
    assert not contradictions("Fact: the TS build of the SDK is published nightly.",
                              "Fact: the TypeScript build of the SDK is published nightly.")
    assert not contradictions("Rule: every PR needs one approval.", "Rule: every pull request needs one approval.")
    assert contradictions("Rule: every PR needs one approval.", "Rule: every RFC needs one approval.")


def test_a_time_of_day_is_compared_in_24_hour_form():
    for a, b in (("Fact: the office closes at 17:30 on Fridays.", "Fact: on Fridays the office closes at 5:30 pm."),
                 ("Fact: the nightly export starts at 23:00.", "事实：夜间导出晚上十一点开始。"),
                 ("事实：备份每天凌晨两点开始。", "Fact: the backup starts at 2 a.m. every day.")):
        assert not any(why.startswith("numbers") for why in contradictions(a, b)), (a, b)
    assert any(why.startswith("numbers") for why in contradictions(
        "Fact: the office closes at 17:30 on Fridays.", "Fact: on Fridays the office closes at 5:30 am."))
    # 八点 without its half of the day may be 8:00 or 20:00
    assert not any(why.startswith("numbers") for why in contradictions(
        "Fact: the standup is at 20:00 for the US team.", "事实：美国团队的站会在八点。"))


def test_a_negation_word_that_negates_nothing_is_no_negation():
    for a, b in (("Rule: deploy bots may use only the deploy key.", "Rule: deploy bots may use nothing but the deploy key."),
                 ("Rule: a job may use at most 8 GB of memory.", "Rule: a job may use no more than 8 GB of memory."),
                 ("Preference: show prices both with VAT and excluding it.", "Preference: show prices with and without VAT.")):
        assert "negation" not in contradictions(a, b), (a, b)


def test_software_words_the_dictionary_lacks_are_read_as_translations():
    """CC-CEDICT (2020) has no *staging* for 预发 nor *production* for 生产环境."""
    assert not any(why.startswith("entities") for why in contradictions(
        "备注：staging 的缓存每周一清空。", "备注：预发环境的缓存每周一清空。"))
    assert any(why.startswith("entities") for why in contradictions(
        "备注：staging 的缓存每周一清空。", "备注：测试环境的缓存每周一清空。"))


def test_a_number_written_otherwise_is_the_same_number():
    for a, b in (("Rule: refunds above $20k need a manager.", "Rule: refunds above 20,000 dollars need a manager."),
                 ("Rule: rent is due on the 3rd of each month.", "Rule: rent is due on the third of each month."),
                 ("Fact: the cache keeps entries for 48 hours.", "Fact: the cache has a 48-hour expiry.")):
        assert not any(why.startswith(("numbers", "entities", "units")) for why in contradictions(a, b)), (a, b)
    assert any(why.startswith("numbers") for why in contradictions(
        "Rule: refunds above $20k need a manager.", "Rule: refunds above 2,000 dollars need a manager."))


def test_a_slot_filled_in_two_scripts_is_one_word_translated():
    assert not any(why.startswith("swapped") for why in contradictions(
        "事实：Kibana 面板的地址是 kibana.internal:5601。", "Fact: Kibana dashboard 在 kibana.internal:5601。"))


@pytest.mark.parametrize("a,b", [
    ("Rule: feature flags default to off in production.", "Rule: feature flags default to on in production so they get traffic."),
    ("Rule: schema migrations run automatically on deploy.", "Rule: schema migrations are run manually after deploy."),
    ("规则：生产环境的调试面板默认隐藏。", "规则：生产环境的调试面板默认显示。"),
    ("Preference: the agent runs the tests before committing.", "Preference: the agent commits first and runs the tests afterwards."),
])
def test_a_switch_turned_the_other_way_contradicts(a, b):
    """on / off, automatic / manual, show / hide, before / afterwards: one word, the opposite rule."""
    assert any(why.startswith("polar") for why in contradictions(a, b))
