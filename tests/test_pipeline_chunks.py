"""One chunk failing for good never holds the rest of its batch: the other chunks' memories
are stored and their ranges committed, the failed chunk is shown by `distill status` with the
byte ranges it holds, `distill retry` stores it later, and nothing is stored twice."""

from __future__ import annotations

import json
from collections import Counter

from distill.tails.ledger import pending_batches
from distill.pipeline import run_distill
from distill.tails.status import tail_status
from tests.fakes import FakeOpenAI
from tests.fakes.openai_server import sent_text
from tests.pipeline_helpers import EN, cursor_state, settings, stored, write_session
from tests.tail_helpers import run_main

OPS = [
    ("user", "Our staging database is postgres 16 on host db-stage-2; never run migrations there on Fridays."),
    ("assistant", "Noted: no migrations on db-stage-2 on Fridays."),
]
MAIN_MEMORY = {
    "text": "Rule: this repo uses uv, never pip, because pip resolves the wrong numpy version.",
    "category": "rule", "importance": 0.85, "scope": "agent",
    "keywords": ["uv", "pip", "依赖管理", "规则"], "entity_keywords": ["uv", "pip", "numpy"], "evidence": ["t2"],
}
OPS_MEMORY = {
    "text": "Rule: never run database migrations on db-stage-2 (postgres 16 staging) on Fridays.",
    "category": "rule", "importance": 0.8, "scope": "agent",
    "keywords": ["db-stage-2", "迁移", "周五", "规则"], "entity_keywords": ["db-stage-2", "postgres 16"],
    "evidence": ["t1"],
}


def by_agent(ops_answer):
    def answer(rec):
        _, user = sent_text(rec)
        return ops_answer if "db-stage-2" in user else ("json", {"memories": [MAIN_MEMORY]})
    return answer


def cli(s, fake, *args):
    """The ``distill`` command (in this process) aimed at the fake model, in an environment of its own."""
    env_flags = ["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "--db", str(s.db)]
    env = {"DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url, "DISTILL_LLM_MODEL": "m",
           "DISTILL_RETRY_ATTEMPTS": "1", "PATH": "/usr/bin:/bin"}
    return run_main([*env_flags, *args], env=env, clear_env=True)


def test_one_chunk_failing_for_good_does_not_hold_the_rest(tmp_path):
    main = write_session(tmp_path, "main", "s1", EN)
    ops = write_session(tmp_path, "ops", "s2", OPS)
    with FakeOpenAI([], default=by_agent(("raw", "I cannot answer in JSON, sorry"))) as fake:
        s = settings(tmp_path, llm="openai", llm_base_url=fake.base_url, llm_model="m", retry_attempts=1)
        summary = run_distill(s)
        assert summary.action == "partial" and summary.counters["chunks_set_aside"] == 1  # a chunk waits
        assert [r.text.split("\n")[0] for r in stored(s)] == [MAIN_MEMORY["text"]]
        assert cursor_state(s)[str(main)] == (main.stat().st_size, {}), "the good chunk's file is committed"
        offset, pending = cursor_state(s)[str(ops)]
        assert pending and offset < ops.stat().st_size, "the failed chunk's turns are not"

        status = cli(s, fake, "status", "--json")
        assert status.returncode == 0, status.stderr
        (aside,) = json.loads(status.stdout)["setAside"]
        assert aside["agentId"] == "ops" and aside["ranges"][0][0] == str(ops)
        assert aside["ranges"][0][1] >= offset and "not valid JSON" in aside["error"]
        text = cli(s, fake, "status").stdout
        assert "set-aside chunks: 1" in text and "distill retry" in text

        calls = len(fake.requests)
        again = run_distill(s)  # a plain run neither pays for the failed chunk nor redoes the good one
        assert again.llm_calls == 0 and len(fake.requests) == calls

        write_session(tmp_path, "ops", "s2", [("user", "also: backups of db-stage-2 run at 02:00")], append=True)
        assert run_distill(s).llm_calls == 0, "a file held by a set-aside chunk waits"

        fake.default = by_agent(("json", {"memories": [OPS_MEMORY]}))
        retried = cli(s, fake, "retry", "--json")
        assert retried.returncode == 0, retried.stderr
        assert json.loads(retried.stdout)["memories_added"] == 1
    texts = [r.text.split("\n")[0] for r in stored(s)]
    assert Counter(texts) == Counter([MAIN_MEMORY["text"], OPS_MEMORY["text"]])  # nothing doubled
    assert pending_batches(s) == [] and cursor_state(s)[str(ops)][0] > offset
    assert tail_status(s).set_aside == []


def test_drop_commits_the_set_aside_ranges_without_memories(tmp_path):
    ops = write_session(tmp_path, "ops", "s2", OPS)
    with FakeOpenAI([], default=("empty",)) as fake:
        s = settings(tmp_path, llm="openai", llm_base_url=fake.base_url, llm_model="m", retry_attempts=1)
        run = cli(s, fake, "run", "--distill")
        assert run.returncode == 0, run.stderr
        assert "1 chunk set aside, their turns not committed" in run.stdout and "distill retry" in run.stdout
        assert len(fake.requests) == 2  # the empty answer, then the same question once more
        assert cursor_state(s)[str(ops)][1], "an empty answer is never committed silently"
        commit = cli(s, fake, "commit", "--batch-file", str(pending_batches(s)[0]))
        assert commit.returncode != 0 and "set-aside" in commit.stderr
        dropped = cli(s, fake, "retry", "--drop", "--json")
        assert dropped.returncode == 0, dropped.stderr
        assert json.loads(dropped.stdout)["counters"]["chunks_dropped"] == 1
        assert "nothing to retry" in cli(s, fake, "retry").stdout
    assert stored(s) == [] and cursor_state(s)[str(ops)] == (ops.stat().st_size, {})


def test_a_rerun_maps_only_the_chunks_that_never_finished(tmp_path):
    from distill.tails.ledger import load_progress
    from distill.errors import PermanentError

    turns = [("user", f"Rule {i}: host web-{i} serves port 80{i}0 behind caddy; never restart it by hand.")
             for i in range(6)]
    path = write_session(tmp_path, "main", "s1", turns)
    empty = ("json", {"memories": []})
    with FakeOpenAI([empty, empty, ("status", 401)], default=empty) as fake:
        s = settings(tmp_path, llm="openai", llm_base_url=fake.base_url, llm_model="m", retry_attempts=1,
                     chunk_tokens=40, chunk_overlap_turns=0, llm_concurrency=1)
        try:
            run_distill(s)
        except PermanentError:
            pass
        else:
            raise AssertionError("a 401 must stop the batch")
        (batch,) = pending_batches(s)
        # every answered chunk is kept: the two before the 401, and one the single worker may
        # already have started before the 401 stopped the rest
        kept = len(load_progress(batch).chunks)
        assert kept == len(fake.requests) - 1 and kept in (2, 3), "the answered chunks are kept"
        assert cursor_state(s)[str(path)][0] == 0
        before = len(fake.requests)
        summary = run_distill(s)
        chunks = summary.counters["chunks"]
    assert chunks >= 4 and len(fake.requests) - before == chunks - kept  # only the unfinished ones
    assert cursor_state(s)[str(path)] == (path.stat().st_size, {})


def test_usage_is_booked_under_the_configured_model(tmp_path):
    from distill.budget import TokenBudget  # noqa: F401  (usage.json is its file)

    write_session(tmp_path, "main", "s1", EN)
    envelope = {"id": "x", "object": "chat.completion", "model": "-", "usage": {"prompt_tokens": 10,
                "completion_tokens": 5, "total_tokens": 15},
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": json.dumps({"memories": []})}}]}
    with FakeOpenAI([("response", envelope)]) as fake:
        s = settings(tmp_path, llm="openai", llm_base_url=fake.base_url, llm_model="qwen3:8b")
        run_distill(s)
    usage = (s.state_dir / "usage.json").read_text()
    assert "openai:qwen3:8b" in usage and "openai:-" not in usage
