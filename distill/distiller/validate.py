"""Check every candidate on its own, so one bad candidate never sinks its chunk.

Each rejection or repair is counted under its reason (``dropped_schema``, ``dropped_length``,
``entity_keyword_invented``, ``entity_keyword_unbalanced``, ``entity_keyword_in_marker``,
``dropped_no_entity``, ``evidence_unknown``, ``dropped_no_evidence``, ``dropped_generic``,
``dropped_meta``, ``dropped_refusal``, ``dropped_chitchat``, ``dropped_role_prefix``,
``dropped_copies_turn``, ``dropped_hedge``, ``dropped_question``, ``dropped_language``,
``dropped_keyword_fragments``, ``dropped_evidence_reused``, ``dropped_harness_error``,
``dropped_not_an_error``, ``dropped_not_a_fix``, ``dropped_pasted``,
``dropped_complaint``, ``dropped_personal``, ``scope_coerced``,
``secrets_redacted``; and :func:`distill.trust.vet`'s ``refused_not_owner``, ``scope_not_owner``,
``refused_dangerous``, ``refused_injection``, ``flagged_dangerous``). Scope is decided here, by code:
the provider may only say "global";
anything else, including a scope a transcript asked for, becomes "agent".

What a careful reader rejects, and why each rule looks the way it does:

- a body that is a transcript line, not a memory: a line opening with a speaker
  (``user: …``, ``tool: [tool exec failed…``), or most of its word triples found in one turn;
- a hedge or a question: a memory states what was established;
- a body not in English (the required language): Latin letters must dominate;
- an entity keyword must be verbatim in the turns *outside* our own markers (``tool`` is in
  every ``[tool exec failed: …]``) and have balanced brackets and quotes;
- keywords that are mostly pieces cut out of the body are not keywords;
- many candidates resting on the same turns restate one thing: two per evidence set at most.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import ValidationError

from ..text.redact import redact
from ..trust import vet
from . import shapes
from .chunking import Chunk
from .schema import MAX_KEYWORD, MAX_KEYWORDS, MAX_TEXT, Candidate, CandidateOut

MIN_TEXT = 20
MIN_KEYWORDS = 3
COPY_OVERLAP = 0.75  # share of the body's word triples found in one turn
MAX_PER_EVIDENCE = 2
MIN_LATIN_SHARE = 0.7
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
KEYWORDS_LINE_RE = re.compile(r"\n?\s*Keywords\s*\(zh\)\s*[:：].*$", re.IGNORECASE | re.DOTALL)

KIND_KEYWORD = {"pitfall": "踩坑", "decision": "决策", "preference": "偏好", "rule": "规则", "fact": "事实"}
FILLER_KEYWORDS = ("经验", "记忆")

_REFUSAL = re.compile(
    r"^(i('m| am) (sorry|unable)|i can(no|')t|as an ai|sorry\b)|\bi (cannot|can't|won't) (help|assist|comply)",
    re.IGNORECASE,
)
_META = re.compile(
    r"\b(no (durable|reusable|new) (knowledge|memories|information)|nothing (worth|to) (remember|store)|"
    r"(this|the) (conversation|transcript|chat) (contains|has|had|was|is)|memory (store|storage|system)|"
    r"(store|save|add) (this|it|a memory) (in|to|into) (the )?memory|the user asked (me )?to remember)\b",
    re.IGNORECASE,
)
_GENERIC = re.compile(
    r"^(always |it is (important|good practice|recommended) to |make sure to |remember to |be sure to |"
    r"best practice|consider )?(write (good |more )?tests|read the (docs|documentation)|test (your|the) code|"
    r"keep (your |the )?(code|dependencies) (clean|up to date)|use version control|back ?up your (data|files)|"
    r"check the logs|handle errors (properly|gracefully))\b",
    re.IGNORECASE,
)
_CHITCHAT = re.compile(
    r"\b(greeted|said (hello|hi|goodbye|thanks)|thanked (the )?(assistant|user)|small talk|"
    r"(asked|said) how (they|the user|the assistant) (was|were|are)|(had|has) a (nice|good) (day|weekend))\b",
    re.IGNORECASE,
)
_ROLE_PREFIX = re.compile(
    r"^\s*(user|assistant|tool|system|person|human|ai|bot|platform|schedule|parent_agent|toolresult)\s*[:：]"
    r"|\[tool (exec )?failed", re.IGNORECASE | re.MULTILINE,
)
_HEDGE = re.compile(
    r"\b(i'?m not sure|i am not sure|not sure (if|whether|about)|i (think|guess|believe|suppose)|maybe|perhaps|"
    r"possibly|it seems|unclear (if|whether)|might or might not)\b|可能是|也许|不确定|好像",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[?？]\s*$|^(how|what|why|should|can|could|does|do|is|are|which|where|when)\b[^.]*[?？]",
                       re.IGNORECASE | re.MULTILINE)
_MARKER_LABEL = re.compile(r"\[[A-Za-z][A-Za-z _-]{0,30}:")
_LATIN = re.compile(r"[A-Za-z]")
_LETTER = re.compile(r"[^\W\d_]")
_TOKEN = re.compile(r"[a-z0-9_./@-]+|[\u3400-\u4dbf\u4e00-\u9fff]")
_PAIRS = {"(": ")", "[": "]", "{": "}", "（": "）", "【": "】", "“": "”", "‘": "’", "「": "」"}


def validate_candidate(raw: Any, chunk: Chunk, counters: Counter, *, written: bool = True) -> Candidate | None:
    """Return the cleaned candidate, or None after counting why it was dropped.

    ``written=False`` for the offline rules extractor, whose bodies are labelled quotes of the
    turns by design (in the turn's language): the checks for copies, speakers, hedges,
    language and keywords cut from the body are for what a model wrote."""
    try:
        cand = raw if isinstance(raw, CandidateOut) else CandidateOut.model_validate(raw)
    except ValidationError:
        counters["dropped_schema"] += 1
        return None

    text = KEYWORDS_LINE_RE.sub("", cand.text).strip()
    text = _redacted(text, counters)
    if not (MIN_TEXT <= len(text) <= MAX_TEXT):
        counters["dropped_length"] += 1
        return None
    reason = junk_reason(text) or (_transcript_reason(text, chunk) if written else None)
    if reason:
        counters[f"dropped_{reason}"] += 1
        return None
    shape = junk_shape(cand.category, text, cand.entity_keywords, [chunk.message_for(str(t)) for t in cand.evidence])
    if shape:
        counters[f"dropped_{shape}"] += 1
        return None

    source = _MARKER_LABEL.sub(" ", chunk.source_text())
    entities: list[str] = []
    for kw in _clean_keywords(cand.entity_keywords, counters):
        if not _balanced(kw):
            counters["entity_keyword_unbalanced"] += 1
        elif kw in source:
            entities.append(kw)
        elif kw in chunk.source_text():
            counters["entity_keyword_in_marker"] += 1
        else:
            counters["entity_keyword_invented"] += 1
    invented = set(_clean_keywords(cand.entity_keywords, Counter())) - set(entities)
    if not entities:
        counters["dropped_no_entity"] += 1
        return None

    evidence: list[str] = []
    said = []
    for tid in cand.evidence:
        msg = chunk.message_for(str(tid))
        if msg is None:
            counters["evidence_unknown"] += 1
        elif msg.id not in evidence:
            evidence.append(msg.id)
            said.append(msg)
    if not evidence:
        counters["dropped_no_evidence"] += 1
        return None

    scope = cand.scope.strip().lower()
    if scope not in ("global", "agent"):
        counters["scope_coerced"] += 1
    if written and _fragment_keywords(cand.keywords, entities, text):
        counters["dropped_keyword_fragments"] += 1
        return None
    keywords = _keyword_set(cand, entities, invented, counters)
    vetted = vet(text, cand.category, "global" if scope == "global" else "agent", said, counters)
    if vetted is None:  # who said it may not make it a rule, or it is dangerous (distill.trust)
        return None
    text, scope = vetted
    return Candidate(
        text=text,
        kind=cand.category,
        importance=round(cand.importance, 3),
        scope="global" if scope == "global" else "agent",
        keywords=keywords,
        entity_keywords=entities,
        evidence=evidence,
        agent_id=chunk.agent_id,
        chunk=chunk.index,
    )


def validate_chunk(raw: list[Any], chunk: Chunk, counters: Counter, *, written: bool = True) -> list[Candidate]:
    """Every candidate of one answer, then the rule across them: at most two per evidence set."""
    kept = [c for c in (validate_candidate(item, chunk, counters, written=written) for item in raw) if c is not None]
    per_set: Counter = Counter()
    out = []
    for c in sorted(kept, key=lambda c: -c.importance):
        key = tuple(sorted(c.evidence))
        per_set[key] += 1
        if per_set[key] > MAX_PER_EVIDENCE:
            counters["dropped_evidence_reused"] += 1
            continue
        out.append(c)
    return sorted(out, key=kept.index)


_PITFALL_PARTS = re.compile(r"^\s*Pitfall\s*[:：]\s*(?P<error>.+?)\s*\bFix\s*[:：]\s*(?P<fix>.+)$",
                            re.IGNORECASE | re.DOTALL)
_CAUSE_PART = re.compile(r"\s*\bCause\s*[:：].*$", re.IGNORECASE | re.DOTALL)
_TRACE = re.compile(r"^\[tool (?:exec )?failed: (.*)\]$", re.DOTALL)


def junk_shape(kind: str, text: str, entities: list[str], evidence: list[Any]) -> str | None:
    """Why a candidate has a shape real transcripts showed to be junk (:mod:`.shapes`), or
    None: whatever a model answers, a pitfall whose error is the agent harness talking
    (``harness_error``) or reports no failure (``not_an_error``), or whose fix is a heading,
    status line, table row, bullet, narration or cut-off lead-in (``not_a_fix``); a rule or
    preference that stands only in lines the person pasted (``pasted``), or that is a
    complaint or personal (``complaint``, ``personal``). (Who said a rule is not judged by
    its evidence ids: models cite a neighbouring turn often enough.)"""
    msgs = [m for m in evidence if m is not None]
    if kind == "pitfall":
        parts = _PITFALL_PARTS.match(text)
        error = _CAUSE_PART.sub("", parts["error"]) if parts else text
        traces = [t[1] for m in msgs if (t := _TRACE.match(m.text.strip()))]
        if shapes.harness_error(error) or (traces and all(shapes.harness_error(t) for t in traces)
                                           and not any(_author(m) == "person" for m in msgs)):
            return "harness_error"
        if shapes.reports_nothing(error):
            return "not_an_error"
        if parts and shapes.not_a_fix(parts["fix"]):
            return "not_a_fix"
        return None
    if kind not in ("rule", "preference"):
        return None
    said = [m for m in msgs if _author(m) == "person"]
    lines = [ln for m in said for ln in m.text.splitlines() if any(e and e in ln for e in entities)]
    if lines and all(shapes.pasted_line(ln) for ln in lines):
        return "pasted"
    return shapes.statement_reason(text)


def _author(msg: Any) -> str:
    return msg.author or {"user": "person", "assistant": "assistant"}.get(msg.role, "tool")


def _first_match(rules: tuple[tuple[str, re.Pattern], ...], text: str) -> str | None:
    return next((reason for reason, rule in rules if rule.search(text)), None)


def _transcript_reason(text: str, chunk: Chunk) -> str | None:
    reason = _first_match((("role_prefix", _ROLE_PREFIX), ("hedge", _HEDGE), ("question", _QUESTION)), text)
    if reason:
        return reason
    letters = _LETTER.findall(text)
    if letters and len(_LATIN.findall(text)) / len(letters) < MIN_LATIN_SHARE:
        return "language"
    body = _triples(text)
    if body and any(len(body & _triples(m.text)) >= COPY_OVERLAP * len(body) for m in chunk.messages):
        return "copies_turn"
    return None


def _triples(text: str) -> set[tuple[str, ...]]:
    words = _TOKEN.findall(text.lower())
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


def _balanced(word: str) -> bool:
    stack = []
    for ch in word:
        if ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in _PAIRS.values():
            if not stack or stack.pop() != ch:
                return False
    return not stack and word.count('"') % 2 == 0 and word.count("`") % 2 == 0


def _fragment_keywords(keywords: list[str], entities: list[str], text: str) -> bool:
    """True when most of the Chinese keywords are just pieces cut out of the body."""
    own = [k.strip() for k in keywords if _CJK.search(k) and k.strip() not in entities]
    pieces = [k for k in own if k in text]
    return len(own) >= 2 and len(pieces) * 2 > len(own)


def _redacted(text: str, counters: Counter) -> str:
    clean, found = redact(text)
    n = sum(found.values()) if found else 0
    if n:
        counters["secrets_redacted"] += n
    return clean


def junk_reason(text: str) -> str | None:
    """Why a memory text is no durable fact (a refusal, talk about memory itself, a generic
    platitude, chit-chat), or None. Shared with ``distill mcp``'s ``remember``."""
    return _first_match((("refusal", _REFUSAL), ("meta", _META), ("generic", _GENERIC), ("chitchat", _CHITCHAT)),
                        text)


def _clean_keywords(words: list[str], counters: Counter) -> list[str]:
    out: list[str] = []
    for w in words:
        w = re.sub(r"[;；\s]+", " ", str(w)).strip(" ,，")
        w = _redacted(w, counters)
        if w and len(w) <= MAX_KEYWORD and "[REDACTED" not in w and w not in out:
            out.append(w)
    return out


def _keyword_set(cand: CandidateOut, entities: list[str], invented: set[str], counters: Counter) -> list[str]:
    """3-8 phrases: entities first, then the provider's other keywords, then fixed fillers."""
    words = list(entities)
    for kw in _clean_keywords(cand.keywords, counters):
        if kw in invented:
            continue
        if kw not in words:
            words.append(kw)
    for filler in (KIND_KEYWORD[cand.category], *FILLER_KEYWORDS):
        if len(words) >= MIN_KEYWORDS:
            break
        if filler not in words:
            words.append(filler)
    words = words[:MAX_KEYWORDS]
    if not any(_CJK.search(w) for w in words):  # the line is "Keywords (zh)": at least one Chinese phrase
        words = [*words[: MAX_KEYWORDS - 1], KIND_KEYWORD[cand.category]]
    return words
