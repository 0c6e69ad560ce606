"""The lexical guard: do two memories that embed close together state the same fact?

A text is read into a ``Profile``: its entities (code-shaped tokens, identifiers, paths,
versions, CamelCase and ALL-CAPS names, proper nouns, and any Latin-script word inside
Chinese text), its numbers with their units, its negation and contrast markers, its polar
words (always/never, enable/disable, on/off, before/after, in English and Chinese), and its
content words. Two profiles *conflict* when one side names an entity, number, unit or
polarity that the other contradicts or lacks. Translations survive because Chinese
memories keep tool names, paths and numbers in Latin script ("使用 uv 而不是 pip").

Between two English texts, a lower-case tool name ("uv", "poetry") looks like any other
word, so two more checks catch a swapped slot: the texts are one template with one short
span filled differently, wherever it recurs ("use [uv] instead of pip" / "use [poetry]
instead of pip"; "[nginx] logs … of [nginx]" / "[Docker] logs … of [Docker]"), or their
contrasts reject different things ("ruff, not black" / "black, not ruff"). Two memories
that open as different kinds ("Fact:" / "Decision:", "事实：" / "决定：") are two memories.

Between an English and a Chinese text, names alone say little (a memory about Docker in
each language), so the Chinese words are read through a dictionary (``glossary``): when
they mean almost none of the English words the two are two memories, and when they mean
most of them a translation that keeps no name is still recognised as one.

A negation difference is forgiven when either side states a contrast ("don't use pip; use
uv" / "use uv instead of pip"). Everything here is deliberately conservative: a missed
duplicate costs a second row, a false one loses a memory. ``tests/data/dedup_pairs.jsonl``
measures both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property, lru_cache

from . import glossary

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_TOKEN = re.compile(r"[~./\-]*[A-Za-z0-9][A-Za-z0-9_.+#/\-:=']*")
_LABEL = re.compile(
    r"(?i)\b(?:pitfall|decision|preference|fact|cause|fix|rule|note|lesson|context|reason)\s*:"
    r"|(?:坑|决定|偏好|事实|原因|解决|规则|备注|教训|结论)\s*:"
)
# the kind a memory opens with ("Decision: …", "踩坑：…"); a fact and a decision are two memories
_KINDS = {
    word: kind
    for kind, words in {
        "pitfall": "pitfall 坑 踩坑", "decision": "decision 决定", "preference": "preference 偏好",
        "fact": "fact 事实", "rule": "rule 规则", "note": "note 备注", "lesson": "lesson 教训",
    }.items()
    for word in words.split()
}
_OPENING_KIND = re.compile(r"\s*([A-Za-z]+|[\u4e00-\u9fff]+)\s*[:：]")
_SENTENCE_END = set(".!?;:。！？；：\n(（")

_UNITS = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "毫秒": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "秒": "s", "秒钟": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分钟": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "小时": "h",
    "d": "d", "day": "d", "days": "d", "天": "d", "日": "d",
    "week": "w", "weeks": "w", "周": "w",
    "b": "b", "byte": "b", "bytes": "b", "字节": "b",
    "kb": "kb", "kib": "kb", "mb": "mb", "mib": "mb", "gb": "gb", "gib": "gb", "tb": "tb", "tib": "tb",
    "%": "%", "percent": "%",
}
UNIT_WORDS = frozenset(_UNITS)  # the words a value is counted in
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(\d+(?:[.:]\d+)*)\s?(%|[A-Za-z]+\b|毫秒|秒钟|秒|分钟|小时|天|日|周|字节)?"
)

# A number the other side writes as a word ("6 pm" / "六点", "2 approvals" / "两个人批准")
# is the same number. Read only to forgive a number missing from the other side, never to
# add one: a word may count something else ("两次" / "twice"). Two to nineteen, the tens and
# the ordinals third to twelfth; not "one" / "一", which are mostly articles ("一个", "once").
_EN_NUMBERS = {w: n for n, w in enumerate(
    "_ _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen".split()) if n >= 2} | {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90} | {
    w: n for n, w in enumerate("_ _ _ third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split())
    if n >= 3}  # "first" and "second" are mostly not numbers
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_EN_NUMBERS) + r")\b", re.IGNORECASE)
# a month by name is its number on the other side ("12 May" / "5 月 12 日"); capitalised only
_MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_MONTH = re.compile(r"\b((?:January|February|March|April|May|June|July|August|September|October|November|December)"
                    r"|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b\.?)")
_ZH_DIGITS = {"两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
# a Chinese numeral, not after 第 (an ordinal), 周/星期/礼拜 (a weekday) or another numeral
_ZH_NUMERAL = re.compile(r"(?<![第周期拜一二两三四五六七八九十百千万])([二两三四五六七八九十]{1,3})(?![百千万])")

# Acronyms so common in this project's memories that they name no particular thing.
_COMMON_CAPS = frozenset(
    "api apis ci cd cli llm llms http https url urls json yaml toml sql id ids ui ux os cpu gpu "
    "ram io tcp udp ip dns ssh ssl tls utc pr prs vpn env db i".split()
)

_STOP = frozenset(
    """a an the and or but if then so as of to in on at by for with from into onto over under
    about via per than that this these those it its it's they them their there here is are was
    were be been being am do does did done has have had having will would shall should can
    could may might must need needs needed also only just still even every each all any some
    more most much many very too again always never not no nor don't doesn't didn't isn't
    aren't wasn't weren't won't can't cannot couldn't shouldn't mustn't hasn't haven't without
    instead rather which who whom whose what when where why how while because since until
    before after first one use used uses using whether user users want wants wanted
    prefer prefers preferred like likes keep kept make makes made get gets got let lets set
    pitfall decision preference fact cause fix rule note lesson""".split()
)

# Capitalised English words that a Chinese text writes in Chinese (not tool or product names)
TRANSLATED_NAMES = frozenset(
    "english chinese japanese korean german french spanish russian monday tuesday wednesday thursday friday "
    "saturday sunday january february march april may june july august september october november december".split()
)
# a weekday a Chinese text writes in Chinese (周五, 星期五, 礼拜五; not 每周一次, "once a week"):
# a translation keeps it, so it anchors a pair like a name
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_WEEKDAY_ZH = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天])(?!次)")
# Chinese function characters: swapping only these ("的" / "了") changes no fact
_ZH_FUNCTION = glossary.FUNCTION_CHARS
# Chinese bigrams every preference or rule contains ("用户希望…"): shared wording that says nothing
_ZH_SKIP = frozenset("用户 希望 喜欢 需要 应该 使用 可以 一个 这个 进行 时候".split())
_ZH_BOILERPLATE = frozenset("用户 户希 希望 户喜 喜欢 需要 应该 使用 可以 一个 这个 进行 总是 一定 要求 时候".split())

_NEGATION_EN = re.compile(
    r"\b(?:never|no|none|nothing|nobody|neither|nor|without|cannot|\w+n't|not|zero|dislikes?|avoid|avoids|refuses?|unset|unable|unavailable|unsupported)\b",
    re.IGNORECASE,
)
# idioms whose negation word negates nothing: "nothing but X" is "only X", "no more than 4" is
# "at most 4", "with and without VAT" names both
_NOT_NEGATION_EN = re.compile(
    r"\bnothing (?:but|more|else|older|newer|less|fancier)\b|\bno (?:more|less|fewer|later|earlier|longer|shorter) than\b"
    r"|\bwith(?:out)? (?:and|or) with(?:out)?\b|\bnot only\b|\bno matter\b",
    re.IGNORECASE,
)
_CONTRAST_EN = re.compile(r"\binstead\b|\brather than\b|\bin place of\b|,\s*not\b|\bover\b(?=\s+\w)", re.IGNORECASE)
_NOT_AFTER_COMMA = re.compile(r",\s*not\b", re.IGNORECASE)
_NEGATION_ZH = re.compile(r"不|没|别|勿|禁止|无法|未|避免|零")
_NOT_NEGATION_ZH = re.compile(r"而不是|而非|不同|不过|不断|不仅|不少|不久|不错|不确定|[,，]\s*不(?:用|要|是)")
_CONTRAST_ZH = re.compile(r"而不是|而非|代替|替代|取代|改用|[,，]\s*不")
# what a contrast rejects: "uv, not pip", "uv instead of pip", "uv 而不是 pip" → pip
# and "prefers uv over pip" (only after "prefer": "over" alone is mostly "over chat", "over 30 days")
_REJECTS = re.compile(
    r",\s*not\b|\binstead of\b|\brather than\b|\bin place of\b|\bprefer(?:s|red|ring)?\b[^.;,!?\n]{1,60}?\bover\b"
    r"|而不是|而非|[,，]\s*不要?用",
    re.IGNORECASE,
)
_REJECTED_WORD = re.compile(f"[~./\\-]*[A-Za-z0-9][A-Za-z0-9_.+#/\\-:=]*|[{_CJK},.;!?。；！？]")
_SURFACE = re.compile(f"[A-Za-z0-9][A-Za-z0-9_.+#/\\-:=']*|[{_CJK}]")

# polar concepts: (positive words, negative words), English stems and Chinese words
_POLAR: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    name: (frozenset(pos.split()), frozenset(neg.split()))
    for name, pos, neg in [
        ("frequency", "always 总是 始终 一直", "never 从不 从来不 永远不"),
        ("enabled", "enable enabled enables 启用 开启 打开", "disable disabled disables 禁用 关闭 停用"),
        ("order", "before 之前 以前", "after afterwards afterward 之后 以后"),
        ("required", "required mandatory 必填 必需 必须", "optional 可选 选填"),
        ("amount", "increase increases increased raise 增加 提高 调高", "decrease decreases decreased lower reduce 减少 降低 调低"),
        ("sync", "synchronous sync 同步", "asynchronous async 异步"),
        ("access", "allow allows allowed permit 允许", "block blocks blocked deny denied forbid forbidden 禁止 拦截 阻止 屏蔽"),
        ("verdict", "accept accepts accepted 接受", "reject rejects rejected 拒绝"),
        ("lending", "lend lends lent lending", "borrow borrows borrowed borrowing"),
        ("shared", "shared public 共享 公开", "private 私有"),
        ("verbosity", "verbose 详细", "quiet silent 安静 静默"),
        ("size", "larger bigger more above 更大 以上", "smaller less fewer below 更小 以下"),
        ("size2", "large big 大的 大型", "small 小的 小型"),
        ("outcome", "succeed succeeds success works 成功", "fail fails failure 失败"),
        ("scope", "include includes included 包含", "exclude excludes excluded 排除"),
        ("truth", "true", "false"),
        ("switch", "on", "off"),
        ("automation", "automatic automatically 自动", "manual manually 手动 手工"),
        ("visibility", "show shows shown visible 显示", "hide hides hidden 隐藏"),
        ("extreme", "maximum 最大 最多", "minimum 最小 最少"),
        ("location", "local 本地", "remote 远程"),
        ("upgrade", "upgrade 升级", "downgrade 降级"),
        ("compliance", "obey obeys obeyed respect respects respected honor honors honored 遵守 遵循 遵从",
         "ignore ignores ignored disregard disregards disregarded 忽略 忽视 无视"),
    ]
}


@dataclass
class Profile:
    """What the guard compares; built once per text by ``profile`` (cached: do not mutate)."""

    cjk_dominant: bool
    words: set[str] = field(default_factory=set)  # every Latin-script token, folded
    entities: set[str] = field(default_factory=set)  # script-independent: code, CamelCase, Latin in Chinese
    names: set[str] = field(default_factory=set)  # capitalised and ALL-CAPS words (may be translated)
    compounds: set[str] = field(default_factory=set)  # hyphenated words: "byte-offset", "line-number"
    numbers: set[str] = field(default_factory=set)
    spelled: set[str] = field(default_factory=set)  # numbers written as words: "two", "六"
    units: dict[str, set[str]] = field(default_factory=dict)
    content: set[str] = field(default_factory=set)  # other Latin-script words, stemmed, no stop words
    bigrams: set[str] = field(default_factory=set)  # Chinese character bigrams
    surface: list[str] = field(default_factory=list)  # every word and Chinese character, in order
    rejected: set[str] = field(default_factory=set)  # what a contrast rules out
    kind: str | None = None  # the label it opens with, in either language
    negations: int = 0  # how many negation words: two cancel out ("never … without asking" = "ask first")
    contrast: bool = False
    polar: dict[str, set[int]] = field(default_factory=dict)
    cjk_runs: tuple[str, ...] = ()
    joined: set[str] = field(default_factory=set)  # two adjacent words written as one: "time zone" → timezone
    initials: dict[str, str] = field(default_factory=dict)  # a CamelCase word → its capitals: javascript → js

    @cached_property
    def glossed(self) -> dict[str, frozenset[str]]:
        """Each Chinese dictionary word that means something (not a function word or
        boilerplate like 用户希望) → its glosses' stems, cut to ``_GLOSS_PREFIX`` characters.
        Read only for an English–Chinese pair, so the dictionary loads only then."""
        out: dict[str, frozenset[str]] = {}
        for word in glossary.words(self.cjk_runs):
            if word in _ZH_SKIP or (len(word) == 1 and word in _ZH_FUNCTION):
                continue
            stems = frozenset(m[:_GLOSS_PREFIX] for m in glossary.meanings(word, lemma_stem, _STOP))
            if stems:
                out[word] = stems
        return out

    @cached_property
    def meant(self) -> frozenset[str]:
        """Every gloss stem of ``glossed``."""
        return frozenset().union(*self.glossed.values())

    @cached_property
    def stems(self) -> dict[str, str]:
        """Each Latin word that is not a function word or a number → its stem, cut to
        ``_GLOSS_PREFIX`` characters (what a gloss is compared with)."""
        return {w: lemma_stem(w)[:_GLOSS_PREFIX] for w in self.words if w not in _STOP and not re.fullmatch(r"[\d.:]+", w)}


def says_nothing(word: str) -> bool:
    """An English function word or a Chinese word every preference or rule says (用户, 希望):
    no subject or value."""
    return word in _STOP or word in _ZH_SKIP


def fold(word: str) -> str:
    """Lower-case, drop possessives and plurals, so 'wheels' meets 'wheel'."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    if w in _STOP:
        return w
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def stem(word: str) -> str:
    """A crude English stem for comparing content words: 'edited', 'editing' → 'edit',
    'authentication', 'authenticated' → 'authent'."""
    w = fold(word)
    for suffix in ("ations", "ation", "ically", "ally", "ions", "ion", "ings", "ing", "edly", "ed", "ly", "es", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # 'committ' → 'commit'
    while w.endswith(("at", "ic", "iz")) and len(w) >= 6:
        w = w[:-2]
    return w


@lru_cache(maxsize=16384)
def lemma(word: str) -> str:
    """The word's English dictionary form, folded ('wrote' → 'write'). The lemma table
    (simplemma's English one) loads with the first English comparison, like the dictionary."""
    import simplemma

    return simplemma.lemmatize(word, lang="en").lower()


@lru_cache(maxsize=16384)
def lemma_stem(word: str) -> str:
    """``stem`` of the word's dictionary form ('sent' → 'send', 'wrote' → 'write'), for
    meeting a gloss: a translation's English and the dictionary's glosses inflect words
    differently, and irregular forms share no prefix."""
    return stem(lemma(word))


@lru_cache(maxsize=4096)
def profile(body: str) -> Profile:
    """Read a memory body (no keywords line) into the parts the guard compares."""
    opening = _OPENING_KIND.match(body)
    text = _LABEL.sub(". ", body)
    cjk_chars = sum(len(run) for run in _CJK_RUN.findall(text))
    latin_chars = sum(ch.isascii() and ch.isalpha() for ch in text)
    p = Profile(cjk_dominant=cjk_chars >= 4 and 3 * cjk_chars >= latin_chars,
                kind=_KINDS.get(opening.group(1).lower()) if opening else None)
    text, either_half = _clock_times(_plain_numbers(text))
    _read_numbers(text, p)
    p.spelled |= either_half
    for m in _TOKEN.finditer(text):
        _read_token(text, m.start(), m.group(0).rstrip(".:-'="), p)
    for run in _CJK_RUN.findall(text):
        p.bigrams.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    p.bigrams -= _ZH_BOILERPLATE
    p.surface = [fold(t.rstrip(".:-'=")) for t in _SURFACE.findall(text)]
    p.joined = {stem(x + y) for x, y in zip(p.surface, p.surface[1:])
                if x.isascii() and y.isascii() and x.isalpha() and y.isalpha() and _STOP.isdisjoint((x, y))}
    p.cjk_runs = tuple(_CJK_RUN.findall(text))
    p.rejected = {w for m in _REJECTS.finditer(text) for w in _rejected_words(text, m.end())}
    _read_polarity(text, p)
    return p


def _rejected_words(text: str, start: int) -> set[str]:
    """The Latin content words right after a contrast marker, up to the end of the phrase:
    "uv, not the old pip" → {old, pip}; nothing when Chinese follows."""
    words: set[str] = set()
    for m in _REJECTED_WORD.finditer(text, start):
        word = m.group(0).rstrip(".:-'=")
        if not word or not word[0].isascii() or not word[0].isalnum() or len(words) == 3:
            break
        if word.lower() not in _STOP:
            words.add(fold(word))
    return words


def _read_numbers(text: str, p: Profile) -> None:
    for m in _NUMBER.finditer(text):
        value = _canonical_number(m.group(1))
        p.numbers.add(value)
        unit = _UNITS.get((m.group(2) or "").lower())
        if unit:
            p.units.setdefault(value, set()).add(unit)
    p.spelled = {str(_EN_NUMBERS[m.group(1).lower()]) for m in _NUMBER_WORD.finditer(text)}
    p.spelled |= {str(n) for m in _ZH_NUMERAL.finditer(text) if (n := _zh_number(m.group(1))) is not None}
    p.spelled |= {str(_MONTHS.index(m.group(1)[:3].lower()) + 1) for m in _MONTH.finditer(text)}
    # "at 7" may be the "7:00" of the other side, and "7:00" its "7"
    p.spelled |= {f"{v}:00" for v in p.numbers if v.isdigit() and 0 < int(v) <= 24}
    p.spelled |= {v[:-3] for v in p.numbers if re.fullmatch(r"\d{1,2}:00", v)}


# numbers written otherwise: "50,000" / "50k" = 50000, "the 5th" = 5, "a 24-hour TTL" = 24 hours
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_KILO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[kK]\b")
_ORDINAL = re.compile(r"(?<![\w.])(\d+)(?:st|nd|rd|th)\b")
_NUMBER_UNIT = re.compile(r"(?<![\w.])(\d+)-(ms|second|minute|hour|day|week|month|year)\b")


def _plain_numbers(text: str) -> str:
    if not any(ch.isdigit() for ch in text):
        return text
    text = _THOUSANDS.sub("", text)
    text = _KILO.sub(lambda m: str(round(float(m.group(1)) * 1000)), text)
    text = _ORDINAL.sub(r"\1", text)
    return _NUMBER_UNIT.sub(r"\1 \2", text)


# a time of day is compared in 24-hour form: "6 p.m." = "18:00" = "下午六点"
_CLOCK_EN = re.compile(r"(?<![\d:.])(\d{1,2})(?::(\d{2}))?\s?([AaPp])\.?[Mm]\.?(?![A-Za-z])")
_CLOCK_ZH = re.compile(
    r"(上午|早上|早晨|凌晨|中午|下午|晚上|傍晚|夜里|早|晚)?\s*(\d{1,2}|[一二两三四五六七八九十]{1,3})\s*点钟?(半|\s*(\d{1,2})\s*分)?"
)
_AFTERNOON_ZH = ("中午", "下午", "晚上", "傍晚", "夜里", "晚")


def _clock_times(text: str) -> tuple[str, set[str]]:
    """``text`` with each time of day that says its half of the day (6 p.m., 下午六点) written
    as a 24-hour time (18:00), and the times of a Chinese time that does not (六点: 6:00 or
    18:00, taken out of the text)."""
    either: set[str] = set()

    def en(m: re.Match) -> str:
        hour, minute = int(m.group(1)), int(m.group(2) or 0)
        if hour > 12 or minute > 59:
            return m.group(0)
        hour = hour % 12 + (12 if m.group(3) in "Pp" else 0)
        return f" {hour}:{minute:02d} "

    def zh(m: re.Match) -> str:
        raw = m.group(2)
        hour = int(raw) if raw.isdigit() else _zh_number(raw, one=True)
        minute = 30 if m.group(3) == "半" else int(m.group(4) or 0)
        if hour is None or hour > 24 or minute > 59:
            return m.group(0)
        if m.group(1) in _AFTERNOON_ZH and hour < 12:
            hour += 12
        elif m.group(1) == "凌晨" and hour == 12:
            hour = 0
        elif m.group(1) is None and 0 < hour <= 12:
            either.update((f"{hour}:{minute:02d}", f"{hour % 12 + 12}:{minute:02d}"))
            return " "  # either half of the day: it forgives both, and states neither
        return f" {hour}:{minute:02d} "

    if any(ch in text for ch in "AaPp"):
        text = _CLOCK_EN.sub(en, text)
    if "点" in text:
        text = _CLOCK_ZH.sub(zh, text)
    return text, either


def _zh_number(raw: str, one: bool = False) -> int | None:
    """'六' → 6, '十二' → 12, '三十' → 30, '两' → 2 (up to 99); with ``one`` also '一' and
    '十一' (a clock's hour, where 一 is no article)."""
    table = _ZH_DIGITS | {"一": 1} if one else _ZH_DIGITS
    digits = [table.get(ch) for ch in raw]
    if None in digits:
        return None
    if "十" not in raw:
        return digits[0] if len(digits) == 1 else None
    tens, _, ones = raw.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    return (table[tens] if tens else 1) * 10 + (table[ones] if ones else 0)


def _canonical_number(raw: str) -> str:
    """'02:00' and '2:00' are one time; '3.10' and '3.1' stay two versions."""
    head, rest = re.match(r"(\d+)(.*)", raw).groups()
    return (head.lstrip("0") or "0") + rest


def _read_token(text: str, start: int, tok: str, p: Profile) -> None:
    if not tok or not any(ch.isalnum() for ch in tok):
        return
    folded = fold(tok)
    p.words.add(folded)
    lower = tok.lower()
    if re.fullmatch(r"[\d.:]+", tok) or lower in _UNITS:
        return  # numbers and their units are compared in ``numbers``
    if re.fullmatch(r"\d+(?:\.\d+)?[A-Za-z%]+", tok) and tok.lstrip("0123456789.").lower() in _UNITS:
        return  # "30s", "512MB"
    if re.fullmatch(r"[a-z]+(?:-[a-z]+)+", lower) and not tok.isupper():  # "full-text", "On-call": a compound word
        p.content.add(stem(tok))
        p.compounds.add(folded)
        return
    camel = any(ch.isupper() for ch in tok[1:]) and any(ch.islower() for ch in tok)
    if camel and tok.isalpha():
        p.initials[folded] = "".join(ch for ch in tok if ch.isupper()).lower()
    if _code_shaped(tok) or camel or (p.cjk_dominant and lower not in _STOP):
        p.entities.add(folded)
    elif lower in _COMMON_CAPS or lower in _STOP:
        return
    elif (tok.isupper() and len(tok) > 1) or (tok[0].isupper() and not _sentence_initial(text, start)):
        p.names.add(folded)
    elif len(lower) > 1:
        p.content.add(stem(tok))


def _code_shaped(tok: str) -> bool:
    return (
        any(ch.isdigit() for ch in tok)
        or re.search(r"[A-Za-z0-9][._/\-:=+#][A-Za-z0-9]", tok) is not None
        or tok[0] in "~./-"
        or tok.endswith("/")
    )


def _sentence_initial(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t\"'`*-":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def negations(text: str) -> int:
    """How many words negate in ``text`` (English and Chinese), idioms that negate nothing
    ("nothing but", "no more than", 不同, 不确定) and a contrast's "not" ("uv, not pip") left
    out. The one count: the guard's profile and the lifecycle's clauses both read it."""
    return len(_negating(text))


def _negating(text: str) -> list[tuple[int, int]]:
    """Where the words ``negations`` counts stand in ``text``: (start, end) of each."""
    def blank(m: re.Match) -> str:  # same length, so the offsets stay the text's
        return " " * len(m.group(0))

    contrast_nots = {m.end() for m in _NOT_AFTER_COMMA.finditer(text)}  # "uv, not pip"
    en = [m.span() for m in _NEGATION_EN.finditer(_NOT_NEGATION_EN.sub(blank, text)) if m.end() not in contrast_nots]
    return en + [m.span() for m in _NEGATION_ZH.finditer(_NOT_NEGATION_ZH.sub(blank, text))]


def without_negations(text: str) -> str:
    """``text`` with each word that negates blanked out: what a clause states, its sign aside.
    A negation is how a clause says something, never what it is about: 不需要 / 不需要 on both
    sides is no shared term, whatever each clause denies."""
    out = list(text)
    for start, end in _negating(text):
        out[start:end] = " " * (end - start)
    return "".join(out)


_CLAUSE = re.compile(rf"[;；。!?！？\n，]|(?<=[{_CJK}]),|,(?=\s*[{_CJK}])|,\s+(?:but|and|so|then)\b|[.](?=\s)"
                     r"|(?<=\S)\s+[—–]+\s+")
_CONTRAST_SPLIT = re.compile(r"\binstead of\b|\brather than\b|\bin place of\b|,\s*not\b|而不是|而非", re.IGNORECASE)
# where the thing a contrast rejects ends: "uv instead of [pip] for Python"
_REJECTED_END = re.compile(rf"(?i)\s(?:for|in|on|at|to|with|when|because|so|from|by|during|if|and|or|as)\s|[{_CJK}]{{3}}")


def clauses(body: str) -> list[str]:
    """A text cut where one statement ends and the next begins: sentence ends, semicolons,
    commas in Chinese text, ", but / and / so / then" and dashes between words (a Latin comma
    alone mostly joins a phrase to its clause: "when booking flights, avoid red-eyes")."""
    return _CLAUSE.split(body)


def polar_clauses(body: str) -> list[tuple[str, int]]:
    """A text's clauses, each with the polarity of what it states: -1 when it negates (an odd
    number of negations: "never … without asking" asks), else 1. What a contrast rejects
    ("uv instead of pip", "uv, not pip", "uv 而不是 pip") is left out: it is the other value,
    stated by neither sign (measured: read as a denial, it kept more paraphrases apart than
    contradictions). A negation attaches to its clause's predicate, so "must never call X
    directly; requests go through the queue" and "calls X directly; requests must not go on
    the queue" say the opposite with the same count of negations. Each clause comes without
    its negation words (``without_negations``): its sign says them."""
    out = []
    for clause in clauses(body):
        kept, *rejected = _CONTRAST_SPLIT.split(clause)
        kept += " ".join(r[m.start():] for r in rejected if (m := _REJECTED_END.search(r)))
        if kept.strip():
            out.append((without_negations(kept), -1 if negations(kept) % 2 else 1))
    return out


def _read_polarity(text: str, p: Profile) -> None:
    p.negations = negations(text)
    p.contrast = bool(_CONTRAST_EN.search(text) or _CONTRAST_ZH.search(text))
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
    words |= {fold(w) for w in words}
    for name, (pos, neg) in _POLAR.items():
        signs = {
            sign
            for sign, vocab in ((1, pos), (-1, neg))
            for term in vocab
            if ((term in words) if term.isascii() else (term in text))
        }
        if signs:
            p.polar[name] = signs


def conflicts(a: Profile, b: Profile) -> list[str]:
    """Why ``a`` and ``b`` cannot be the same memory (empty when nothing contradicts)."""
    return [why for rule in _RULES if (why := rule(a, b))]


def _kinds_differ(a: Profile, b: Profile) -> str | None:
    """"Fact: …" / "Decision: …" (or "决定：…"): what the memory is differs, whatever it is about."""
    return f"kinds {a.kind} vs {b.kind}" if a.kind and b.kind and a.kind != b.kind else None


def _numbers_differ(a: Profile, b: Profile) -> str | None:
    only = (a.numbers - b.numbers - b.spelled) | (b.numbers - a.numbers - a.spelled)
    if only:
        return f"numbers {sorted(only)}"
    clash = [v for v in a.numbers if a.units.get(v) and b.units.get(v) and not a.units[v] & b.units[v]]
    return f"units of {clash}" if clash else None


def _entity_missing(a: Profile, b: Profile) -> str | None:
    only_a = {e for e in a.entities if e not in b.words and not _written_otherwise(e, a, b)}
    only_b = {e for e in b.entities if e not in a.words and not _written_otherwise(e, b, a)}
    if a.cjk_dominant and b.cjk_dominant:
        # between two Chinese texts a plain English word may be translated ("push" / "推送"):
        # code-shaped entities must be on both sides, plain words only conflict as a swap or
        # against a side with no Latin word that glosses none of them ("Confluence" / "语雀")
        untranslated = {e for e in only_a if not b.entities and a.stems.get(e) not in b.meant} | {
            e for e in only_b if not a.entities and b.stems.get(e) not in a.meant}
        if not any(_code_shaped(e) for e in only_a | only_b) and not (only_a and only_b) and not untranslated:
            return None
    return f"entities {sorted(only_a)} vs {sorted(only_b)}" if only_a or only_b else None


def _written_otherwise(word: str, side: Profile, other: Profile) -> bool:
    """``word`` of ``side`` is on the ``other`` side shortened or spelled out: a numeronym
    ("k8s" / "Kubernetes"), an abbreviation of a CamelCase word ("JS" / "JavaScript") or of
    adjacent words ("ADRs" / "architecture decision records", "PR" / "pull request")."""
    if _numeronym_met(word, other.words):
        return True
    if side.initials.get(word) in other.words:
        return True
    if not (word.isalpha() and 2 <= len(word) <= 5):
        return False
    if word in other.initials.values():
        return True
    n, words = len(word), other.surface
    return any(all(w.isalpha() and w not in _STOP for w in words[i : i + n])
               and "".join(w[0] for w in words[i : i + n]) == word for i in range(len(words) - n + 1))


_NUMERONYM = re.compile(r"([a-z])(\d{1,2})([a-z])")


def _numeronym_met(entity: str, words: set[str]) -> bool:
    """"k8s" is "kubernetes" (k, 8 letters, s), "i18n" "internationalization"."""
    m = _NUMERONYM.fullmatch(entity)
    if m is None:
        return False
    first, n, last = m.group(1), int(m.group(2)) + 2, m.group(3)
    # words are folded: "kubernetes" is kept as "kubernete"
    return any(w[:1] == first and ((len(w) == n and w[-1] == last) or (last == "s" and len(w) == n - 1))
               for w in words)


def _nothing_named_in_common(a: Profile, b: Profile) -> str | None:
    """English vs Chinese: a translation keeps the names; one that keeps none is another text."""
    if a.cjk_dominant == b.cjk_dominant:
        return None
    en, zh = (b, a) if a.cjk_dominant else (a, b)
    anchors = {n for n in en.entities | en.names if n not in TRANSLATED_NAMES}
    if anchors and not anchors & zh.words and not translated_names(a, b):
        return f"nothing the English side names is in the Chinese one: {sorted(anchors)}"
    return None


def _weekdays_differ(a: Profile, b: Profile) -> str | None:
    """English vs Chinese: "every Sunday" / "每周六", or a weekday on one side only ("every
    Sunday night" / "每天晚上"): a translation keeps the day."""
    if a.cjk_dominant == b.cjk_dominant:
        return None
    en, zh = (b, a) if a.cjk_dominant else (a, b)
    said_en, said_zh = _weekdays_en(en), _weekdays_zh(zh)
    return f"weekdays {sorted(said_en)} vs {sorted(said_zh)}" if said_en != said_zh else None


def weekdays(p: Profile) -> set[str]:
    """The weekdays a text names, in English or Chinese (周三, 星期三: wednesday)."""
    return _weekdays_en(p) | _weekdays_zh(p)


def _weekdays_en(p: Profile) -> set[str]:
    return {day for day in _WEEKDAYS if day in p.words}


def _weekdays_zh(p: Profile) -> set[str]:
    return {_WEEKDAYS["一二三四五六日天".index(m.group(1)) % 7 if m.group(1) != "天" else 6]
            for run in p.cjk_runs for m in _WEEKDAY_ZH.finditer(run)}


def _nothing_translates(a: Profile, b: Profile) -> str | None:
    """English vs Chinese, read through the dictionary: the Chinese words mean almost none
    of what the English side says ("事实：Docker 的配置由运维组统一管理" / "Fact: the Docker
    dashboard is linked from the team wiki"), however many names they share. Glosses only,
    no synonyms: through 统一 *to integrate* "linked" would be the one word those two share."""
    if a.cjk_dominant == b.cjk_dominant:
        return None
    en_hits, en_terms, _, zh_words = translated_overlap(a, b)
    if en_terms >= 3 and zh_words >= 2 and en_hits < _UNTRANSLATED * en_terms:
        return f"the Chinese words translate {en_hits} of the English side's {en_terms}"
    return None


def translates(a: Profile, b: Profile) -> bool:
    """English vs Chinese: the Chinese words mean most (``_TRANSLATED``) of what the English side says
    (at least two of its words), directly or through a word of the same sense, which anchors a
    translation that keeps no name ("决定：功能分支合并之后就删除" / "Decision: feature branches
    are deleted after they are merged"; "发送" *to transmit* / "sent")."""
    if a.cjk_dominant == b.cjk_dominant:
        return False
    en_hits, en_terms, _, _ = translated_overlap(a, b, synonyms=True)
    return en_hits >= 2 and en_hits >= _TRANSLATED * en_terms


def _names_swapped(a: Profile, b: Profile) -> str | None:
    """Within one language; across languages a name may be translated. A hyphenated word
    names a thing as a proper noun does: "byte-offset cursors" / "line-number cursors"."""
    if a.cjk_dominant != b.cjk_dominant:
        return None
    forms_a, forms_b = {_compound_form(c) for c in a.compounds}, {_compound_form(c) for c in b.compounds}
    na = {n for n in a.names | a.compounds
          if n not in b.words and _compound_form(n) not in forms_b and not _written_otherwise(n, a, b)}
    nb = {n for n in b.names | b.compounds
          if n not in a.words and _compound_form(n) not in forms_a and not _written_otherwise(n, b, a)}
    return f"names {sorted(na)} vs {sorted(nb)}" if na and nb else None


def _compound_form(word: str) -> str:
    """"force-pushing" and "force-push", "re-extracted" and "re-extracting" are one word."""
    return "-".join(stem(part) for part in word.split("-"))


def _slot_swapped(a: Profile, b: Profile) -> str | None:
    if a.cjk_dominant != b.cjk_dominant:
        return None
    swap = _slot_swap(a.surface, b.surface)
    if swap is None:
        return None
    old, new = swap
    if (len(old) == 1 and _written_otherwise(old[0], a, b)) or (len(new) == 1 and _written_otherwise(new[0], b, a)):
        return None  # "[PR]" / "[pull request]", "[TS]" / "[TypeScript]"
    return f"swapped {' '.join(old)} → {' '.join(new)}"


def _rejects_differ(a: Profile, b: Profile) -> str | None:
    """Each side rules out something the other does not: "ruff, not black" / "black, not
    ruff", or each rules out what the other keeps: "morning flights over evening flights" /
    the reverse, where both reject *flights*."""
    disjoint = a.rejected and b.rejected and not a.rejected & b.rejected
    swapped = (a.rejected - b.rejected) & b.words and (b.rejected - a.rejected) & a.words
    if disjoint or swapped:
        return f"rejects {sorted(a.rejected)} vs {sorted(b.rejected)}"
    return None


def _negation_differs(a: Profile, b: Profile) -> str | None:
    """One side negated, the other not — counted within one language, where two negations
    cancel out ("don't merge a pull request that has no linked issue" / "needs a linked issue
    before it is merged"); across languages the words do not line up one for one (时钟不对 is
    "the clock was wrong"), so there only whether either side negates at all."""
    if a.contrast or b.contrast:
        return None
    if a.cjk_dominant == b.cjk_dominant:
        return "negation" if a.negations % 2 != b.negations % 2 else None
    return "negation" if (a.negations > 0) != (b.negations > 0) else None


def _polarity_differs(a: Profile, b: Profile) -> str | None:
    flipped = [
        name for name in a.polar.keys() & b.polar.keys()
        if a.polar[name] != b.polar[name] and len(a.polar[name]) == len(b.polar[name]) == 1
    ]
    return f"polar {flipped}" if flipped else None


def _opening_only(a: Profile, b: Profile) -> str | None:
    """One text is only the opening of the other ("Rule: before merging, always" / "Rule:
    before merging, always rebase onto main."): a memory cut off mid-sentence says less, and
    a merge would keep whichever of the two came first."""
    short, whole = sorted((a.surface, b.surface), key=len)
    if not short or whole[: len(short)] != short:
        return None
    rest = _meaningful(whole[len(short) :])
    return f"only the opening of the other, which goes on: {' '.join(rest[:6])}" if len(rest) >= 2 else None


def _predicate_differs(a: Profile, b: Profile) -> str | None:
    """Same subject, another predicate: both open with the same words (two or more that mean
    something), then say two different things in one script ("事实：打印机在三楼的会议室旁边" /
    "事实：打印机经常卡纸"; "the mobile app caches images on disk" / "the mobile app crashes when
    the disk is full"). The rests may share a third of their words, and any thing they both
    name: "决定：数据库迁移用 Alembic 管理" / "数据库迁移统一交给 Alembic" is one memory."""
    k = 0
    while k < min(len(a.surface), len(b.surface)) and a.surface[k] == b.surface[k]:
        k += 1
    subject = _meaningful(a.surface[:k])
    rest_a, rest_b = _meaningful(a.surface[k:]), _meaningful(b.surface[k:])
    if len(subject) < 2 or len(rest_a) < 2 or len(rest_b) < 2:
        return None
    scripts = {bool(_CJK_RUN.fullmatch(t)) for t in rest_a + rest_b if not t.isdigit()}
    if len(scripts) != 1:
        return None  # a rest in two scripts may be a translation of the other's
    ta, tb = {_term(t) for t in rest_a}, {_term(t) for t in rest_b}
    shared = ta & tb
    named = a.entities | a.names | b.entities | b.names
    if shared & named or 3 * len(shared) > min(len(ta), len(tb)):
        return None
    return f"same subject ({' '.join(subject)}), other predicates: {' '.join(rest_a[:5])} / {' '.join(rest_b[:5])}"


def _meaningful(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in _STOP and t not in _ZH_FUNCTION]


def _term(token: str) -> str:
    return token if _CJK_RUN.fullmatch(token) else stem(token)


_RULES = (
    _kinds_differ, _numbers_differ, _entity_missing, _nothing_named_in_common, _weekdays_differ, _nothing_translates,
    _names_swapped, _slot_swapped, _opening_only, _predicate_differs,
    _rejects_differ, _negation_differs, _polarity_differs,
)


def _slot_swap(a: list[str], b: list[str]) -> tuple[list[str], list[str]] | None:
    """The two texts are one template with one slot filled differently ("use [uv] instead
    of pip" / "use [poetry] instead of pip", "都写[类型注解]" / "都写[文档字符串]"): that slot
    is what the memory is about. The slot may recur, filled the same way each time ("[nginx]
    logs filled the disk … cap the log size of [nginx]" / "[Docker] … [Docker]"): a tool
    named in any case. A slot is at most 4 words or 8 Chinese characters; a paraphrase
    changes more than one place (measured: allowing two different slots loses paraphrases)."""
    if abs(len(a) - len(b)) > 8:  # one slot of ≤ 8 tokens cannot make them differ more
        return None
    ops = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    fills = {(tuple(a[i1:i2]), tuple(b[j1:j2])) for _, i1, i2, j1, j2 in ops}
    if not ops or any(op[0] != "replace" for op in ops) or len(fills) != 1:
        return None
    old, new = (list(span) for span in fills.pop())
    if _span_words(old) > 4 or _span_words(new) > 4 or _span_words(a) - _span_words(old) < 2:
        return None
    if not _meaningful(old + new):
        return None  # "instead of" / "rather than", "的" / "了"
    if "".join(old) == "".join(new) or _same_word(old, new) or _translated(old, new) or _negation_reworded(old, new):
        return None
    if _same_sense(old, new) or _same_number(old, new):
        return None
    return old, new


def _same_word(old: list[str], new: list[str]) -> bool:
    """One word in another form: "deploy" / "deployments happen", "edited" / "editing"."""
    words = [w for w in old + new if w not in _STOP and not _CJK_RUN.fullmatch(w)]
    if not old or not new or len(words) < 2:
        return False
    heads = [w for w in old if w not in _STOP] or old
    return all(any(_common_prefix(h, w) >= 5 or (min(len(h), len(w)) >= 4 and _common_prefix(h, w) == min(len(h), len(w)))
                   for w in new if w not in _STOP) for h in heads)


def _same_number(old: list[str], new: list[str]) -> bool:
    """"[two] minutes" / "[2] minutes": one number, written as a word on one side."""
    def value(span: list[str]) -> str | None:
        if len(span) != 1:
            return None
        w = span[0]
        if w.isdigit():
            return _canonical_number(w)
        n = _EN_NUMBERS.get(w) or _ZH_DIGITS.get(w)
        return str(n) if n else None
    return value(old) is not None and value(old) == value(new)


def _same_sense(old: list[str], new: list[str]) -> bool:
    """"[changes] every Monday" / "[switches] each Monday": one English word each side (besides
    function words) that the dictionary lists as one meaning (``glossary.same_sense``)."""
    wa = [w for w in old if w not in _STOP]
    wb = [w for w in new if w not in _STOP]
    if len(wa) != 1 or len(wb) != 1 or not (wa[0].isascii() and wa[0].isalpha() and wb[0].isascii() and wb[0].isalpha()):
        return False
    def forms(w: str) -> set[str]:  # the surface is folded ("switches" → "switche"): try it with its "s"
        return {lemma(x) for x in (w, w + "s")}

    fa, fb = forms(wa[0]), forms(wb[0])
    return not fa & fb and any(glossary.same_sense(x, y) for x in fa for y in fb)


def _negation_reworded(old: list[str], new: list[str]) -> bool:
    """"[never use] tables" / "[do not put] tables": both spans negate, and besides the
    negation and function words they hold at most one word between them."""
    neg = {"never", "not", "no", "don't", "do", "doesn't", "dont"}
    if not (set(old) & neg and set(new) & neg):
        return False
    rest = [w for w in old + new if w not in neg and w not in _STOP]
    return len(rest) <= 1


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _translated(old: list[str], new: list[str]) -> bool:
    """Chinese characters on one side, Latin words on the other: "推送" / "push" is one word
    in two scripts (different Chinese on both sides, "周日" / "周六", stays a swap)."""
    def script(span: list[str]) -> str | None:  # function words aside: "[dashboard 在]" / "[面板的地址是]"
        kinds = {"zh" if _CJK_RUN.fullmatch(w) else "latin" for w in _meaningful(span)}
        return kinds.pop() if len(kinds) == 1 else None
    return {script(old), script(new)} == {"zh", "latin"}


def _span_words(tokens: list[str]) -> float:
    return sum(0.5 if _CJK_RUN.fullmatch(t) else 1.0 for t in tokens)


def lexical_similarity(a: Profile, b: Profile) -> float:
    """Share of wording in common, 0–1, as a share of the smaller side's terms.

    Within one language the terms are entities, names, numbers, stemmed content words and
    Chinese bigrams. Across languages (English memory, Chinese memory) only the
    script-independent terms can meet — entities and numbers — and 1.0 means the Chinese
    side names nothing the English side lacks (or neither names anything).
    """
    if a.cjk_dominant != b.cjk_dominant:
        zh, en = (a, b) if a.cjk_dominant else (b, a)
        terms = zh.entities | zh.numbers
        if not terms:
            return 1.0
        return len({t for t in terms if t in en.words or t in en.numbers}) / len(terms)
    ta, tb = _terms(a), _terms(b)
    if not ta or not tb:
        return 0.0
    # one word on one side, two on the other ("timezone" / "time zone"): one term in common
    shared = len(ta & tb) + len((ta - tb) & b.joined) + len((tb - ta) & a.joined)
    return min(shared, len(ta), len(tb)) / min(len(ta), len(tb))


def shared_names(a: Profile, b: Profile) -> set[str]:
    """Entities, names and numbers both texts state: what lets a translation be recognised
    as one (script-independent). A number may be written as a word on one side (7 / 七点)."""
    named_a = a.entities | a.names | a.numbers
    named_b = b.entities | b.names | b.numbers
    weekdays = (_weekdays_en(a) & _weekdays_zh(b)) | (_weekdays_en(b) & _weekdays_zh(a))
    spelled = (a.numbers & b.spelled) | (b.numbers & a.spelled)
    return (named_a & (b.words | b.numbers)) | (named_b & (a.words | a.numbers)) | weekdays | spelled


def translated_names(a: Profile, b: Profile) -> set[str]:
    """English vs Chinese: the English side's names the Chinese side writes in Chinese — a
    place the dictionary glosses by its English name (Shenzhen / 深圳, Oxford / 牛津), or a
    person's name written in pinyin (Wang Fang / 王芳). Reads the dictionary: call it only for
    such a pair."""
    if a.cjk_dominant == b.cjk_dominant:
        return set()
    en, zh = (b, a) if a.cjk_dominant else (a, b)
    names = {n for n in en.names if n not in zh.words}
    if not names:
        return set()
    met = names & {g for word in glossary.words(zh.cjk_runs) for g in glossary.proper_names(word)}
    pairs = [(x, y) for x, y in zip(en.surface, en.surface[1:]) if x in names and y in names]
    if pairs:
        written = {w for run in zh.cjk_runs for size in (2, 3) for w in glossary.pinyin(run, size)}
        met |= {n for x, y in pairs if x + y in written for n in (x, y)}
    return met


# stems meet when their first 6 letters do: "depend" (依赖) / "dependency", "merg" / "merging"
_GLOSS_PREFIX = 6
# share of the English side's words the Chinese words gloss to: under the first the two say
# different things; from the second on a translation that keeps no name is recognised. On the
# tuning half, memories with the same subject and another predicate reach 0.67 (0.4 merged 3,
# 0.6 eight on round 8's tuning set)
_UNTRANSLATED = 0.2
_TRANSLATED = 0.7


def translated_overlap(a: Profile, b: Profile, synonyms: bool = False) -> tuple[int, int, int, int]:
    """English vs Chinese, read through the dictionary: (English content words some Chinese
    word glosses to, English content words, Chinese words whose glosses meet the English
    side, Chinese words with a gloss). Words written the same on both sides (tool names,
    paths) are left out: ``shared_names`` counts those. With ``synonyms``, an English word
    also meets a gloss through a word of the same sense (``glossary.synonyms``: "short" /
    简短 *brief*, "changing" / 修改 *modify*)."""
    en, zh = (b, a) if a.cjk_dominant else (a, b)
    words = {w: s for w, s in en.stems.items() if w not in zh.words}
    en_terms = set(words.values())
    hit = en_terms & zh.meant
    if synonyms:
        hit |= {s for w, s in words.items() if s not in hit and _synonym_stems(w) & zh.meant}
    zh_hits = sum(1 for stems in zh.glossed.values() if stems & en_terms)
    return len(hit), len(en_terms), zh_hits, len(zh.glossed)


@lru_cache(maxsize=16384)
def _synonym_stems(word: str) -> frozenset[str]:
    return frozenset(lemma_stem(y)[:_GLOSS_PREFIX] for y in glossary.synonyms(lemma(word)))


def _terms(p: Profile) -> set[str]:
    return p.entities | p.names | p.numbers | p.content | p.bigrams
