"""How a new memory relates to a stored one it lands near: **same** (merge, as dedup
decides), **supersedes** (a newer statement of the same rule, preference or decision with
another value), **contradicts** (the same subject, a different value, and nothing saying
which is newer: both kept, related, flagged), or **distinct**.

The rule path reads what the new text says about change. An update names what it replaces
("X instead of Y", "switched from Y to X", "replace Y with X", "Y is no longer …", "Y was
dropped / retired", "stop using Y", "不再用 Y", "改用 X", "Y 停用", "从 Y 改为 X", "调整为 X",
"move … to X", "迁到 X", "调成 X") or says it is new ("from now on", "as of", "now", "以后",
"现在", "从…起", "改主意了"). In a pitfall's cause and fix only what names the thing it no
longer does is read ("Fix: instead of downgrading to JDK 11, …"; "解决：…，不再去解锁 …"); a
fix's own "switch to X" / "改成 X", inline too ("…升级到 18 就好了"), is what was done about
the error. It supersedes a stored
row when the two share their subject (``SUBJECT_SHARE``, or a cosine at the dedup floor),
are about the same environment and repo, the replaced part names something that row says
and the new part something it does not: "use uv instead of pip" replaces "install with
pip", but only restates "uv, not pip" or "chose uv over pip". Across languages only what
both write the same compares (names, code, numbers, weekdays: ``_named_alike``): "规则：Node
版本固定为 18" / "Rule: pin Node to 20" is one slot with another number, and a language or
weekday compares whichever script names it (中文 / "Chinese": ``_written_names``).

"Same" is precision-first, because a wrong merge loses a memory and a missed one costs a row
the converge pass or a person can merge: dedup must call them the same *and* every
value-bearing token agree (``value_difference``: code spans, numbers and their order,
numbers spelled out, environments and repos, how often each negates and what each clause
affirms or denies (``polarity_turned``: "must never call X directly; … go through the queue"
/ "calls X directly; … must not go on the queue" negate once each, the opposite things),
words that trade places, a template filled with other words, in Chinese one place filled
with words of another meaning: "用户希望[回答]用中文" / "用户希望[代码注释]用中文写"). When the rule cannot tell
"same" from a change it keeps both, related or not: a merge loses the newer statement, a
kept pair costs a near-duplicate. Without any word of change, the same subject
with another value in one place (``slot_change``) supersedes a rule, preference or decision
(a person's newer choice; the old one stays as history) and contradicts a pitfall or fact,
or any text whose polarity it turns (always / never, across languages too): both kept, and
the run says so. A clause that denies what the stored row names ("S3 region is not the
issue") contradicts it. Two places changed, another environment or repo, or one place that
holds no value while a value both name stays outside it ("3 [projects] per workspace" / "3
[members] …": the same value said of another thing) is another memory.

With an LLM configured (``settings.llm`` not ``rules``), the nearest stored row in the band
(``BAND_BELOW`` under the dedup floor and up, not an exact copy) is put to the model instead:
one short call per new memory, at most ``LLM_PAIRS`` per write, answer validated against
:class:`Judgement`; a failed or invalid answer falls back to the rule.
docs/store.md has the figures on ``tests/data/lifecycle_pairs.jsonl``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from os.path import commonprefix
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from pydantic import BaseModel, Field, ValidationError

from ..text.keywords import without_keywords
from . import glossary
from . import lexical_guard as guard
from .dedup import NEAREST, Evidence, Neighbour, Verdict, decide, strip_keywords

if TYPE_CHECKING:
    from ..config import DedupThresholds, Settings

Relation = Literal["same", "supersedes", "contradicts", "distinct"]
BAND_BELOW = 0.10  # the band starts this far under the dedup cosine floor (local: 0.82)
CONTRADICTION_SHARE = 0.5  # share of their terms two contradicting texts have in common
UPDATE_SHARE = 0.4  # "from now on" + a changed value: the share of terms they must still have in common
SUBJECT_SHARE, SUBJECT_SHARE_ZH = 0.2, 0.4  # any supersede: what one subject shares at least
CONTRADICTION_SHARE_ZH = 0.65  # Chinese: share of their characters, in order
LLM_PAIRS = 16  # model calls per write, at most


@dataclass(frozen=True)
class Decision:
    relation: Relation
    id: str | None  # the stored row it relates to (for distinct: the nearest compared, if any)
    reason: str
    cosine: float | None = None
    by: Literal["rule", "llm"] = "rule"


# ---------------------------------------------------------------- reading change in a text
_GONE = (r"(?:dropped|removed|retired|deprecated|discontinued|decommissioned|abandoned|ditched|phased out|sunset"
         r"|turned off|disabled|shut down|replaced)")
_GONE_ZH = "停用|下线|废弃|弃用|淘汰|退役|作废|不再使用|取消了|关停"
_TO_ZH = ("调整为|调整到|调整成|调到|调为|调成|更新为|更新到|升级到|升级为|提高到|提升到|降到|降低到|降为|减少到|增加到"
          "|缩短到|延长到|改在|挪到|移到|换了|改了")
# moving to another thing ("改用 X", "迁到 X", "改发到 X"): X is the replacement
_SWITCH_ZH = "改用|改为|改成|改到|改发到|换成|换用|换到|切换到|切换成|迁移到|迁移至|迁到|迁至|搬到"
_B = r"(?:[^,;.!?。，；！？]|\.(?=\S))"  # inside one clause (a dot inside a name does not end it)
_EN_SPANS = [re.compile(p, re.I) for p in (
    rf"(?P<new>{_B}+?)\s+(?:instead of|rather than|in place of)\s+(?P<old>{_B}+)",
    rf"(?:^|(?<=[,;:]))\s*(?:instead of|rather than)\s+(?P<old>{_B}+?),\s*(?P<new>{_B}+)",  # "instead of Y, do X"
    rf"(?:switch|mov|migrat|chang|upgrad|downgrad|bump|rais|lower|increas|decreas|went|go)\w*\s+(?:{_B}+?\s+)?"
    rf"from\s+(?P<old>{_B}+?)\s+to\s+(?P<new>{_B}+)",
    rf"replac\w*\s+(?P<old>{_B}+?)\s+(?:with|by)\s+(?P<new>{_B}+)",
    rf"(?P<old>{_B}+?)\s+(?:is|are|was|were|has been|have been|got)\s+replaced\s+(?:with|by)\s+(?P<new>{_B}+)",
    rf"(?:no longer|stop(?:ped)? using|away from)\s+(?P<old>{_B}+)",
    rf"(?:mov|switch|migrat)\w*\s+(?:{_B}+?\s+)?off\s+(?P<old>{_B}+?)(?:\s+(?:and\s+)?(?:on)?to\s+(?P<new>{_B}+))?$",
    rf"(?P<old>{_B}+?)\s+(?:is|are|was|were)\s+no longer\b",
    rf"(?:not|n't)\s+(?P<old>{_B}+?)\s+any ?more\b",
    rf"\bnow\s+(?:uses?|using|runs?(?: on)?|wants?|prefers?|bundles? with|goes to)\s+(?P<new>{_B}+)",
    rf"(?P<old>{_B}+?)\s+(?:is|are|was|were|has been|have been|got|gets|will be)\s+(?:now\s+)?{_GONE}\b",
    rf"(?<!\bbe )\b(?:dropped|retired|deprecated|ditched|abandoned|phased out|decommissioned)\s+(?P<old>{_B}+)",
    rf"\b(?:upgrad|mov|switch|migrat|bump|rais|lower|increas|decreas|shift|adjust|reschedul)\w*\s+(?:{_B}+?\s+)?"
    rf"to\s+(?P<new>{_B}+)",
    rf"\bchanged\s+(?:{_B}+?\s+)?to\s+(?P<new>{_B}+)",
)]
_ZH_SPANS = [re.compile(p) for p in (
    rf"(?:{_TO_ZH})(?P<new>{_B}+)",
    rf"(?P<old>{_B}+?)(?:已经|已|将|会|要|也)?(?:{_GONE_ZH})",
    rf"从(?P<old>{_B}+?)(?:改|换|切换|迁移|升级|调整)(?:成|为|到|用)(?P<new>{_B}+)",
    rf"(?:用|使用|采用)(?P<new>{_B}+?)(?:代替|替代|取代|替换)(?P<old>{_B}+)",
    rf"(?:{_SWITCH_ZH})(?P<new>{_B}+)",
    rf"(?:不再|别再|不要再)(?:用|使用|采用|允许|需要)?(?P<old>{_B}+)",
    rf"而不是(?P<old>{_B}+)",
)]
_WEAK = re.compile(r"(?i)\b(?:from now on|going forward|from here on|henceforth|as of|now|starting|effective"
                   r"|these days|nowadays|currently|any more|anymore|no more)\b"
                   r"|(?:changed|changes|change) (?:my|his|her|their|our) minds?\b"
                   r"|以后|今后|从现在起|从现在开始|此后|现在|目前|即日起|从\S{1,10}?(?:起|开始)|起[,，]|改主意|改变主意")
# words of change themselves: never a value
_MARKER_TERMS = frozenset(
    "instead rather place longer now anymore stop stopped switch switched move moved migrate migrated "
    "change changed replace replaced replacing going forward henceforth from on off away allow allowed "
    "use uses used using run runs dropped removed retired deprecated discontinued decommissioned abandoned "
    "ditched phased sunset turned disabled shut replaced upgraded upgrade moved move bumped raised lowered "
    "increased decreased shifted adjusted rescheduled starting effective currently nowadays".split())
_MARKER_ZH = re.compile(r"不再|别再|不要再|代替|替代|取代|替换|而不是|以后|今后|从现在起|从现在开始|此后|现在|目前|"
                        r"使用|采用|统一|改主意|改变主意|" + _SWITCH_ZH + "|" + _GONE_ZH + "|" + _TO_ZH)

_CHANGE_CHARS = set("换改用为成到替代取切迁移")


def _terms(text: str) -> set[str]:
    """What a span names: content words, entities, numbers, names, Chinese bigrams. Names are
    stemmed as content words are: a span cut from a sentence ("从 Filebeat 换成 Vector") opens
    with a capitalised word the guard reads as a sentence's first word, not as the name it is
    in the whole text."""
    text = _MARKER_ZH.sub("，", text)
    p = guard.profile(text)
    out = {t for t in p.content | p.entities | p.numbers if t not in _MARKER_TERMS}
    out |= {guard.stem(n) for n in p.names if guard.fold(n) not in _MARKER_TERMS}
    out |= p.bigrams
    return out - {p.kind or ""}


@dataclass(frozen=True)
class Change:
    """What a text says about change: the parts it says are replaced and replacing, or only
    that it is new."""

    replaced: tuple[str, ...]
    replacing: tuple[str, ...]
    weak: bool

    @property
    def any(self) -> bool:
        return bool(self.replaced or self.replacing or self.weak)


_FIX = re.compile(r"(?i)\b(?:fix|cause|solution|workaround)\s*:|(?:解决办法|解决|原因)\s*[:：]")
# a pitfall's fix said inline: "…; moving the import to a server component fixed it", "…，把 X 升级到 18 就好了"
_FIXED = re.compile(r"(?i)\b(?:fixed|fixes|solved|solves|resolved|resolves|cleared) (?:it|the (?:error|issue|problem))\b"
                    r"|就好了|就行了|就可以了|即可|就解决了")
# "Rule:", "规则：", and with whose word it is: "Decision (per Bob):", "决定（周一例会）："
_KIND_LABEL = re.compile(r"^\s*\S{1,12}?\s*(?:[(（][^()（）\n]{1,40}[)）]\s*)?[:：]\s*")


def _unlabelled(text: str) -> str:
    """The memory's words: without its keyword lines and its opening kind label."""
    return _KIND_LABEL.sub("", strip_keywords(text))


def _statement_and_fixes(text: str) -> tuple[str, list[str]]:
    """What a memory states, and its causes and fixes: the parts after "Cause:" / "Fix:" /
    "原因：" / "解决：", and in a pitfall the clauses that say they fixed it ("…就好了")."""
    statement, *fixes = _FIX.split(strip_keywords(text))
    if guard.profile(strip_keywords(text)).kind != "pitfall" or not _FIXED.search(statement):
        return statement, fixes
    parts = guard.clauses(statement)
    kept = [c for c in parts if not _FIXED.search(c)]
    return "；".join(kept), fixes + [c for c in parts if _FIXED.search(c)]


def read_change(text: str) -> Change:
    """Change is read in what the memory states. In a pitfall's cause and fix only a part
    that names what it no longer does counts ("Fix: instead of downgrading to JDK 11, upgrade
    the wrapper"; "解决：改用 setup_ci，不再去解锁 login.keychain"): that is a change of the
    stored fix when the stored row names it. A fix's own verbs of change ("Fix: switch to the
    multi-arch image", "解决：改成 utf8mb4") say what was done about the error, no change of
    a stored rule, and neither does "now" there."""
    statement, rest = _statement_and_fixes(text)
    replaced: list[str] = []
    replacing: list[str] = []
    for part, stated in [(statement, True)] + [(r, False) for r in rest]:
        body = _KIND_LABEL.sub("", part).replace("`", "")
        for pattern in (*_EN_SPANS, *_ZH_SPANS):
            for m in pattern.finditer(body):
                groups = m.groupdict()
                if not (stated or groups.get("old")):
                    continue
                if groups.get("old"):
                    replaced.append(groups["old"])
                if groups.get("new"):
                    replacing.append(groups["new"])
    weak = bool(_WEAK.search(_KIND_LABEL.sub("", statement)))
    return Change(tuple(replaced), tuple(replacing), weak)


# ---------------------------------------------------------------- the rule
def update_reason(new_text: str, old_text: str, cosine: float = 1.0, cross_floor: float = 0.0,
                  near: float = 1.0) -> str | None:
    """Why ``new_text`` supersedes ``old_text``, or None when it does not say so. The two must
    share their subject: ``SUBJECT_SHARE`` of their terms outside code spans (Chinese: of
    their characters), or across languages a cosine of ``cross_floor``, and be about the same
    environment and repo. With only "now" and a changed value, a cosine of ``near`` (the dedup
    floor) stands for a shared subject too: "move the vitamin D reminder to 21:00" shares few
    words with "remind me to take vitamin D at 8:00"."""
    change = read_change(new_text)
    if not change.any or _qualifiers_differ(new_text, old_text):
        return None
    ev = Evidence(new_text, old_text)
    if ev.a.kind and ev.b.kind and ev.a.kind != ev.b.kind and not {ev.a.kind, ev.b.kind} <= _CHOSEN:
        return None  # a rule set now does not make a pitfall seen before untrue (the guard: two memories)
    cross, zh = _scripts(new_text, old_text)
    share = _zh_share(new_text, old_text) if zh else max(
        _share(new_text, old_text), _share(_uncoded(new_text), _uncoded(old_text)))
    near = near if not read_change(old_text).any else 1.0  # two changes of their own: only their words compare
    if cross:
        if cosine < cross_floor:
            return None
    elif share < (SUBJECT_SHARE_ZH if zh else SUBJECT_SHARE) and (cosine < near or not share):
        return None  # e5 puts two short rules on unrelated things above the floor: one word at least
    old_terms = _terms(strip_keywords(old_text))
    replaced = set().union(*(_terms(s) for s in change.replaced)) if change.replaced else set()
    replacing = set().union(*(_terms(s) for s in change.replacing)) if change.replacing else set()
    named_old = replaced & old_terms
    said_before = _rejected(old_text) | set().union(set(), *(_terms(x) for x in read_change(old_text).replaced))
    if named_old & said_before:
        return None  # the stored row already rules out (or replaces) what this one replaces: a restatement
    if change.replaced and not named_old and not cross and replaced - _STOP:
        return None  # it names what it replaces, and this row holds none of it: another row's update
    if change.replaced:
        # what the new text puts in place of it: the part it names as the replacement, else all it adds
        fresh = (replacing if change.replacing else _terms(strip_keywords(new_text))) - old_terms - replaced
        if cross:  # across languages only what is written in Latin script compares
            fresh = {t for t in fresh if t.isascii()}
        fresh -= _STOP
        if named_old and fresh:
            return f"replaces {', '.join(sorted(named_old)[:3])} with {', '.join(sorted(fresh)[:3])}"
    if cross:  # "from now on" and a differing value: across scripts only a number or weekday compares
        # "调成 0.02" names the new value; "from now on" alone must replace one, not add it
        points = bool({t for t in replacing - old_terms if t.isascii()} & _values(new_text))
        moved = _cross_value_changed(ev, both_sides=not points) if points or change.weak else None
        return f"now: {moved}" if moved else None
    values = _value_conflicts(ev)
    if (change.weak or change.replacing) and values and (share >= UPDATE_SHARE or cosine >= near):
        return f"now: {values[0]}"
    return None


_NEWS = re.compile(r"(?i)\b(?:from now on|going forward|from here on|henceforth|as of now|no longer|any ?more"
                   r"|(?:switched|moved|migrated|changed)\s+(?:\w+\s+){0,3}?(?:from|off|to)\b"
                   r"|(?:switch|move|migrate|change)s?\s+(?:\w+\s+){0,3}?(?:from|off)\b)"
                   r"|\b(?:is|are|was|were|has been|have been|got)\s+(?:now\s+)?" + _GONE + r"|\bas of\b"
                   r"|\b(?:starting|effective)\s+(?:today|tomorrow|immediately|next|this|from|on|in)\b"
                   r"|\b(?:changed|changes|change) (?:my|his|her|their|our) minds?\b"
                   r"|不再|不要再|别再|从现在起|从现在开始|从[^,;。，；\s]{1,8}?起|以后|今后|改主意|改变主意|"
                   + _SWITCH_ZH + "|" + _GONE_ZH + "|" + _TO_ZH)


def says_change(text: str) -> bool:
    """Does the text say that something changed ("from now on", "no longer", "switched to",
    "不再", "以后")? A contrast alone ("uv, not pip", "而不是") states a rule, not a change,
    and a pitfall's fix ("解决：把 react-dom 升到 18") says what was done about the error."""
    return bool(_NEWS.search(_statement_and_fixes(text)[0]))


_STOP = frozenset("we our us i you they it its the a an this that there here now".split())
_REJECTING = [re.compile(p, re.I) for p in (
    rf"(?:\bnot\b|n't|\bnever\b|rather than|instead of|in place of)\s+(?P<old>{_B}+)",
    rf"\b(?:cho(?:se|ose|sen)|pick(?:ed)?|prefer\w*|favou?r\w*)\b{_B}*?\bover\s+(?P<old>{_B}+)",  # "chose X over Y"
    rf"(?:而不是|不是|不用|不要|别用|不再)(?P<old>{_B}+)",
    rf"(?:^|(?<=[,，;；]))\s*(?:不|没有)(?P<old>{_B}+)",  # "…自动生成，不手写 Markdown": a clause that denies
)]


def _rejected(text: str) -> set[str]:
    """What a text itself rules out ("uv, not pip"; "而不是 black")."""
    body = strip_keywords(text).replace("`", "")
    return set().union(set(), *(_terms(m.group("old")) for p in _REJECTING for m in p.finditer(body)))


def _values(text: str) -> set[str]:
    p = guard.profile(strip_keywords(text))
    return (p.entities | p.numbers | {guard.fold(n) for n in p.names}) - _MARKER_TERMS


def _share(a: str, b: str) -> float:
    ta, tb = _terms(strip_keywords(a)), _terms(strip_keywords(b))
    return len(ta & tb) / max(1, len(ta | tb))


_CHOSEN = frozenset({"rule", "preference", "decision"})  # kinds a person sets, and may set again


def slot_change(new_text: str, old_text: str) -> tuple[Relation, str] | None:
    """The same subject with another value in one slot, and no word of change in the new
    text: a rule, preference or decision a person restates with another value is their newer
    choice (supersedes: the old row stays in history, restorable); a pitfall or fact with
    another value, or any text that turns the other's polarity (always / never, do / don't),
    contradicts it (both kept: one of them is wrong, and a person decides). Texts of another
    environment or repo, or that differ in two places ("groceries 3000" / "dining out 1000"),
    are two memories."""
    ev = Evidence(new_text, old_text)
    cross, zh = _scripts(new_text, old_text)
    if _qualifiers_differ(new_text, old_text):
        return None
    if cross:
        moved = _cross_value_changed(ev, both_sides=True)
        if moved:
            chosen = ev.a.kind == ev.b.kind in _CHOSEN
            return ("supersedes", f"a newer {ev.a.kind} for the same slot: {moved}") if chosen else ("contradicts", moved)
        turned = _cross_polarity_turned(ev)
        return ("contradicts", turned) if turned else None
    values = _value_conflicts(ev)
    if not (ev.a.numbers | ev.a.spelled and ev.b.numbers | ev.b.spelled):
        # a number on one side only is a value left out, not one replaced: "sets
        # `timeout-minutes: 30`" / "sets `concurrency` …" set two things
        values = [c for c in values if not c.startswith("numbers")]
    own = value_difference(new_text, old_text)
    if own and own.startswith(("code", "numbers", "polarity", "order")):
        values.append(own)
    if not values or _other_settings(new_text, old_text):
        return None
    if own and own.startswith("order swapped"):
        return "contradicts", own  # the same two actions each side: one subject, however reworded
    share = _zh_share(new_text, old_text) if zh else _share(_uncoded(new_text), _uncoded(old_text))
    places = changed_places(new_text, old_text)
    one_word = len(places) == 1 and max(len(_TOKENS.findall(x)) for x in places[0][1:]) <= 3
    if share < (CONTRADICTION_SHARE_ZH if zh else CONTRADICTION_SHARE) and not one_word:
        return None  # a word or three changed and the rest word for word: the same subject, however short
    polar = [c for c in values if c.startswith(("negation", "polar"))]
    swapped = [c for c in values if c.startswith(("numbers swapped", "order swapped"))]
    if polar or swapped:
        return "contradicts", (polar or swapped)[0]
    if len(places) >= 2:
        return None  # two things differ, not one value of one thing
    if _said_of_another(places, new_text, old_text):
        return None
    kind = ev.a.kind if ev.a.kind == ev.b.kind else None
    if kind in _CHOSEN:
        return "supersedes", f"a newer {kind} for the same slot: {values[0]}"
    return "contradicts", values[0]


_SETTING = re.compile(r"^\s*([\w.-]+)\s*[:=]\s*\S")


def _other_settings(new_text: str, old_text: str) -> bool:
    """Each text sets a key its code spans name (`timeout-minutes: 30` / `concurrency`,
    `cancel-in-progress: true`), one at least as ``key: value``, and they set no key in
    common: two settings, not another value of one."""
    def keys(text: str) -> tuple[set[str], bool]:
        spans = [(x, _SETTING.match(x)) for x in (y.casefold() for y in _CODE.findall(strip_keywords(text)))]
        return {m.group(1) if m else x.strip() for x, m in spans}, any(m for _, m in spans)
    (ka, sa), (kb, sb) = keys(new_text), keys(old_text)
    return bool(ka and kb and (sa or sb) and not ka & kb)


def _cross_value_changed(ev: Evidence, *, both_sides: bool) -> str | None:
    """English vs Chinese naming the same things (``_named_alike``) with another number or
    weekday ("规则：Node 版本固定为 18，`.nvmrc` 里写 18" / "Rule: pin Node to 20; `.nvmrc`
    contains 20"). ``both_sides``: each side has a number or weekday the other lacks (a value
    replaced, not one added: without a word of change that is all there is)."""
    if not _named_alike(ev):
        return None
    moved = [c for c in ev.conflicts if c.startswith(("numbers", "weekdays"))]
    names = _names_differ(ev)
    if not moved and names:
        moved = [names]
    if not moved or (both_sides and len(ev.conflicts) > len(moved)):
        return None
    if both_sides and not (_lacks(ev.a, ev.b) and _lacks(ev.b, ev.a)):
        return None
    return moved[0]


def _written_names(p: "guard.Profile") -> set[str]:
    """The languages and weekdays a text names, in English ("Chinese", "Friday") or in Chinese
    (中文, 英语, 周五): a translation writes them in its own language, and a mixed text
    ("commit message 用中文写") in either, so they compare through the dictionary. (Months
    are numbers: "3 August" / "8 月 3 日", which the guard compares.)"""
    zh = {g for w in glossary.words(p.cjk_runs) if _NAMED_ZH.fullmatch(w) for g in glossary.proper_names(w)}
    return (p.names | zh) & _LANGUAGES_AND_DAYS


# a Chinese word for a language or weekday (中文, 英语, 周五, 星期五), not one whose gloss merely
# holds such a name (春节 "Chinese New Year")
_NAMED_ZH = re.compile(r"\S+[文语]|(?:周|星期|礼拜)\S")
_LANGUAGES_AND_DAYS = frozenset(
    "english chinese japanese korean german french spanish russian "
    "monday tuesday wednesday thursday friday saturday sunday".split())


def _names_differ(ev: Evidence) -> str | None:
    """Another language, weekday or month, whichever language each text names it in."""
    new, old = _written_names(ev.a), _written_names(ev.b)
    return f"names {', '.join(sorted(old)) or '-'} → {', '.join(sorted(new)) or '-'}" if new != old else None


def _value_conflicts(ev: Evidence) -> list[str]:
    """What two texts state differently (the guard's conflicts in what is stated, not in how
    it is said), a language, weekday or month written in another language too."""
    values = [c for c in ev.conflicts if _is_value_conflict(c)]
    names = _names_differ(ev)
    return values + [names] if names and not any(c.startswith("names") for c in values) else values


def _named_alike(ev: Evidence) -> bool:
    """English vs Chinese, both naming the same things: every Latin word of the Chinese side
    (numbers aside) is in the English one, every name of the English side is in the Chinese
    one or written there in Chinese (安卓 *Android*; a weekday or language name), and they
    share one at least. What a translation writes the same is all that compares across
    scripts."""
    zh, en = (ev.a, ev.b) if ev.a.cjk_dominant else (ev.b, ev.a)
    latin_zh = {w for w in zh.words if not w[0].isdigit()}  # "3.11", "4gb": numbers compare apart
    names_en = {n for n in en.names | en.entities if n not in guard.TRANSLATED_NAMES} - zh.words
    return bool(latin_zh) and latin_zh <= en.words and not names_en - guard.translated_names(ev.a, ev.b)


def _cross_polarity_turned(ev: Evidence) -> str | None:
    """English vs Chinese naming the same things, and all that differs is that one side
    negates or turns a polar word ("Decision: we will ship dark mode in the Android app" /
    "决定：安卓 app 不做深色模式"): one says what the other denies. Not with a number: a
    negated bound is the other's limit ("never more than 3 times" / "最多重试 3 次")."""
    if not ev.conflicts or not all(c.startswith(("negation", "polar")) for c in ev.conflicts):
        return None
    if ev.a.numbers or ev.b.numbers or ev.a.spelled or ev.b.spelled:
        return None
    return f"across languages: {ev.conflicts[0]}" if _named_alike(ev) else None


def _lacks(a: "guard.Profile", b: "guard.Profile") -> bool:
    """``a`` states a number, weekday, month or language that ``b`` does not, in any writing."""
    return bool(a.numbers - b.numbers - b.spelled) or bool(_written_names(a) - _written_names(b)) or bool(
        guard.weekdays(a) - guard.weekdays(b))


def _named_values(text: str) -> set[str]:
    """What a text names that can be a slot's value: numbers, code and other entities, proper
    names, and Chinese words the dictionary glosses as one (中文 *Chinese*, 周五 *Friday*)."""
    p = guard.profile(strip_keywords(text))
    out = p.numbers | p.entities | {guard.fold(n) for n in p.names}
    return out | {w for w in glossary.words(p.cjk_runs) if glossary.proper_names(w)}


def _said_of_another(places: list[tuple[str, str, str]], new_text: str, old_text: str) -> bool:
    """The one place two texts differ holds no value (no number, name, code or entity) while
    a value they both name stays outside it: the same value said of another thing ("3
    [projects] per workspace" / "3 [members] per workspace"; "[commit messages] written in
    English" / "[code review comments] …"; "用户希望[回答]用中文" / "[提交信息]用中文"), which
    is another memory, not a newer value of this one. A supersede there would retire a row
    that still holds."""
    new, old = _named_values(new_text), _named_values(old_text)
    inside = " ".join(part for _, was, now in places for part in (was, now))
    subjects = _subject_spans(new_text) | _subject_spans(old_text)
    inside = _CODE.sub(lambda m: " " if m.group(1).casefold() in subjects else m.group(0), inside)
    words = {w.rstrip(".,:;") for w in inside.replace("`", " ").split()}
    if "`" in inside or any(v in words if v.isascii() else v in inside.replace(" ", "") for v in new | old):
        return False  # the place holds a value: a newer value of this subject
    return bool(new & old)


# a code span that names what the memory is about, not what it sets: "the `analytics` service",
# "the `api` role", "`payments` 服务"
_SUBJECT_SPAN = re.compile(
    r"`([^`\n]+)`\s*(?:(?:service|role|key|setting|option|flag|file|table|column|field|job|queue|topic|bucket|repo"
    r"|repository|branch|module|package|endpoint|variable|cluster|project|namespace|database|index|app|worker"
    r"|library|command|script|directory|folder|team|user|account)s?\b|服务|角色|字段|表|文件|配置项|参数|仓库|项目|集群"
    r"|分支|接口|队列|任务|目录|模块|变量|账号)", re.I)


def _subject_spans(text: str) -> set[str]:
    """The code spans a text names as its subject (followed by what kind of thing they are),
    folded: another one there is another thing, not another value of this one."""
    return {m.group(1).casefold() for m in _SUBJECT_SPAN.finditer(strip_keywords(text))}


def denial_reason(new_text: str, old_text: str) -> str | None:
    """The new text denies what the stored one asserts, and says nothing of a change: one
    clause of it negates something only the stored text names ("… fails because the worker
    runs out of memory; S3 region is not the issue" against "… fails because the S3 bucket is
    in another region"). Both are kept, as a contradiction."""
    ev = Evidence(new_text, old_text)
    if ev.cross or says_change(new_text) or read_change(new_text).any:
        return None
    old_terms = _terms(strip_keywords(old_text))
    old_denied = set().union(set(), *(_terms(c) for c in guard.clauses(strip_keywords(old_text)) if _negations(c)))
    clauses = [c for c in guard.clauses(strip_keywords(new_text)) if c.strip()]
    for i, clause in enumerate(clauses):
        if not _negations(clause):
            continue
        rest = set().union(set(), *(_terms(c) for j, c in enumerate(clauses) if j != i))
        denied = (_terms(clause) & old_terms) - rest - old_denied - _STOP
        if denied and rest & old_terms:
            return f"denies {', '.join(sorted(denied)[:3])}"
    return None


_CODE = re.compile(r"`([^`\n]+)`")
_NUM = re.compile(r"(?<![\w.])\d+(?:[.:]\d+)?(?![\w.]*[A-Za-z])")
_QUALIFIER = re.compile(
    r"(?i)\b(staging|production|prod|preprod|pre-prod|qa|uat|sandbox|dev|development|ci|local)\b"
    r"|(生产|线上|预发|测试环境|开发环境|本地)"
    r"|\b([A-Za-z0-9][A-Za-z0-9_.-]*)\s+(?:repo|repository|service|cluster|project)\b"
    r"|([A-Za-z0-9][A-Za-z0-9_.-]*)\s*(?:仓库|项目|服务|集群)")
_NOT_QUALIFIER = frozenset("whole entire all every each this that our my your their same any new main one other".split())
_QUALIFIER_SAME = {"prod": "production", "生产": "production", "线上": "production", "preprod": "staging",
                   "pre-prod": "staging", "预发": "staging", "development": "dev", "开发环境": "dev", "本地": "local"}


def _qualifiers(text: str) -> set[str]:
    """The environments and repos a text is about: another one is another subject."""
    out = set()
    for m in _QUALIFIER.finditer(_uncoded(text)):
        word = next(g for g in m.groups() if g).casefold()
        if word not in _STOP and word not in _FUNCTION_WORDS and word not in _NOT_QUALIFIER:
            out.add(_QUALIFIER_SAME.get(word, word))
    return out


def _qualifiers_differ(a: str, b: str) -> bool:
    qa, qb = _qualifiers(a), _qualifiers(b)
    return bool(qa and qb and qa != qb)


def _scripts(new_text: str, old_text: str) -> tuple[bool, bool]:
    """(one English and one Chinese, both Chinese). Two texts are in one language when they
    are with their code spans or without them: a Chinese rule about
    `autovacuum_vacuum_scale_factor` is Chinese, however long the name, and "Rule: 部署 staging
    用 `kubectl apply …`" has too few words around its span to be read as either, so it goes
    by its whole text, as dedup reads it."""
    whole = guard.profile(strip_keywords(new_text)), guard.profile(strip_keywords(old_text))
    bare = guard.profile(_uncoded(new_text)), guard.profile(_uncoded(old_text))
    cross = all(a.cjk_dominant != b.cjk_dominant for a, b in (whole, bare))
    return cross, not cross and any(a.cjk_dominant and b.cjk_dominant for a, b in (whole, bare))


def _uncoded(text: str) -> str:
    return _CODE.sub(" ", strip_keywords(text))


def _flat(text: str) -> str:
    return " ".join(strip_keywords(text).replace("`", " ").casefold().split())


def _negations(text: str) -> int:
    return guard.negations(strip_keywords(text))


def _signs(text: str) -> dict[str, set[int]]:
    """Each term of a text with the polarity of the clauses that state it (code spans and
    quoted messages aside: "no matches for kind" negates nothing the memory says)."""
    out: dict[str, set[int]] = {}
    for clause, sign in guard.polar_clauses(_QUOTED.sub(" ", _KIND_LABEL.sub("", _uncoded(text)))):
        for t in _terms(clause) - _STOP:
            out.setdefault(t, set()).add(sign)
    return out


def _opposed(a: dict[str, set[int]], b: dict[str, set[int]]) -> tuple[list[str], set[str]]:
    """The terms each side signs one way only, the two sides oppositely (sorted), and every
    term both sides sign: what polarity and action comparisons read."""
    both = a.keys() & b.keys()
    return sorted(t for t in both if len(a[t]) == len(b[t]) == 1 and a[t] != b[t]), both


_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」")


def polarity_turned(new_text: str, old_text: str) -> str | None:
    """What one text asserts and the other denies, clause by clause: terms stated only in
    affirming clauses on one side and only in negating ones on the other, while the two
    negate nothing in common ("必须走网关，不允许直连" / "直接调用，不需要经过网关"; when both
    negate one term, "never commit directly to main" / "no direct commits", the negations
    are one). Within one script, code spans aside; across scripts the clauses do not line
    up. (One word turned into its opposite, "default to off" / "on", is the guard's polar
    words, which dedup already reads.)"""
    if guard.profile(_uncoded(new_text)).cjk_dominant != guard.profile(_uncoded(old_text)).cjk_dominant:
        return None
    a, b = _signs(new_text), _signs(old_text)
    turned, both = _opposed(a, b)
    if turned and not any(a[t] == b[t] == {-1} for t in both):
        return f"polarity turned: {', '.join(turned[:3])}"
    return None


# acting on a thing and undoing it: what a fix or a rule does to its object
_ACTION = re.compile(
    r"(?i)\b(?:(?P<on>add|adds|added|adding|enable|enables|enabled|enabling|turn on|turns on|turned on|switch on)"
    r"|(?P<off>remove|removes|removed|removing|delete|deletes|deleted|deleting|disable|disables|disabled|disabling"
    r"|turn off|turns off|turned off|switch off))\b"
    r"|(?P<on_zh>加上|加进|加入|添加|启用|开启|打开)|(?P<off_zh>去掉|去除|删掉|删除|移除|拿掉|禁用|关闭|关掉|停用)")


def _acted_on(text: str) -> dict[str, set[int]]:
    """Each term (code spans too) of a clause that adds or enables something (+1) or removes
    or disables it (-1), with that sign; a clause that does both says neither."""
    out: dict[str, set[int]] = {}
    for clause in guard.clauses(_unlabelled(text).replace("`", "")):
        signs = {1 if m.group("on") or m.group("on_zh") else -1 for m in _ACTION.finditer(clause)}
        if len(signs) != 1:
            continue
        for t in _terms(_ACTION.sub(" ", clause)) - _STOP:
            out.setdefault(t, set()).update(signs)
    return out


def opposite_actions(new_text: str, old_text: str) -> str | None:
    """One text adds or enables what the other removes or disables ("Fix: remove
    `--runInBand` from the CI script" / "Fix: add `--runInBand` to the CI script"; 启用 / 禁用,
    加上 / 去掉), and the two do nothing the same way to a thing they both name."""
    a, b = _acted_on(new_text), _acted_on(old_text)
    turned, both = _opposed(a, b)
    if turned and not any(a[t] == b[t] for t in both):
        return f"polarity: opposite actions on {', '.join(turned[:3])}"
    return None


# two actions in an order: 先 A 再 B, A 之后 B, first A then B, A before B, B after A
_SEQUENCE = [re.compile(p, re.I) for p in (
    r"先(?P<a>[^，,。；;！？]+?)[，,]?\s*(?:再|然后|之后再|后再)(?P<b>[^，,。；;！？]+)",
    r"(?P<a>[^，,。；;！？]+?)(?:之后|以后)(?:再|才)?(?P<b>[^，,。；;！？]+)",
    r"(?P<b>[^，,。；;！？]+?)之前(?:先|要)?(?P<a>[^，,。；;！？]+)",
    rf"\bfirst\s+(?P<a>{_B}+?),?\s+(?:and\s+)?then\s+(?P<b>{_B}+)",
    rf"(?P<a>{_B}+?),?\s+(?:and\s+)?then\s+(?P<b>{_B}+)",
    rf"(?P<a>{_B}+?)\s+(?:only\s+)?before\s+(?P<b>{_B}+)",
    rf"(?P<b>{_B}+?)\s+(?:only\s+)?after\s+(?P<a>{_B}+)",
)]


def _sequences(text: str) -> list[tuple[set[str], set[str]]]:
    """The (first, second) actions a text puts in an order, each as its terms, code spans too."""
    body = _unlabelled(text).replace("`", "")
    out = []
    for pattern in _SEQUENCE:
        for m in pattern.finditer(body):
            first, second = _terms(m.group("a")) - _STOP, _terms(m.group("b")) - _STOP
            if first and second:
                out.append((first, second))
    return out


def order_swapped(new_text: str, old_text: str) -> str | None:
    """The same two actions in the other order ("先停掉 worker，再重启 API" / "先重启 API，再停掉
    worker"; "run seed only after migrate" / "run migrate only after seed"): the first of one
    is the second of the other, and each meets its counterpart less than its swap."""
    for a1, a2 in _sequences(new_text):
        for b1, b2 in _sequences(old_text):
            cross, straight = len(a1 & b2) + len(a2 & b1), len(a1 & b1) + len(a2 & b2)
            if a1 & b2 and a2 & b1 and cross > straight:
                return f"order swapped: {', '.join(sorted(b1)[:2])} / {', '.join(sorted(b2)[:2])}"
    return None


_COUNT_WORDS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split()) if n >= 2}  # "one" is "a"
_COUNT_WORDS |= {"twice": "2", "thrice": "3"}  # "opened twice" / "两次打开"
_COUNT = re.compile(r"(?i)\b(?:" + "|".join(_COUNT_WORDS) + r")\b")


def _counts(text: str, p: "guard.Profile") -> set[str]:
    """The numbers a text spells out, as digits: English two to twelve; in a Chinese text its
    numerals (两, 三, …), as the guard reads them."""
    if p.cjk_dominant:
        return {x for x in p.spelled if x.isdigit() and f"{x}:00" not in p.numbers}
    return {_COUNT_WORDS[m.casefold()] for m in _COUNT.findall(_uncoded(text))}


def value_difference(new_text: str, old_text: str) -> str | None:
    """Why two texts dedup reads as one memory still state different values, or None when
    every value-bearing token agrees: each code span is in the other text too, numbers come
    in the same order, they are about the same environments and repos, and two texts of one
    template do not fill two of its slots differently. A merge loses a memory; a missed one
    costs a row the converge pass or a person can merge, so "same" asks all of it."""
    flat_new, flat_old = _flat(new_text), _flat(old_text)
    for span, other in [(x, flat_old) for x in _CODE.findall(new_text)] + [(x, flat_new) for x in _CODE.findall(old_text)]:
        if " ".join(span.casefold().split()) not in other:
            return f"code `{span}` on one side only"
    ev = Evidence(new_text, old_text)
    if not ev.cross and not read_change(new_text).any and not read_change(old_text).any:
        na, nb = _NUM.findall(_uncoded(new_text)), _NUM.findall(_uncoded(old_text))
        if len(set(na)) >= 2 and set(na) == set(nb) and list(dict.fromkeys(na)) != list(dict.fromkeys(nb)):
            return f"numbers swapped: {', '.join(dict.fromkeys(nb))} / {', '.join(dict.fromkeys(na))}"
    if not ev.cross and _negations(new_text) != _negations(old_text):
        return "negated a different number of times"
    names = _names_differ(ev)
    if names:
        return names
    turned = polarity_turned(new_text, old_text) or opposite_actions(new_text, old_text)
    if turned:
        return turned
    order = order_swapped(new_text, old_text)
    if order:
        return order
    moved = _moved_words(new_text, old_text)
    if moved:
        return f"the same words in other places: {moved}"
    qa, qb = _qualifiers(new_text), _qualifiers(old_text)
    if qa and qb and qa != qb:
        return f"about {', '.join(sorted(qb)) or '-'} / {', '.join(sorted(qa)) or '-'}"
    if not ev.zh:
        wa, wb = _counts(new_text, ev.a), _counts(old_text, ev.b)
        if wa - wb - ev.b.numbers - ev.b.spelled or wb - wa - ev.a.numbers - ev.a.spelled:
            return "numbers spelled out differ"  # "one approval" / "two approvals" / "两个人批准"
    slots = _zh_words_swapped(new_text, old_text) if ev.zh else swapped_slots(new_text, old_text)
    if len(slots) >= 2:
        return "one template, " + ", ".join(f"{x} / {y}" for x, y in slots[:3])
    subject = _zh_other_subject(new_text, old_text) if ev.zh else None
    if subject:
        return f"one template, another subject: {subject[0]} / {subject[1]}"
    places = [] if ev.cross else template_places(new_text, old_text)
    # only a place that holds a value by how it is written: two or more unvalued places were
    # paraphrases the dictionary does not pair (big / large, talks / reaches) on 7 held-out duplicates
    if any(_valued(x) and _valued(y) for x, y in places):
        return "one template, other words in its places: " + ", ".join(
            f"{' '.join(x)} / {' '.join(y)}" for x, y in places[:3])
    return None


TEMPLATE_SHARE = 0.6  # share of the shorter text's words two texts of one template keep, in order
_QUOTE = frozenset("“”\"「」")
_PLACE_TOKEN = re.compile(r"`[^`\n]+`|[“”\"「」]|[A-Za-z0-9][A-Za-z0-9_.+#/\-']*|[\u3400-\u4dbf\u4e00-\u9fff]+")
# how a memory is said, not what it says: who wants it, how strongly, why, and when
_HOW = frozenset("want wants wanted need needs like likes prefer prefers must should shall have has always please "
                 "ask asks wish because since so as via per due while when then also just only "
                 "希望 喜欢 需要 应该 必须 要 想 想要 要求 请 务必 一定 总是 统一 都 每次 所有 任何 因为 所以 由于 已经 "
                 "可以 能 会".split())
# what a value is counted in: a unit or a currency said in one place is a value ("以“分”为单位" / "以“元”…")
_UNIT_WORDS = guard.UNIT_WORDS | frozenset(
    "cent cents dollar dollars euro euros yuan usd eur cny rmb 元 分 角 美元 欧元 人民币 毫秒 秒 字节".split())


@dataclass(frozen=True)
class _Word:
    key: str  # what it is compared by: stem, code span without its backticks, a Chinese dictionary word
    text: str  # as written, folded
    quoted: bool = False


def _han(word: str) -> bool:
    """A Chinese word: it starts with a Han character."""
    return "\u3400" <= word[0] <= "\u9fff"


def _place_words(text: str) -> list[_Word]:
    """A memory's words in order: English words stemmed, code spans whole (without their
    backticks: `trivy` is trivy), Chinese runs cut into dictionary words, a quoted word marked."""
    out: list[_Word] = []
    quoted = False
    for t in _PLACE_TOKEN.findall(_unlabelled(text)):
        if t in _QUOTE:
            quoted = not quoted
        elif t.startswith("`"):
            out.append(_Word(t.strip("`").casefold(), t.strip("`").casefold(), quoted))
        elif _han(t):
            out.extend(_Word(w, w, quoted) for w in glossary.segment(t))
        else:
            w = t.rstrip(".'").casefold()
            out.append(_Word(guard.stem(w), w, quoted))
    return out


def _says_something(w: _Word) -> bool:
    """A word that could name a subject or a value: not a function word, a word of how it
    is said or of change, a negation or a number (the guard compares those); a Chinese word
    of two characters or more, or one quoted ("以“分”为单位")."""
    if _han(w.key):
        if w.key in _HOW or guard.says_nothing(w.key) or _MARKER_ZH.fullmatch(w.key) or guard.negations(w.key):
            return False
        return len(w.key) >= 2 or w.quoted or w.key in _UNIT_WORDS
    if w.text in _HOW or guard.says_nothing(w.text) or w.text in _STOP or w.text in _FUNCTION_WORDS or w.text in _MARKER_TERMS:
        return False
    return len(w.text) > 1 and not re.fullmatch(r"[\d.:,]+", w.text)


def _alike(x: _Word, y: _Word) -> bool:
    """One meaning: a word in two scripts (a translation), one English word in two forms or
    two the dictionary lists as one sense, two Chinese words with a gloss in common (proper
    names and single characters aside: 北京 / 上海 are both "China", 分 and 元 both a unit)."""
    zx, zy = _han(x.key), _han(y.key)
    if zx != zy:
        return True
    if zx:
        return bool(_glosses(x.key) & _glosses(y.key))
    if len(commonprefix([x.text, y.text])) >= 4 or x.text in y.text or y.text in x.text:
        return True
    return glossary.same_sense(guard.lemma(x.text), guard.lemma(y.text))


def _glosses(word: str) -> frozenset[str]:
    if len(word) < 2 or glossary.proper_names(word):
        return frozenset()
    return guard.profile(word).meant


def _valued(words: tuple[str, ...]) -> bool:
    """A place that holds a value by how it is written: quoted, or a unit or currency."""
    return any(w.startswith("\u201c") or w.casefold() in _UNIT_WORDS for w in words)


def template_places(new_text: str, old_text: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Two texts of one template (the shorter keeps ``TEMPLATE_SHARE`` of its words in the
    other, in order) and the places where each puts words of another meaning: "以“[分]”为单位的
    [整数]" / "以“[元]”为单位、保留两位小数的[字符串]"; "the migration [fails] on large tables. Fix:
    run it in [batches]" / "… [locks] the table … at [night]". A word the other text says
    anywhere is moved, not replaced; words the dictionary gives one meaning are a paraphrase.
    Quoted words come back with their opening quote (what ``_valued`` reads)."""
    a, b = _place_words(old_text), _place_words(new_text)
    ca, cb = [w.key for w in a if _says_something(w)], [w.key for w in b if _says_something(w)]
    if not ca or not cb:
        return []
    kept = sum(m.size for m in SequenceMatcher(None, ca, cb, autojunk=False).get_matching_blocks())
    if kept < TEMPLATE_SHARE * min(len(ca), len(cb)):
        return []
    keys_a, keys_b = {w.key for w in a}, {w.key for w in b}
    run_a, run_b = "".join(w.key for w in a), "".join(w.key for w in b)

    def replaced(words: list[_Word], other: set[str], run: str) -> list[_Word]:
        return [w for w in words if _says_something(w) and w.key not in other
                and not (_han(w.key) and len(w.key) > 1 and w.key in run)]

    out = []
    ops = SequenceMatcher(None, [w.key for w in a], [w.key for w in b], autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in ops:
        if op != "replace":
            continue
        x, y = replaced(a[i1:i2], keys_b, run_b), replaced(b[j1:j2], keys_a, run_a)
        if x and y and not any(_alike(p, q) for p in x for q in y):
            out.append((tuple(("\u201c" if w.quoted else "") + w.text for w in x),
                        tuple(("\u201c" if w.quoted else "") + w.text for w in y)))
    return out


_CJK_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")


def _zh_other_subject(new_text: str, old_text: str) -> tuple[str, str] | None:
    """Two Chinese texts of one template that fill one place with other words and change
    little else ("用户希望[回答]用中文" / "用户希望[代码注释]用中文写"): the same value said of
    another subject, another memory. The place holds two or more characters each side, none in
    common, no word of change or negation, and words the dictionary gives no meaning in common
    (运行 / 执行 both *run*: a paraphrase); besides it, two characters at most are added or
    left out, and four or more stay the same. (Two places filled otherwise is
    ``_zh_words_swapped``; in English one place is the guard's slot swap.)"""
    a, b = _unlabelled(old_text), _unlabelled(new_text)
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    replaced = [(a[i1:i2].strip(), b[j1:j2].strip()) for op, i1, i2, j1, j2 in ops if op == "replace"]
    added = sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in ops if op in ("insert", "delete"))
    kept = sum(len(run) for op, i1, i2, _, _ in ops if op == "equal" for run in _CJK_WORD.findall(a[i1:i2]))
    if len(replaced) != 1 or added > 2 or kept < 4:
        return None
    x, y = replaced[0]
    if not (_CJK_WORD.fullmatch(x) and _CJK_WORD.fullmatch(y)) or set(x) & set(y):
        return None
    if any(_MARKER_ZH.search(w) or guard.negations(w) for w in (x, y)):
        return None
    if guard.profile(x).meant & guard.profile(y).meant:
        return None
    return x, y


def _zh_words_swapped(new_text: str, old_text: str) -> list[tuple[str, str]]:
    """Two Chinese texts of one template that put other words in two or more of its places,
    nothing inserted or left out ("早餐…咖啡" / "晚餐…茶"): another memory. A paraphrase mostly
    rewords with inserts too; one of one template ("每个 API 都要有" / "所有 API 都要写") is the
    price: it is kept as a near-duplicate the converge pass or a person can merge."""
    a, b = _unlabelled(old_text), _unlabelled(new_text)
    ops = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    pairs = [(a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in ops if op == "replace"]
    if len(pairs) != len(ops) or any(set(x) & set(y) for x, y in pairs):
        return []
    return pairs


def _moved_words(new_text: str, old_text: str) -> str | None:
    """Words that trade places and nothing else ("from [home] on Mondays and from [the office]
    on Fridays" / the reverse): the same words saying the opposite."""
    ta, tb = _words(old_text), _words(new_text)
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) < 2 or any(op[0] != "replace" for op in ops):
        return None
    old = Counter(w for op in ops for w in ta[op[1]:op[2]])
    new = Counter(w for op in ops for w in tb[op[3]:op[4]])
    return " / ".join(" ".join(ta[op[1]:op[2]]) for op in ops) if old == new else None


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#/\-]*|[\u3400-\u4dbf\u4e00-\u9fff]")  # a word; a Chinese character
_TOKENS = re.compile(r"`[^`\n]+`|" + _TOKEN.pattern)  # the same, a code span counted as one word


def _words(text: str) -> list[str]:
    """A text's words in order, folded, a sentence's full stop not part of its last word."""
    return [t.casefold().rstrip(".") or t for t in _TOKEN.findall(strip_keywords(text))]


def changed_places(a: str, b: str) -> list[tuple[str, str, str]]:
    """Where two texts differ, word by word (Chinese: character by character), code spans
    each counted as one word and places one word apart counted as one: (op, old part, new part)."""
    def tokens(t: str) -> list[str]:
        return [w.casefold() for w in _TOKENS.findall(_unlabelled(t))]

    ta, tb = tokens(b), tokens(a)
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    merged: list[list] = []
    for op in ops:
        if merged and op[1] - merged[-1][2] <= 1 and op[3] - merged[-1][4] <= 1:
            last = merged[-1]
            merged[-1] = ["replace", last[1], op[2], last[3], op[4]]
        else:
            merged.append(list(op))
    out = []
    for op, i1, i2, j1, j2 in merged:
        old, new = " ".join(ta[i1:i2]), " ".join(tb[j1:j2])
        if {w for w in ta[i1:i2] + tb[j1:j2]} <= _FUNCTION_WORDS | set(_STOP):
            continue
        out.append((op, old, new))
    return out


def _is_value_conflict(reason: str) -> bool:
    """A conflict in what is stated, not in how: a different contrast structure ("rejects"),
    opening label ("kinds") or word of change ("换成" / "改成") is not a contradiction."""
    if reason.startswith(("rejects", "kinds")):
        return False
    if reason.startswith("swapped "):
        sides = reason[len("swapped "):].split(" → ")
        return not all(set(side.replace(" ", "")) <= _CHANGE_CHARS or side in _MARKER_TERMS for side in sides)
    return True


def _zh_share(a: str, b: str) -> float:
    """Chinese: the share of characters in common, in order (a changed word changes few)."""
    return SequenceMatcher(None, _unlabelled(a), _unlabelled(b), autojunk=False).ratio()


def swapped_slots(a: str, b: str) -> list[tuple[str, str]]:
    """The words two texts of one template fill differently, when that is all that differs
    (every difference one word for one word): "run the [frontend] tests with [vitest]" /
    "run the [backend] tests with [pytest]". Empty when they differ in any other way."""
    ta, tb = _words(a), _words(b)
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops or any(op[0] != "replace" or op[2] - op[1] != 1 or op[4] - op[3] != 1 for op in ops):
        return []
    return [(ta[op[1]], tb[op[3]]) for op in ops if not {ta[op[1]], tb[op[3]]} <= _FUNCTION_WORDS]


_FUNCTION_WORDS = frozenset("is was are were be been has have had with using use uses used by for of in on at to "
                            "from the a an and or this that these those it its".split())


def band_floor(thresholds: "DedupThresholds") -> float:
    return thresholds.cosine - BAND_BELOW


def relate(text: str, neighbours: Sequence[Neighbour], thresholds: "DedupThresholds", *,
           exact_id: str | None = None, current: Callable[[str], bool] = lambda _id: True,
           judged: dict[str, tuple[Relation, str]] | None = None) -> Decision:
    """The decision for ``text`` against the scope's nearest rows. Only current rows are
    superseded or contradicted; any row (history too) can be the one it duplicates, so a
    replayed transcript never adds a second copy. ``judged``: the model's answers, by row id."""
    verdict = decide(text, neighbours, thresholds, exact_id=exact_id)
    if verdict.reason == "exact":
        return Decision("same", verdict.id, "exact", 1.0)
    floor = band_floor(thresholds)
    band = [n for n in sorted(neighbours, key=lambda n: -n.cosine)[:NEAREST] if n.cosine >= floor]
    for n in band:
        answer = (judged or {}).get(n.id)
        if answer and (answer[0] in ("same", "distinct") or current(n.id)):
            return Decision(answer[0], n.id, answer[1], n.cosine, by="llm")
    cross_floor = thresholds.cosine_cross if thresholds.cosine_cross is not None else thresholds.cosine
    for n in band:
        updates = update_reason(text, n.text, n.cosine, cross_floor, thresholds.cosine) if current(n.id) else None
        if updates:
            return Decision("supersedes", n.id, updates, n.cosine)
    if verdict.duplicate:
        if verdict.id and current(verdict.id) and says_change(text) and not says_change(
                next(n.text for n in neighbours if n.id == verdict.id)):
            # it reads as the same fact but says it is new: keeping it as the current version
            # loses nothing, dropping it could lose an update the rule could not read
            return Decision("supersedes", verdict.id, f"restates it as a change ({verdict.reason})", verdict.cosine)
        differs = value_difference(text, next(n.text for n in neighbours if n.id == verdict.id))
        if differs is None:
            return Decision("same", verdict.id, verdict.reason, verdict.cosine)
        verdict = Verdict("distinct", verdict.id, differs, verdict.cosine)
    for n in band:
        found = slot_change(text, n.text) if current(n.id) else None
        if found:
            return Decision(found[0], n.id, found[1], n.cosine)
    for n in band:
        denies = denial_reason(text, n.text) if current(n.id) and n.cosine >= thresholds.cosine else None
        if denies:
            return Decision("contradicts", n.id, denies, n.cosine)
    return _distinct(verdict)


def _distinct(verdict: Verdict) -> Decision:
    return Decision("distinct", verdict.id, verdict.reason, verdict.cosine)


# ---------------------------------------------------------------- the model, for the uncertain band
class Judgement(BaseModel):
    relation: Relation
    reason: str = Field(default="", max_length=300)


SYSTEM = (
    "You compare two short memories an AI coding agent keeps about one user's work. OLD was stored "
    "first; NEW was stated later. Answer with one relation:\n"
    "- same: NEW says what OLD says (a paraphrase or translation); nothing would be lost keeping one.\n"
    "- supersedes: NEW replaces OLD: the same rule, preference, decision or fact, with another value, "
    "and NEW is the one that holds now.\n"
    "- contradicts: same subject, incompatible values, and nothing says NEW replaces OLD.\n"
    "- distinct: different subjects, or both can hold at once.\n"
    "Answer JSON: {\"relation\": ..., \"reason\": a few words}."
)


def _when(ms: int | None) -> str:
    if not ms:
        return "unknown"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def pair_prompt(new_text: str, old_text: str, *, old_ms: int | None = None, new_ms: int | None = None) -> str:
    """The two texts as stored, without their search keywords lines."""
    old, new = without_keywords(old_text.strip()), without_keywords(new_text.strip())
    return f"OLD (stored {_when(old_ms)}):\n{old}\n\nNEW (stated {_when(new_ms)}):\n{new}"


class ModelJudge:
    """One bounded structured call per pair through the configured chat provider."""

    def __init__(self, settings: "Settings"):
        from ..providers.base import get_provider

        self.provider = get_provider(settings)
        self.calls = 0
        self.failed = 0

    def __call__(self, new_text: str, old_text: str, *, old_ms: int | None = None,
                 new_ms: int | None = None) -> tuple[Relation, str] | None:
        from ..errors import DistillError
        from ..providers.base import LLMRequest

        req = LLMRequest(system=SYSTEM, user=pair_prompt(new_text, old_text, old_ms=old_ms, new_ms=new_ms),
                         response_model=Judgement, temperature=0.0, max_output_tokens=160)
        self.calls += 1
        try:
            answer = self.provider.complete(req)
            judgement = Judgement.model_validate_json(answer.text) if answer.finish == "stop" else None
        except (DistillError, ValidationError, ValueError):
            judgement = None
        if judgement is None:
            self.failed += 1
            return None
        return judgement.relation, f"model: {judgement.reason}".strip()[:200]


def make_judge(settings: "Settings") -> ModelJudge | None:
    """The model judge when an LLM is configured, else None (the rule decides alone)."""
    return None if settings.llm == "rules" else ModelJudge(settings)
