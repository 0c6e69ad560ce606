"""Reduce: merge near-duplicates across chunks, rank, cap, scope by code, format the text."""

from collections import Counter

from distill.distiller.reduce import reduce_candidates
from distill.distiller.schema import Candidate

from tests.distiller_helpers import messages

MSGS = messages([("user", f"turn {i}") for i in range(6)], agent="main") + \
    messages([("user", f"turn {i}") for i in range(6)], agent="ops")
BY_ID = {m.id: m for m in MSGS}


def cand(text, *, agent="main", scope="agent", importance=0.7, evidence=None, entities=("uv",), chunk=0):
    ev = evidence or [next(m.id for m in MSGS if m.id.startswith(agent))]
    return Candidate(text=text, kind="decision", importance=importance, scope=scope,
                     keywords=[*entities, "依赖管理", "决策"], entity_keywords=list(entities),
                     evidence=ev, agent_id=agent, chunk=chunk)


def run(cands, **caps):
    counters = Counter()
    mems = reduce_candidates(cands, BY_ID, max_per_agent=caps.get("max_per_agent", 3),
                             max_global=caps.get("max_global", 3), provider="rules", model="rules-v1",
                             prompt_version="map-v1", counters=counters)
    return mems, counters


def test_overlap_duplicates_merge_with_union_of_evidence():
    a = cand("Decision: the repo manages dependencies with uv, not pip.", evidence=[MSGS[0].id])
    b = cand("Decision: the repo manages dependencies with uv, not pip!", evidence=[MSGS[1].id], chunk=1)
    mems, counters = run([a, b])
    assert len(mems) == 1 and counters["merged_in_run"] == 1
    assert sorted(mems[0].metadata["evidence"]) == sorted([MSGS[0].id, MSGS[1].id])


def test_different_entities_stay_apart():
    mems, _ = run([cand("Decision: deploy only on Debian 12 hosts.", entities=("Debian 12",)),
                   cand("Decision: deploy only on Ubuntu 22.04 hosts.", entities=("Ubuntu 22.04",))])
    assert len(mems) == 2


def test_caps_keep_the_best_per_agent_and_global():
    cands = [cand(f"Decision {i}: pin tool{i} to version {i}.{i} in main", importance=0.5 + i / 20,
                  entities=(f"tool{i}",)) for i in range(5)]
    cands += [cand(f"Pitfall {i}: lib{i} breaks on import in every agent", scope="global", agent="ops",
                   importance=0.6, entities=(f"lib{i}",)) for i in range(5)]
    cands += [cand("Decision: ops uses kubectl 1.29 only", agent="ops", entities=("kubectl",))]
    mems, counters = run(cands, max_per_agent=2, max_global=1)
    scopes = Counter(m.scope for m in mems)
    assert scopes == {"agent:main": 2, "global": 1, "agent:ops": 1}
    assert counters["dropped_cap"] == 3 + 4
    kept_main = sorted(m.text for m in mems if m.scope == "agent:main")
    assert kept_main[0].startswith("Decision 3") and kept_main[1].startswith("Decision 4")


def test_text_and_metadata_shape():
    ev = [MSGS[7].id, MSGS[8].id]
    (mem,), _ = run([cand("Decision: ops pins kubectl to 1.29 because the cluster is 1.29.", agent="ops",
                          evidence=ev, entities=("kubectl",))])
    assert mem.scope == "agent:ops" and mem.category == "decision"
    body, kw = mem.text.rsplit("\n", 1)
    assert kw == "Keywords (zh): kubectl; 依赖管理; 决策"
    md = mem.metadata
    assert md["keywords_zh"] == ["kubectl", "依赖管理", "决策"] and md["entity_keywords"] == ["kubectl"]
    assert md["provenance"]["agent"] == "ops" and md["provenance"]["sessions"] == ["s1"]
    assert md["provenance"]["ranges"] == [{"file": MSGS[7].file, "start": MSGS[7].start, "end": MSGS[7].end},
                                          {"file": MSGS[8].file, "start": MSGS[8].start, "end": MSGS[8].end}]
    assert md["provenance"]["entryIds"] == ["e1", "e2"]
    assert md["distiller"] == {"provider": "rules", "model": "rules-v1", "prompt_version": "map-v1"}
    assert len(md["content_hash"]) == 64
