"""What a run does when the model server refuses one request, or a run fails, or a retry is
short of budget -- end to end with the real httpx client against the fake OpenAI server, the
real cursor and the real store.

- a chunk refused for what it holds (longer than the model's context, a 413, a content-policy
  refusal) is set aside like a bad answer: the rest of the batch is stored and committed, later
  batches are read, `status` shows the chunk with the setting that helps, `retry` retries it;
- answers received before an error that stops the run are saved, not paid for twice;
- the summary counts what was committed this run, not the batch's size, and a run that did
  nothing says so;
- a failed run is recorded as the last run, with its error and what it did before failing;
- `retry` keeps one token budget for the whole command.
"""

from __future__ import annotations

import json

import pytest

from distill.errors import BudgetExceeded, PermanentError
from distill.pipeline import retry_failed, run_distill
from distill.tails.ledger import load_batch, load_progress, pending_batches
from distill.tails.status import tail_status
from tests.fakes import FakeOpenAI
from tests.fakes.openai_server import sent_text
from tests.pipeline_helpers import EN, cursor_state, settings, stored, write_session
from tests.test_pipeline_chunks import MAIN_MEMORY, OPS, OPS_MEMORY, by_agent, cli

CONTEXT_LENGTH = ("body", 400, json.dumps({"error": {
    "message": "This model's maximum context length is 2048 tokens. However, you requested 5210 tokens. "
               "Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}), "application/json")
CONTENT_POLICY = ("body", 400, json.dumps({"error": {
    "message": "Your request was rejected as a result of our safety system.",
    "type": "invalid_request_error", "param": None, "code": "content_policy_violation"}}), "application/json")
EMPTY = ("json", {"memories": []})


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for name in ("DISTILL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def llm(tmp_path, fake, **over):
    return settings(tmp_path, **{**dict(llm="openai", llm_base_url=fake.base_url, llm_model="m",
                                        retry_attempts=1), **over})


@pytest.mark.parametrize("refusal", [CONTEXT_LENGTH, ("status", 413, {}, "Request too large"), CONTENT_POLICY],
                         ids=["context_length", "413", "content_policy"])
def test_a_chunk_the_server_refuses_is_set_aside_and_the_rest_goes_on(tmp_path, refusal):
    main = write_session(tmp_path, "main", "s1", EN)
    ops = write_session(tmp_path, "ops", "s2", OPS)
    with FakeOpenAI([], default=by_agent(refusal)) as fake:
        s = llm(tmp_path, fake)
        summary = run_distill(s)  # before: PermanentError "retrying will not help: check DISTILL_LLM_MODEL…"
        assert summary.action == "partial" and summary.counters["chunks_set_aside"] == 1
        assert [r.text.split("\n")[0] for r in stored(s)] == [MAIN_MEMORY["text"]]
        assert cursor_state(s)[str(main)] == (main.stat().st_size, {}), "the answered chunk's file is committed"
        held, pending = cursor_state(s)[str(ops)]
        assert pending and held < ops.stat().st_size

        (aside,) = tail_status(s).set_aside
        assert aside.agent_id == "ops" and "retrying will not help" not in aside.error
        if refusal is CONTEXT_LENGTH:
            assert "too long" in aside.error and "DISTILL_CHUNK_TOKENS" in aside.error

        # later files are still read and distilled
        write_session(tmp_path, "dev", "s3", EN)
        later = run_distill(s)
        assert later.llm_calls == 1 and later.action == "committed"

        fake.default = by_agent(("json", {"memories": [OPS_MEMORY]}))
        retried = cli(s, fake, "retry", "--json")
        assert retried.returncode == 0, retried.stderr
        assert json.loads(retried.stdout)["memories_added"] == 1
    assert pending_batches(s) == [] and cursor_state(s)[str(ops)] == (ops.stat().st_size, {})


def test_an_answer_received_before_a_stopping_error_is_saved(tmp_path):
    """Two chunks in flight: one is answered (slowly), the other gets a 401 first. The 401 stops
    the run, but the paid-for answer is in the batch's progress and is not asked for again.
    (Chunk 0 answers first, alone: the provider's first call settles its JSON mode while the
    others wait.)"""
    turns = [("user", f"Rule {i}: host web-{i} serves port 80{i}0 behind caddy; never restart it by hand.")
             for i in range(4)]
    write_session(tmp_path, "main", "s1", turns)

    def answer(rec):
        _, user = sent_text(rec)
        return EMPTY if "web-0" in user else ("sleep", 0.8, EMPTY) if "web-1" in user else ("status", 401)

    with FakeOpenAI([], default=answer) as fake:
        s = llm(tmp_path, fake, chunk_tokens=40, chunk_overlap_turns=0, llm_concurrency=2)
        with pytest.raises(PermanentError, match="API key rejected"):
            run_distill(s)
        (batch,) = pending_batches(s)
        progress = load_progress(batch)
        assert progress is not None and progress.chunks["1"].status == "mapped"  # before: lost, paid again


def test_the_summary_counts_what_was_committed_and_a_run_that_did_nothing_says_so(tmp_path):
    main = write_session(tmp_path, "main", "s1", EN)
    ops = write_session(tmp_path, "ops", "s2", OPS)
    with FakeOpenAI([], default=by_agent(("raw", "not JSON, sorry"))) as fake:
        s = llm(tmp_path, fake)
        first = run_distill(s)
        (path,) = pending_batches(s)
        batch = load_batch(path)
        moved = sum(offset for offset, _ in cursor_state(s).values())
        held = cursor_state(s)[str(ops)][0]
        assert first.action == "partial"
        assert first.bytes == moved < sum(r.end - r.start for r in batch.ranges)  # before: the whole batch
        main_turns = sum(len(a.messages) for a in batch.agents if a.agent_id == "main")
        assert first.turns == main_turns < sum(len(a.messages) for a in batch.agents)
        line = cli(s, fake, "status").stdout
        assert "last run:" in line and f"partial: {first.files} files, {moved} bytes" in line

        again = run_distill(s)  # nothing new, the set-aside chunk waits for `retry`
        assert (again.action, again.files, again.bytes, again.turns, again.llm_calls) == ("noop", 0, 0, 0, 0)
        assert again.counters["chunks_waiting"] == 1  # the summary still recalls it

        fake.default = by_agent(("json", {"memories": [OPS_MEMORY]}))
        retried = retry_failed(s)
        assert retried.action == "committed" and retried.files == 1
        assert retried.bytes == ops.stat().st_size - held  # the rest of ops, no more
        assert retried.turns == sum(len(a.messages) for a in batch.agents if a.agent_id == "ops")
        assert first.bytes + retried.bytes == main.stat().st_size + ops.stat().st_size


def test_a_failed_run_is_the_last_run_with_its_error_and_what_it_spent(tmp_path):
    turns = [("user", f"Rule {i}: host web-{i} serves port 80{i}0 behind caddy; never restart it by hand.")
             for i in range(4)]
    write_session(tmp_path, "main", "s1", turns)
    with FakeOpenAI([EMPTY, ("status", 401)], default=EMPTY) as fake:
        s = llm(tmp_path, fake, chunk_tokens=40, chunk_overlap_turns=0, llm_concurrency=1)
        with pytest.raises(PermanentError):
            run_distill(s)
        last = tail_status(s).last_run  # before: no last run at all
        assert last is not None and last.action == "failed" and "API key rejected" in (last.error or "")
        # every answer paid for (the one before the 401, and one the single worker may already have
        # had in flight) is counted, and saved
        answered = len(fake.requests) - 1
        assert answered >= 1 and last.summary.llm_calls == answered and last.summary.tokens > 0
        assert len(load_progress(pending_batches(s)[0]).with_status("mapped")) == answered
        text = cli(s, fake, "status").stdout
        assert "failed: " in text and "API key rejected" in text and "before failing: " in text

        fake.default = EMPTY
        done = run_distill(s)
        assert done.action == "committed"
        assert tail_status(s).last_run.error is None


def test_retry_keeps_one_token_budget_for_the_whole_command(tmp_path):
    """Two batches with a set-aside chunk each; a run budget that holds one call but not two.
    Before, each batch got a fresh budget and both were paid for."""
    with FakeOpenAI([], default=("raw", "not JSON")) as fake:
        s = llm(tmp_path, fake, llm_max_output_tokens=1000)
        write_session(tmp_path, "ops", "s1", OPS)
        run_distill(s)
        write_session(tmp_path, "dev", "s2", OPS)
        run_distill(s)
        assert len(tail_status(s).set_aside) == 2 and len(pending_batches(s)) == 2

        fake.default = ("json", {"memories": []}, {"prompt": 1200, "output": 10})
        tight = llm(tmp_path, fake, llm_max_output_tokens=1000, token_budget_run=2500)
        before = len(fake.requests)
        with pytest.raises(BudgetExceeded):
            retry_failed(tight)
        assert len(fake.requests) - before == 1
        assert tail_status(s).last_run.action == "failed"  # and recorded, with the error
