"""Any OpenAI-compatible chat-completions endpoint over httpx (OpenAI, Ollama, vLLM,
llama.cpp's server, DeepSeek, LM Studio, …).

We ask for ``response_format: json_schema`` first. Servers without structured outputs
answer 400/404/422 naming ``response_format`` or ``json_schema``: we then send that call once
more with ``json_object`` -- the schema moves into the system prompt -- and stay in JSON mode
for the life of the provider (its retries included) instead of paying a rejected request per
attempt or per chunk. Until the first answer settles which mode the server speaks, concurrent calls
wait for it, so the fallback costs one request per provider, not one per thread.

Every answer is bounded: ``max_tokens`` (``max_completion_tokens`` on OpenAI itself) caps
it, and the body is read against a wall-clock deadline of ``llm_timeout`` seconds per
attempt, so a server that keeps sending bytes is cut off as surely as a silent one.

The API key is optional (local servers need none). It comes from ``DISTILL_LLM_API_KEY``;
``OPENAI_API_KEY`` is used only when the base URL is OpenAI's own, so an OpenAI key is never
sent to some other server by accident.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from ..config import Settings
from ..errors import ConfigError
from ..retry import RetryPolicy
from .base import Finish, LLMRequest, LLMResponse, Usage
from .failures import (Endpoint, error_code, error_message, log_retry, mapped, not_json_error, response_error,
                       status_error, timeout_error)

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_SCHEMA_WORDS = ("response_format", "json_schema")


class OpenAICompatProvider:
    name = "openai"

    def __init__(self, settings: Settings, policy: RetryPolicy | None = None):
        if not settings.llm_base_url:
            raise ConfigError(
                "DISTILL_LLM=openai needs DISTILL_LLM_BASE_URL (llm_base_url in config.toml), the URL "
                "that /chat/completions hangs off, e.g. http://localhost:11434/v1 (Ollama), "
                "http://localhost:8000/v1 (vLLM) or https://api.openai.com/v1"
            )
        if not settings.llm_model:
            raise ConfigError(
                "DISTILL_LLM=openai needs DISTILL_LLM_MODEL (llm_model in config.toml), the model name "
                "the server knows, e.g. gpt-4.1-mini or qwen3:8b"
            )
        self.model = settings.llm_model
        self.base_url = settings.llm_base_url.rstrip("/")
        self.timeout = settings.llm_timeout
        self.json_object_only = False  # set as soon as the server refuses json_schema, for every later request
        self._mode_known = False  # set by the first answer that settles the mode
        self._mode_lock = threading.Lock()
        self._openai = urlsplit(self.base_url).hostname == "api.openai.com"
        self._policy = policy or settings.retry_policy()
        self._endpoint = Endpoint(
            label=f"OpenAI-compatible endpoint ({self.model})",
            url=f"{self.base_url}/chat/completions",
            key_hint="set a valid key in DISTILL_LLM_API_KEY (llm_api_key in config.toml)",
            settings_hint=_not_found_hint(self.base_url),
        )
        headers = {"Accept": "application/json"}
        key = _api_key(settings, self.base_url)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=httpx.Timeout(self.timeout))

    def complete(self, req: LLMRequest) -> LLMResponse:
        return self._policy.call(lambda: self._once(req), on_retry=log_retry)

    def close(self) -> None:
        self._client.close()

    def _once(self, req: LLMRequest) -> LLMResponse:
        if self._mode_known:
            return self._attempt(req)
        with self._mode_lock:  # the first call decides json_schema vs json_object for everyone
            response = self._attempt(req)
            self._mode_known = True
            return response

    def _attempt(self, req: LLMRequest) -> LLMResponse:
        schema = req.json_schema()
        if not self.json_object_only:
            fmt = json_schema_format(openai_subset(schema) if self._openai else schema, _schema_name(req))
            response = self._post(self._body(req, fmt, req.system))
            if not _refuses_schema(response):
                return self._parse(response)
            # remembered at once, not after the fallback's answer: a retry of this call (a 429 on the
            # json_object request) and every later call go straight to JSON mode
            self.json_object_only = self._mode_known = True
        response = self._post(self._body(req, {"type": "json_object"}, _with_schema(req.system, schema)))
        return self._parse(response)

    def _body(self, req: LLMRequest, response_format: dict[str, Any], system: str) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": req.user}],
            "temperature": req.temperature,
            "response_format": response_format,
            "stream": False,
        }
        if req.max_output_tokens:
            body["max_completion_tokens" if self._openai else "max_tokens"] = req.max_output_tokens
        return body

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        """POST and read the whole answer, giving up ``timeout`` seconds after sending."""
        deadline = time.monotonic() + self.timeout
        with mapped(self._endpoint, self.timeout), \
                self._client.stream("POST", "/chat/completions", json=body) as response:
            data = bytearray()
            for part in response.iter_bytes():
                data += part
                if time.monotonic() > deadline:
                    raise timeout_error(self._endpoint, self.timeout)
            return httpx.Response(response.status_code, headers=response.headers, content=bytes(data),
                                  request=response.request)

    def _parse(self, response: httpx.Response) -> LLMResponse:
        if response.status_code != 200:
            raise response_error(self._endpoint, response)
        try:
            data = response.json()
        except ValueError as exc:
            raise not_json_error(self._endpoint, response.text) from exc
        if not isinstance(data, dict):
            raise not_json_error(self._endpoint, response.text)
        if "error" in data and not data.get("choices"):
            code = _as_int((data["error"] or {}).get("code") if isinstance(data["error"], dict) else None)
            raise status_error(self._endpoint, code or 502, error_message(response), code=error_code(response))
        return _to_response(data, self.model)


# What OpenAI's strict structured outputs document as supported; other keywords are refused.
_OPENAI_KEYWORDS = frozenset({
    "type", "description", "enum", "const", "properties", "required", "additionalProperties", "items",
    "anyOf", "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "pattern", "format", "title",
})


def openai_subset(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with only the keywords OpenAI's strict mode accepts (``maxLength`` goes;
    the validator enforces lengths). Other servers (llama.cpp, vLLM) get the full schema:
    their grammars honour ``maxLength``, which is what stops a small model looping in a string."""
    def prune(node: Any) -> Any:
        if isinstance(node, list):
            return [prune(n) for n in node]
        if not isinstance(node, dict):
            return node
        return {k: ({n: prune(v2) for n, v2 in v.items()} if k == "properties" else prune(v))
                for k, v in node.items() if k in _OPENAI_KEYWORDS}

    return prune(schema)


def json_schema_format(schema: dict[str, Any], name: str = "response") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict_compatible(schema)}}


def strict_compatible(schema: dict[str, Any]) -> bool:
    """OpenAI's strict mode needs every object closed and every property required."""
    for node in _walk(schema):
        if node.get("type") == "object" or "properties" in node:
            props = set((node.get("properties") or {}).keys())
            if node.get("additionalProperties") is not False or set(node.get("required") or []) != props:
                return False
    return True


def _walk(node: Any):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _schema_name(req: LLMRequest) -> str:
    name = req.response_model.__name__ if req.response_model else "memories"
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "response"


def _with_schema(system: str, schema: dict[str, Any]) -> str:
    """JSON mode knows no schema, so the prompt has to carry it (and say "JSON", which OpenAI requires)."""
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return f"{system}\n\nAnswer with one JSON object that matches this JSON Schema:\n{text}"


def _refuses_schema(response: httpx.Response) -> bool:
    """A 400/404/422 that names ``response_format`` or ``json_schema``; any other 404 (a wrong URL,
    an unknown model) is the call's answer, after one request."""
    if response.status_code not in (400, 404, 422):
        return False
    text = response.text.lower()
    return any(word in text for word in _SCHEMA_WORDS)


def _to_response(data: dict[str, Any], default_model: str) -> LLMResponse:
    usage = _usage(data.get("usage"))
    model = default_model  # usage is booked under the configured name, not what the server calls itself
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return LLMResponse(text="", usage=usage, finish="empty", model=model, detail="no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    text = _THINK.sub("", _content_text(message.get("content")))
    reason = str(choice.get("finish_reason") or "stop")
    refusal = message.get("refusal")
    if refusal:
        return LLMResponse(text="", usage=usage, finish="blocked", model=model, detail=f"refusal: {refusal}")
    finish, detail = _finish(reason, text)
    return LLMResponse(text=text, usage=usage, finish=finish, model=model, detail=detail)


def _finish(reason: str, text: str) -> tuple[Finish, str | None]:
    if reason == "content_filter":
        return "blocked", "finish_reason content_filter"
    if reason == "length":
        return "length", "finish_reason length"
    if not text.strip():
        return "empty", f"finish_reason {reason}, no content"
    return "stop", None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as some servers send
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = _as_int(raw.get("prompt_tokens")) or 0
    output = _as_int(raw.get("completion_tokens")) or 0
    total = _as_int(raw.get("total_tokens")) or prompt + output
    return Usage(prompt_tokens=prompt, output_tokens=output, total_tokens=total)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _api_key(settings: Settings, base_url: str) -> str | None:
    if settings.llm_api_key:
        return settings.llm_api_key
    if urlsplit(base_url).hostname == "api.openai.com":
        return os.environ.get("OPENAI_API_KEY") or None
    return None


def _not_found_hint(base_url: str) -> str:
    hint = "check DISTILL_LLM_MODEL and DISTILL_LLM_BASE_URL"
    if not urlsplit(base_url).path.rstrip("/").endswith("/v1"):
        hint += f" (most servers want the /v1 suffix: {base_url}/v1)"
    return hint
