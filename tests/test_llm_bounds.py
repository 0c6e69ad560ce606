"""Issue 9 with the real httpx / google-genai clients against the fake servers: answers are
bounded (token cap sent, wall clock per call even while bytes keep coming, cut-off arrays
salvaged), one inlined schema every endpoint reads, the json_schema fallback paid once."""

from __future__ import annotations

import json
import time

import pytest

from distill.budget import TokenBudget
from distill.config import load_settings
from distill.distiller.extract import make_extractor, salvage_items
from distill.distiller.schema import REQUIRED, output_token_cap, response_schema
from distill.errors import TransientError
from distill.providers.base import LLMRequest, get_provider
from distill.providers.gemini import _SCHEMA_KEYWORDS, gemini_json_schema
from distill.providers.openai_compat import _OPENAI_KEYWORDS, openai_subset, strict_compatible
from distill.pipeline import distill_batch
from tests.distiller_helpers import PEP668_PITFALL, batch_of
from tests.fakes import FakeGemini, FakeOpenAI
from tests.fakes.openai_server import response_format_type

FAKES = {"gemini": FakeGemini, "openai": FakeOpenAI}
TURNS = [
    ("user", "pip install lancedb fails with error: externally-managed-environment on Debian 12"),
    ("assistant", "Debian's system Python is protected (PEP 668). Use uv venv, then uv pip install lancedb."),
]
GOOD = {"memories": [PEP668_PITFALL]}


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "DISTILL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def settings_for(kind, fake, tmp_path, **over):
    base = dict(state_dir=tmp_path / "state", llm=kind, llm_base_url=fake.base_url, llm_model="m",
                llm_api_key="k", retry_attempts=1, retry_max_wait=0.5, llm_timeout=5.0)
    return load_settings(**{**base, **over})


def distil(kind, fake, tmp_path, turns=TURNS, **over):
    s = settings_for(kind, fake, tmp_path, **over)
    extractor = make_extractor(s)
    try:
        return distill_batch(s, batch_of({"main": turns}), extractor=extractor, budget=TokenBudget(s))
    finally:
        extractor.close()


def walk(node):
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    yield from walk(sub)
            else:
                yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# --- one schema -----------------------------------------------------------------------------

def test_one_schema_inlined_bounded_and_required_as_the_validator_needs():
    schema = response_schema()
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    memories = schema["properties"]["memories"]
    item = memories["items"]
    assert memories["maxItems"] >= 1 and item["properties"]["text"]["maxLength"] == 500
    assert tuple(item["required"]) == REQUIRED == tuple(item["properties"])  # entity_keywords included
    assert all(n.get("maxItems") for n in item["properties"].values() if n.get("type") == "array")


def test_each_provider_gets_only_its_documented_keywords():
    gemini = gemini_json_schema(response_schema())
    openai = openai_subset(response_schema())
    for schema, allowed in ((gemini, _SCHEMA_KEYWORDS), (openai, _OPENAI_KEYWORDS)):
        for node in walk(schema):
            assert set(node) <= allowed, set(node) - allowed
    assert strict_compatible(openai)  # closed objects, every property required
    assert "maxItems" in json.dumps(gemini) and "maxItems" in json.dumps(openai)


@pytest.mark.parametrize("kind", ["gemini", "openai"])
def test_token_cap_is_sent(kind, tmp_path):
    with FAKES[kind]([("json", GOOD)]) as fake:
        distil(kind, fake, tmp_path)
        body = fake.requests[0].body
    sent = body["generationConfig"]["maxOutputTokens"] if kind == "gemini" else body["max_tokens"]
    assert sent == output_token_cap()
    with FAKES[kind]([("json", GOOD)]) as fake:
        distil(kind, fake, tmp_path, llm_max_output_tokens=300)
        body = fake.requests[0].body
    assert (body["generationConfig"]["maxOutputTokens"] if kind == "gemini" else body["max_tokens"]) == 300


@pytest.mark.parametrize("kind", ["gemini", "openai"])
def test_ref_blind_server_gets_a_schema_it_can_follow(kind, tmp_path):
    """A server that does not resolve $ref answers an empty item, as the Gemini fake did."""
    def answer(rec):
        return ("json", {"memories": [{}]}) if "$ref" in json.dumps(rec.body) else ("json", GOOD)

    with FAKES[kind]([], default=answer) as fake:
        result = distil(kind, fake, tmp_path)
    assert len(result.memories) == 1 and len(fake.requests) == 1


# --- bounded answers ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["gemini", "openai"])
def test_never_ending_answer_is_cut_at_the_wall_clock(kind, tmp_path):
    with FAKES[kind]([("trickle", 0.05)] * 3) as fake:
        s = settings_for(kind, fake, tmp_path, llm_timeout=1.0, retry_attempts=1)
        provider = get_provider(s)
        started = time.monotonic()
        try:
            with pytest.raises(TransientError) as err:
                provider.complete(LLMRequest(system="s", user="u", schema=response_schema()))
        finally:
            provider.close()
    assert time.monotonic() - started < 4.0  # bytes kept arriving every 50 ms for 5,000 s
    assert "did not answer within 1s" in str(err.value)


@pytest.mark.parametrize("kind", ["gemini", "openai"])
def test_cut_off_array_keeps_its_complete_items(kind, tmp_path):
    second = {**PEP668_PITFALL, "text": "Rule: install lancedb with uv pip install inside the uv venv on Debian 12."}
    whole = json.dumps({"memories": [PEP668_PITFALL, second, PEP668_PITFALL]})
    cut = whole[: whole.rindex('"text"') + 20]  # torn inside the third item's text
    with FAKES[kind]([("finish", "MAX_TOKENS" if kind == "gemini" else "length", cut)]) as fake:
        result = distil(kind, fake, tmp_path)
    assert len(fake.requests) == 1 and result.counters["answers_salvaged"] == 1
    assert sorted(m.text.split("\n")[0] for m in result.memories) == sorted([PEP668_PITFALL["text"], second["text"]])


def test_salvage_never_returns_a_torn_item():
    assert salvage_items('{"memories": [{"a": "x}]\\"", "b": [1, {"c": 2}]}, {"a": "tor') == [
        {"a": 'x}]"', "b": [1, {"c": 2}]}]
    assert salvage_items('{"memories": [') == [] and salvage_items("no json") == []


# --- fallback once --------------------------------------------------------------------------

def test_json_schema_refused_costs_one_request_per_provider_not_per_thread(tmp_path):
    turns = [("user", f"step {i}: pip install lancedb fails with externally-managed-environment, try uv venv")
             for i in range(8)]
    with FakeOpenAI([], default=("sleep", 0.3, ("json", GOOD)), json_schema=False) as fake:
        result = distil("openai", fake, tmp_path, turns=turns, chunk_tokens=60, chunk_overlap_turns=0,
                        llm_concurrency=4)
        kinds = [response_format_type(r) for r in fake.requests]
    assert result.counters["chunks"] >= 4
    assert kinds.count("json_schema") == 1 and kinds.count("json_object") == result.calls
    assert "JSON Schema" in json.dumps(fake.requests[-1].body)  # the schema moved into the prompt
