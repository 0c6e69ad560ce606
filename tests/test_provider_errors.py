"""One HTTP-error mapping (distill/providers/failures.py) for chat and for embeddings, on every
HTTP stack a call can take: the real httpx client (OpenAI-compatible chat and embeddings) and
the real google-genai client on httpx2 (its default when installed) and on httpx
(``GOOGLE_GENAI_HTTP_CLIENT=httpx``), each against the local fakes.

What a user sees: a 429 is retried, then reported as a TransientError saying who answered what
and carrying the server's Retry-After; a 401 fails at once (one request) as a PermanentError
naming the key setting to fix; a refused connection is a TransientError naming the URL setting.
"""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from distill.config import load_settings
from distill.distiller.schema import response_schema
from distill.errors import PermanentError, RequestRejected, TransientError
from distill.providers import LLMRequest, get_provider
from distill.store.embedders import make_embedder
from tests.fakes import FakeGemini, FakeOpenAI

STACKS = [("openai", "httpx"), ("gemini", "httpx2"), ("gemini", "httpx")]  # (provider, HTTP library)
KEY_SETTING = {("openai", "chat"): "DISTILL_LLM_API_KEY", ("gemini", "chat"): "GEMINI_API_KEY",
               ("openai", "embeddings"): "DISTILL_EMBED_API_KEY", ("gemini", "embeddings"): "DISTILL_EMBED_API_KEY"}
URL_SETTING = {"chat": "DISTILL_LLM_BASE_URL", "embeddings": "DISTILL_EMBED_BASE_URL"}
OK = {"chat": ("json", {"memories": []}), "embeddings": ("embeddings",)}
TIMEOUT = 2.0  # seconds a call may take here (llm_timeout; EMBED_TIMEOUT for embeddings)


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "DISTILL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=[(p, lib, use) for p, lib in STACKS for use in ("chat", "embeddings")],
                ids=lambda v: "-".join(v))
def call(request, monkeypatch, tmp_path):
    """``call(base_url, attempts)``: one chat completion or one embedding through the real client."""
    provider, library, use = request.param
    if provider == "gemini":
        monkeypatch.setenv("GOOGLE_GENAI_HTTP_CLIENT", library)
    monkeypatch.setattr("distill.store.embedders.EMBED_TIMEOUT", TIMEOUT)

    def once(base_url: str, attempts: int = 2):
        common = dict(state_dir=tmp_path, retry_attempts=attempts, retry_max_wait=0.05, retry_max_total=10)
        if use == "chat":
            p = get_provider(load_settings(llm=provider, llm_base_url=base_url, llm_model="m", llm_api_key="k",
                                           llm_timeout=TIMEOUT, **common))
            try:
                return p.complete(LLMRequest(system="s", user="u", schema=response_schema()))
            finally:
                p.close()
        emb = make_embedder(load_settings(embedder=provider, embed_base_url=base_url, embed_model="m",
                                          embed_api_key="k", **common))
        return emb.passages(["部署 deploy"])

    once.provider, once.library, once.use = provider, library, use
    return once


def fake_for(call, behaviours):
    return (FakeGemini if call.provider == "gemini" else FakeOpenAI)(behaviours)


def test_429_is_retried_then_answers(call):
    with fake_for(call, [("status", 429, {"Retry-After": "0"}), OK[call.use]]) as fake:
        out = call(fake.base_url)
    assert len(fake.requests) == 2
    if call.use == "chat":
        assert out.text == '{"memories": []}' and out.finish == "stop"
    else:
        assert out.shape == (1, 8) and np.isclose(np.linalg.norm(out[0]), 1.0)


def test_429_to_the_end_is_a_transient_error_with_retry_after(call):
    with fake_for(call, [("status", 429, {"Retry-After": "7"})] * 3) as fake:
        with pytest.raises(TransientError) as err:
            call(fake.base_url, attempts=1)
    message = str(err.value)
    assert f"at {fake.origin}" in message and "answered 429" in message
    assert ("Resource has been exhausted" if call.provider == "gemini" else "Rate limit reached") in message
    assert err.value.retry_after == 7.0 and len(fake.requests) == 1


def test_401_fails_at_once_naming_the_key_setting(call):
    with fake_for(call, [("status", 401)] * 3) as fake:
        with pytest.raises(PermanentError) as err:
            call(fake.base_url)
    message = str(err.value)
    assert "API key rejected (401: " in message and KEY_SETTING[call.provider, call.use] in message
    assert len(fake.requests) == 1


CONTEXT_LENGTH = json.dumps({"error": {  # what vLLM and OpenAI answer a prompt longer than the model's context
    "message": "This model's maximum context length is 2048 tokens. However, you requested 5210 tokens "
               "(3146 in the messages, 2064 in the completion). Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
TOO_LONG = {  # per provider: the server's own answer to a request too long for the model
    "openai": ("body", 400, CONTEXT_LENGTH, "application/json"),
    "gemini": ("status", 400, {}, "The input token count (5210) exceeds the maximum number of tokens allowed (2048)."),
}
REFUSALS = {
    "too long": TOO_LONG,
    "413": {"openai": ("status", 413, {}, "Request too large"), "gemini": ("status", 413, {}, "Request too large")},
    "content": {"openai": ("body", 400, json.dumps({"error": {
        "message": "Your request was rejected as a result of our safety system.", "type": "invalid_request_error",
        "param": None, "code": "content_policy_violation"}}), "application/json"),
        "gemini": ("status", 400, {}, "The prompt was rejected: content_policy")},
}


@pytest.mark.parametrize("why", sorted(REFUSALS))
def test_a_refusal_of_this_one_request_is_request_rejected_after_one_request(call, why):
    """Too long for the model's context, a 413, a content-policy refusal: about this request, so
    RequestRejected (the distiller sets the chunk aside), not the 'check DISTILL_LLM_MODEL and
    DISTILL_LLM_BASE_URL' of a setting every request shares; a chat call that was too long
    names the setting that shortens the next ones."""
    with fake_for(call, [REFUSALS[why][call.provider]] * 3) as fake:
        with pytest.raises(RequestRejected) as err:
            call(fake.base_url)
    message = str(err.value)
    assert len(fake.requests) == 1 and "retrying will not help" not in message
    if why != "content":
        setting = "DISTILL_CHUNK_TOKENS" if call.use == "chat" else "DISTILL_EMBED_MODEL"
        assert "too long" in message and setting in message


def test_any_other_400_still_stops_as_a_permanent_error(call):
    with fake_for(call, [("status", 400, {}, "Invalid value for 'temperature'")] * 3) as fake:
        with pytest.raises(PermanentError) as err:
            call(fake.base_url)
    assert not isinstance(err.value, RequestRejected) and len(fake.requests) == 1


def test_refused_connection_is_transient_naming_the_url_setting(call):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransientError) as err:
        call(f"http://127.0.0.1:{port}", attempts=2)
    assert "cannot reach" in str(err.value) and URL_SETTING[call.use] in str(err.value)
    assert type(err.value.__cause__).__module__.split(".")[0] == call.library  # the stack we meant to test


def test_a_server_that_never_answers_is_given_up_on_in_time(call):
    """google-genai has no timeout unless one is set: the Gemini embedder used to wait forever."""
    with fake_for(call, [("sleep", 30)]) as fake:
        with pytest.raises(TransientError) as err:
            call(fake.base_url, attempts=1)
    assert f"did not answer within {TIMEOUT:g}s" in str(err.value) and len(fake.requests) == 1
