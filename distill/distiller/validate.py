"""Check every candidate on its own, so one bad candidate never sinks its chunk.

Each rejection or repair is counted under its reason (``dropped_schema``, ``dropped_length``,
``entity_keyword_invented``, ``dropped_no_entity``, ``evidence_unknown``, ``dropped_no_evidence``,
``dropped_generic``, ``dropped_meta``, ``dropped_refusal``, ``dropped_chitchat``,
``scope_coerced``, ``secrets_redacted``). Scope is decided here, by code: the provider may only
say "global"; anything else, including a scope a transcript asked for, becomes "agent".
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import ValidationError

from ..redact import redact
from .chunking import Chunk
from .schema import Candidate, CandidateOut

MAX_TEXT = 500
MIN_TEXT = 20
MAX_KEYWORD = 40
MIN_KEYWORDS = 3
MAX_KEYWORDS = 8
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


def validate_candidate(raw: Any, chunk: Chunk, counters: Counter) -> Candidate | None:
    """Return the cleaned candidate, or None after counting why it was dropped."""
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
    reason = _junk_reason(text)
    if reason:
        counters[f"dropped_{reason}"] += 1
        return None

    source = chunk.source_text()
    entities: list[str] = []
    for kw in _clean_keywords(cand.entity_keywords, counters):
        if kw in source:
            entities.append(kw)
        else:
            counters["entity_keyword_invented"] += 1
    invented = set(_clean_keywords(cand.entity_keywords, Counter())) - set(entities)
    if not entities:
        counters["dropped_no_entity"] += 1
        return None

    evidence: list[str] = []
    for tid in cand.evidence:
        msg = chunk.message_for(str(tid))
        if msg is None:
            counters["evidence_unknown"] += 1
        elif msg.id not in evidence:
            evidence.append(msg.id)
    if not evidence:
        counters["dropped_no_evidence"] += 1
        return None

    scope = cand.scope.strip().lower()
    if scope not in ("global", "agent"):
        counters["scope_coerced"] += 1
    keywords = _keyword_set(cand, entities, invented, counters)
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


def _redacted(text: str, counters: Counter) -> str:
    clean, found = redact(text)
    n = sum(found.values()) if found else 0
    if n:
        counters["secrets_redacted"] += n
    return clean


def _junk_reason(text: str) -> str | None:
    if _REFUSAL.search(text):
        return "refusal"
    if _META.search(text):
        return "meta"
    if _GENERIC.search(text):
        return "generic"
    if _CHITCHAT.search(text):
        return "chitchat"
    return None


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
