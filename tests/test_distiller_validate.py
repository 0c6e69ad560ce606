"""Every candidate is judged on its own; each reason for dropping or repairing is counted."""

from collections import Counter

from distill.model import BatchAgent
from distill.distiller.chunking import chunk_agent
from distill.distiller.validate import validate_candidate

from tests.distiller_helpers import messages

CHUNK = chunk_agent(BatchAgent(agent_id="main", messages=messages([
    ("user", "pnpm install fails with ERR_PNPM_OUTDATED_LOCKFILE in CI"),
    ("assistant", "Fixed: run pnpm install --no-frozen-lockfile once and commit pnpm-lock.yaml."),
])), chunk_tokens=6000, overlap_turns=2)[0]

GOOD = {
    "text": "Pitfall: pnpm install fails in CI with ERR_PNPM_OUTDATED_LOCKFILE. Fix: regenerate and commit pnpm-lock.yaml.",
    "category": "pitfall", "importance": 0.8, "scope": "global",
    "keywords": ["锁文件过期", "持续集成", "pnpm-lock.yaml"],
    "entity_keywords": ["ERR_PNPM_OUTDATED_LOCKFILE", "pnpm-lock.yaml"],
    "evidence": ["t1", "t2"],
}


def check(**changes):
    counters = Counter()
    cand = validate_candidate({**GOOD, **changes}, CHUNK, counters)
    return cand, counters


def test_good_candidate_maps_evidence_to_batch_ids_and_keeps_keywords():
    cand, counters = check()
    assert cand is not None and not counters
    assert cand.evidence == [m.id for m in CHUNK.messages]
    assert cand.scope == "global" and cand.agent_id == "main"
    assert cand.keywords[:2] == ["ERR_PNPM_OUTDATED_LOCKFILE", "pnpm-lock.yaml"]
    assert 3 <= len(cand.keywords) <= 8


def test_schema_breaking_candidate_is_dropped_alone():
    assert check(importance="very")[0] is None
    cand, counters = check(category="gossip")
    assert cand is None and counters == Counter(dropped_schema=1)
    cand, counters = check(text=None)
    assert counters["dropped_schema"] == 1


def test_length_limits():
    assert check(text="x" * 501)[1]["dropped_length"] == 1
    assert check(text="ok")[1]["dropped_length"] == 1


def test_invented_entity_keywords_are_removed_and_none_left_drops():
    cand, counters = check(entity_keywords=["ERR_PNPM_OUTDATED_LOCKFILE", "acme-deployer"],
                           keywords=["acme-deployer", "锁文件", "持续集成"])
    assert cand is not None
    assert "acme-deployer" not in cand.entity_keywords and "acme-deployer" not in cand.keywords
    assert counters["entity_keyword_invented"] == 1
    cand, counters = check(entity_keywords=["acme-deployer", "ProjectZeus"])
    assert cand is None
    assert counters == Counter(entity_keyword_invented=2, dropped_no_entity=1)


def test_evidence_must_exist():
    cand, counters = check(evidence=["t2", "t9", "turn-1"])
    assert cand.evidence == [CHUNK.messages[1].id] and counters["evidence_unknown"] == 2
    cand, counters = check(evidence=["t7"])
    assert cand is None and counters["dropped_no_evidence"] == 1


def test_scope_is_only_global_or_agent():
    for asked in ("agent:root", "global; also agent:ops", "user:alice", "AGENT"):
        cand, counters = check(scope=asked)
        assert cand.scope == "agent"
    assert check(scope="agent:root")[1]["scope_coerced"] == 1
    assert check(scope="Global")[0].scope == "global"


def test_generic_meta_refusal_and_chitchat_are_dropped():
    for text, reason in [
        ("I'm sorry, but I cannot help with extracting memories from this pnpm-lock.yaml.", "dropped_refusal"),
        ("This conversation contains no durable knowledge about pnpm-lock.yaml.", "dropped_meta"),
        ("Always write tests before changing pnpm-lock.yaml in any project.", "dropped_generic"),
        ("The user greeted the assistant and said thanks about pnpm-lock.yaml.", "dropped_chitchat"),
    ]:
        cand, counters = check(text=text)
        assert cand is None and counters[reason] == 1, text


def test_secrets_are_redacted_again_and_keywords_line_not_duplicated():
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    cand, counters = check(text=f"Fact: the CI token for pnpm-lock.yaml pushes is {key}.\nKeywords (zh): 乱; 码")
    assert cand is not None and key not in cand.text and "[REDACTED:" in cand.text
    assert "Keywords" not in cand.text
    assert counters["secrets_redacted"] >= 1


def test_keywords_line_always_has_a_chinese_phrase():
    cand, _ = check(keywords=["pnpm", "CI", "lockfile", "frozen", "install", "cache", "node", "yaml"])
    assert any("\u4e00" <= ch <= "\u9fff" for kw in cand.keywords for ch in kw)
    assert len(cand.keywords) <= 8


# --- issue 9: what a careful reader rejects (cases taken from the real-model run) ---------

MARKED = chunk_agent(BatchAgent(agent_id="main", messages=messages([
    ("user", "我们决定只在 Debian 12 上部署，不再支持 Ubuntu 20.04。"),
    ("tool", "[tool exec failed: exec: ModuleNotFoundError: No module named 'lancedb']"),
    ("assistant", "Fixed: the venv lacked lancedb; uv pip install lancedb inside .venv solved it."),
])), chunk_tokens=6000, overlap_turns=2)[0]


def judge(chunk=MARKED, **fields):
    base = {"category": "fact", "importance": 0.7, "scope": "global", "keywords": ["部署", "依赖"],
            "entity_keywords": ["lancedb"], "evidence": ["t2", "t3"]}
    counters = Counter()
    return validate_candidate({**base, **fields}, chunk, counters), counters


def test_transcript_lines_with_a_speaker_are_not_memories():
    for text in ("user: 我们决定只在 Debian 12 上部署，不再支持 Ubuntu 20.04。",
                 "tool: [tool exec failed: exec: ModuleNotFoundError: No module named 'lancedb']",
                 "Pitfall: [tool exec failed: exec: ModuleNotFoundError] happened with lancedb."):
        cand, counters = judge(text=text)
        assert cand is None and counters["dropped_role_prefix"] == 1, text


def test_hedges_questions_and_other_languages_are_rejected():
    cases = {"I'm not sure about this, maybe lancedb is missing": "dropped_hedge",
             "Should lancedb be installed with uv pip inside .venv?": "dropped_question",
             "我们决定只在 Debian 12 上部署 lancedb，不再支持 Ubuntu 20.04 系统。": "dropped_language"}
    for text, reason in cases.items():
        cand, counters = judge(text=text)
        assert cand is None and counters[reason] == 1, (text, counters)


def test_a_body_copied_from_one_turn_is_rejected_a_restatement_is_not():
    cand, counters = judge(text="Fact: the venv lacked lancedb; uv pip install lancedb inside .venv solved it.")
    assert cand is None and counters["dropped_copies_turn"] == 1
    cand, _ = judge(text="Pitfall: ModuleNotFoundError for lancedb when the venv lacks it. "
                         "Fix: uv pip install lancedb inside .venv.")
    assert cand is not None


def test_an_entity_found_only_inside_a_marker_is_not_verbatim():
    cand, counters = judge(text="Pitfall: a tool run failed because lancedb was missing from the venv.",
                           entity_keywords=["tool"])
    assert cand is None and counters["entity_keyword_in_marker"] == 1 and counters["dropped_no_entity"] == 1
    cand, counters = judge(text="Pitfall: ModuleNotFoundError for lancedb when the venv lacks it; install it with uv.",
                           entity_keywords=["ModuleNotFoundError", "(lancedb", "lancedb"])
    assert cand.entity_keywords == ["ModuleNotFoundError", "lancedb"]  # from the marker's payload: kept
    assert counters["entity_keyword_unbalanced"] == 1


def test_keywords_cut_out_of_the_body_are_rejected():
    cand, counters = judge(text='Decision: deploy only on Debian 12 ("只在 Debian 12 上部署"), not Ubuntu 20.04.',
                           entity_keywords=["Debian 12"], keywords=["只在", "上部署", "部署"], evidence=["t1"])
    assert cand is None and counters["dropped_keyword_fragments"] == 1


def test_many_candidates_on_the_same_evidence_keep_two():
    from distill.distiller.validate import validate_chunk

    base = {"category": "fact", "scope": "global", "keywords": ["依赖"], "entity_keywords": ["lancedb"],
            "evidence": ["t2", "t3"]}
    raw = [{**base, "importance": 0.5 + i / 10, "text": f"Fact {i}: lancedb must be installed into .venv for job {i}."}
           for i in range(4)]
    counters = Counter()
    kept = validate_chunk(raw, MARKED, counters)
    assert [c.text[:6] for c in kept] == ["Fact 2", "Fact 3"] and counters["dropped_evidence_reused"] == 2
