"""Gemini through google-genai, with our retries in charge.

The SDK retries on its own when ``HttpOptions.retry_options`` is set and takes its timeout
from ``HttpOptions.timeout`` in **milliseconds** (a custom HTTP client's timeout is not
used), so we set ``attempts=1`` and the timeout there, and let :mod:`distill.retry` decide
when to try again. Its failures come from its own stack: ``google.genai.errors.APIError``
(``.code``, ``.message``, ``.response`` with the headers, so Retry-After can be read) and
the transport's exceptions -- which are ``httpx2``'s, not ``httpx``'s, in google-genai 3.x
(it prefers the httpx2 fork when installed), so both families are caught. Google says when
to come back either with a Retry-After header or with a ``google.rpc.RetryInfo`` detail
(``"retryDelay": "37s"``) in the error body; both are honoured.

The SDK's timeout bounds each socket operation, not the call, so a server that keeps
streaming bytes would hold it forever: each attempt runs on a worker thread and is given up
``llm_timeout`` seconds after it started. ``maxOutputTokens`` caps the answer.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from google import genai
from google.genai import types

from ..config import Settings
from ..errors import ConfigError
from ..retry import RetryPolicy
from .base import Finish, LLMRequest, LLMResponse, Usage
from .failures import Endpoint, log_retry, mapped, timeout_error

DEFAULT_MODEL = "gemini-3.1-flash-lite"  # stable, cheapest text model of the current generation
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
KEY_VARIABLES = ("DISTILL_LLM_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

_BLOCK_FINISH = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE", "IMAGE_SAFETY"}
)


def resolve_api_key(settings: Settings) -> str:
    key = settings.llm_api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise ConfigError(
            "DISTILL_LLM=gemini needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, or "
            "DISTILL_LLM_API_KEY / llm_api_key in config.toml); get one at https://aistudio.google.com/apikey"
        )
    return key


class GeminiProvider:
    name = "gemini"

    def __init__(self, settings: Settings, policy: RetryPolicy | None = None):
        self.model = settings.llm_model or DEFAULT_MODEL
        self.timeout = settings.llm_timeout
        self._policy = policy or settings.retry_policy()
        base_url = settings.llm_base_url or DEFAULT_BASE_URL
        self._endpoint = Endpoint(
            label=f"Gemini ({self.model})",
            url=base_url,
            key_hint="set a valid key in GEMINI_API_KEY, GOOGLE_API_KEY or DISTILL_LLM_API_KEY",
            settings_hint="check DISTILL_LLM_MODEL (e.g. gemini-3.1-flash-lite) and DISTILL_LLM_BASE_URL",
        )
        self._client = genai.Client(
            api_key=resolve_api_key(settings),
            vertexai=False,  # ignore GOOGLE_GENAI_USE_VERTEXAI: this provider speaks the Gemini API
            http_options=types.HttpOptions(
                base_url=base_url,
                timeout=max(1, int(self.timeout * 1000)),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )
        self._calls = ThreadPoolExecutor(max_workers=max(2, settings.llm_concurrency * 2),
                                         thread_name_prefix="distill-gemini")

    def complete(self, req: LLMRequest) -> LLMResponse:
        config = types.GenerateContentConfig(
            system_instruction=req.system,
            temperature=req.temperature,
            response_mime_type="application/json",
            response_json_schema=gemini_json_schema(req.json_schema()),
            max_output_tokens=req.max_output_tokens,
        )
        return self._policy.call(lambda: self._once(req.user, config), on_retry=log_retry)

    def close(self) -> None:
        self._calls.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def _once(self, user: str, config: types.GenerateContentConfig) -> LLMResponse:
        call = self._calls.submit(self._client.models.generate_content, model=self.model, contents=user, config=config)
        try:
            with mapped(self._endpoint, self.timeout):
                response = call.result(timeout=self.timeout)
        except FutureTimeout as exc:  # the thread finishes (or fails) on its own; its answer is dropped
            call.cancel()
            raise timeout_error(self._endpoint, self.timeout) from exc
        return self._to_response(response)

    def _to_response(self, response: types.GenerateContentResponse) -> LLMResponse:
        usage = _usage(response.usage_metadata)
        model = self.model  # usage is booked under the configured name, not the served version
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            detail = f"prompt blocked: {_enum(feedback.block_reason)}"
            if feedback.block_reason_message:
                detail += f" ({feedback.block_reason_message})"
            return LLMResponse(text="", usage=usage, finish="blocked", model=model, detail=detail)
        if not response.candidates:
            return LLMResponse(text="", usage=usage, finish="empty", model=model, detail="no candidates")
        candidate = response.candidates[0]
        text = _candidate_text(candidate)
        reason = _enum(candidate.finish_reason) if candidate.finish_reason else "STOP"
        finish, detail = _finish(reason, text)
        if candidate.finish_message and detail:
            detail += f" ({candidate.finish_message})"
        return LLMResponse(text=text, usage=usage, finish=finish, model=model, detail=detail)


_SCHEMA_KEYWORDS = frozenset(
    {
        "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items",
        "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties",
        "additionalProperties", "required", "propertyOrdering",
    }
)  # fmt: skip


def gemini_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema cut down to what Gemini's ``responseJsonSchema`` documents (no ``maxLength``:
    the distiller checks lengths itself; ``maxItems`` stays and bounds the arrays).

    The SDK's own pydantic conversion (``response_schema=Model``) refuses
    ``additionalProperties`` (``extra="forbid"``) on the Gemini API, so we send JSON Schema."""
    return _prune(schema)


def _prune(node: Any) -> Any:
    if isinstance(node, list):
        return [_prune(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "const":
            out["enum"] = [value]
        elif key in ("properties", "$defs"):
            out[key] = {name: _prune(sub) for name, sub in value.items()}
        elif key in _SCHEMA_KEYWORDS:
            out[key] = _prune(value)
    if "properties" in out and "propertyOrdering" not in out:
        out["propertyOrdering"] = list(out["properties"])
    return out


def _finish(reason: str, text: str) -> tuple[Finish, str | None]:
    if reason in _BLOCK_FINISH or reason.startswith("IMAGE_"):
        return "blocked", f"finish reason {reason}"
    if reason == "MAX_TOKENS":
        return "length", "finish reason MAX_TOKENS"
    if not text.strip():
        return "empty", f"finish reason {reason}, no text"
    if reason == "STOP":
        return "stop", None
    return "stop", f"finish reason {reason}"  # text kept: the distiller's validation judges it


def _candidate_text(candidate: types.Candidate) -> str:
    if candidate.content is None or not candidate.content.parts:
        return ""
    return "".join(p.text for p in candidate.content.parts if p.text and not p.thought)


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage()
    prompt = meta.prompt_token_count or 0
    output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return Usage(prompt_tokens=prompt, output_tokens=output, total_tokens=meta.total_token_count or prompt + output)


def _enum(value: Any) -> str:
    return str(getattr(value, "value", value))


