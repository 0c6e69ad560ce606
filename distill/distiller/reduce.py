"""Few, ranked, scoped memories out of many candidates.

Near-duplicates across chunks (overlapping turns are seen twice; an LLM restates) are merged
here with a cheap lexical test; duplicates against the store are the store's decision. Ranking
is by importance, then evidence, then specificity (entity names, numbers). Scope is code's:
"global" → ``global``, "agent" → ``agent:<source agent>``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from pydantic import BaseModel, Field

from ..model import BatchMessage
from ..store.dedup import contradictions
from .schema import CATEGORY_OF_KIND, Candidate

NEAR_DUP_JACCARD = 0.7
_WORD_RE = re.compile(r"[a-z0-9_./@:-]+")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")


class Memory(BaseModel):
    """A memory ready for the store (the store's ``MemoryDraft`` fields)."""

    text: str
    category: str
    scope: str
    importance: float
    metadata: dict = Field(default_factory=dict)


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()


def _terms(text: str) -> set[str]:
    t = normalise(text)
    terms = set(_WORD_RE.findall(t))
    for run in _CJK_RE.findall(t):
        terms.update(run[i:i + 2] for i in range(max(len(run) - 1, 1)))
    return terms


def _similar(a: Candidate, b: Candidate) -> bool:
    if a.agent_id != b.agent_id and not (a.scope == b.scope == "global"):
        return False
    if a.kind != b.kind:
        return False  # a pitfall and a rule about the same tools are two memories, as in the store's guard
    if normalise(a.text) == normalise(b.text):
        return True
    ea, eb = {e.lower() for e in a.entity_keywords}, {e.lower() for e in b.entity_keywords}
    if ea and eb and not (ea <= eb or eb <= ea):
        return False  # same wording about different things (services/billing0 vs billing5)
    ta, tb = _terms(a.text), _terms(b.text)
    if not ta or not tb:
        return False
    jac = len(ta & tb) / len(ta | tb)
    # the store's guard: "timeout is 30 s" / "60 s" share most words and are two memories
    return jac >= NEAR_DUP_JACCARD and not contradictions(a.text, b.text)


def _merge(keep: Candidate, other: Candidate) -> Candidate:
    def union(x: list[str], y: list[str], cap: int | None = None) -> list[str]:
        out = list(dict.fromkeys([*x, *y]))
        return out[:cap] if cap else out

    return keep.model_copy(update={
        "importance": max(keep.importance, other.importance),
        "evidence": union(keep.evidence, other.evidence),
        "entity_keywords": union(keep.entity_keywords, other.entity_keywords),
        "keywords": union(keep.keywords, other.keywords, 8),
    })


def score(c: Candidate) -> tuple:
    specificity = len(c.entity_keywords) + (1 if re.search(r"\d", c.text) else 0)
    return (round(c.importance, 2), min(len(c.evidence), 5), min(specificity, 5), -len(c.text), c.text)


def merge_near_duplicates(cands: list[Candidate], counters: Counter) -> list[Candidate]:
    kept: list[Candidate] = []
    for c in sorted(cands, key=score, reverse=True):
        for i, k in enumerate(kept):
            if _similar(k, c):
                kept[i] = _merge(k, c)
                counters["merged_in_run"] += 1
                break
        else:
            kept.append(c)
    return kept


def apply_caps(cands: list[Candidate], *, max_per_agent: int, max_global: int, counters: Counter,
               messages: dict[str, BatchMessage] | None = None) -> list[Candidate]:
    """Keep the best ``max_per_agent`` agent-scoped and ``max_global`` global candidates of
    each session's chunk (its unit: agent, session, chunk).

    Caps stop one chatty chunk from flooding the store; counted per batch, they kept six
    memories from a backfill of months. Per session and chunk they grow with the history
    read, and every candidate they drop is counted (``dropped_cap``)."""
    messages = messages or {}
    taken: Counter = Counter()
    out: list[Candidate] = []
    for c in sorted(cands, key=score, reverse=True):
        first = messages.get(c.evidence[0]) if c.evidence else None
        unit = (c.agent_id, first.session_id if first else "", c.chunk, c.scope)
        if taken[unit] >= (max_global if c.scope == "global" else max_per_agent):
            counters["dropped_cap"] += 1
            continue
        taken[unit] += 1
        out.append(c)
    return out


def to_memory(c: Candidate, messages: dict[str, BatchMessage], *, provider: str, model: str | None,
              prompt_version: str) -> Memory:
    from ..store.dedup import content_hash  # the store's own hash, so metadata and dedup agree

    text = f"{c.text}\nKeywords (zh): {'; '.join(c.keywords)}"
    evid = [messages[e] for e in c.evidence if e in messages]
    ranges = [{"file": m.file, "start": m.start, "end": m.end} for m in evid]
    return Memory(
        text=text,
        category=CATEGORY_OF_KIND[c.kind],
        scope="global" if c.scope == "global" else f"agent:{c.agent_id}",
        importance=max(0.0, min(1.0, c.importance)),
        metadata={
            "kind": c.kind,
            "keywords_zh": c.keywords,
            "entity_keywords": c.entity_keywords,
            "evidence": c.evidence,
            "provenance": {
                "agent": c.agent_id,
                "sessions": sorted({m.session_id for m in evid}),
                "files": sorted({m.file for m in evid}),
                "ranges": ranges,
                "entryIds": [m.entry_id for m in evid if m.entry_id],
            },
            "distiller": {"provider": provider, "model": model, "prompt_version": prompt_version},
            "content_hash": content_hash(text),
        },
    )


_FIX_PART = re.compile(r"\bFix\s*[:：]\s*(.+)$", re.IGNORECASE | re.DOTALL)
_ERROR_PART = re.compile(r"^\s*Pitfall\s*[:：]\s*(.+?)(?:\s+(?:Cause|Fix)\s*[:：]|$)", re.IGNORECASE | re.DOTALL)


def one_fix_one_error(cands: list[Candidate], counters: Counter) -> list[Candidate]:
    """A fix serves one error and an error gets one fix, across the chunks of a batch too
    (overlapping chunks, or a model, can pair one fix text with two errors): of pitfalls
    sharing a fix, or an error, the best-scored stays, the others are counted
    ``dropped_fix_reused`` / ``dropped_error_reused``."""
    fixes: dict[tuple[str, str], str] = {}
    errors: dict[str, tuple[str, str]] = {}
    keep: set[int] = set()
    for c in sorted(cands, key=score, reverse=True):
        fix, err = _FIX_PART.search(c.text), _ERROR_PART.search(c.text)
        if c.kind != "pitfall" or fix is None or err is None:
            keep.add(id(c))
            continue
        fix_key = (c.agent_id, normalise(fix.group(1)))
        err_key = f"{c.agent_id}|{normalise(err.group(1))}|{c.evidence[0] if c.evidence else ''}"
        if fixes.get(fix_key, err_key) != err_key:
            counters["dropped_fix_reused"] += 1
        elif errors.get(err_key, fix_key) != fix_key:
            counters["dropped_error_reused"] += 1
        else:
            fixes[fix_key], errors[err_key] = err_key, fix_key
            keep.add(id(c))
    return [c for c in cands if id(c) in keep]


def reduce_candidates(cands: list[Candidate], messages: dict[str, BatchMessage], *, max_per_agent: int,
                      max_global: int, provider: str, model: str | None, prompt_version: str,
                      counters: Counter) -> list[Memory]:
    merged = merge_near_duplicates(one_fix_one_error(cands, counters), counters)
    capped = apply_caps(merged, max_per_agent=max_per_agent, max_global=max_global, counters=counters,
                        messages=messages)
    return [to_memory(c, messages, provider=provider, model=model, prompt_version=prompt_version)
            for c in capped]
