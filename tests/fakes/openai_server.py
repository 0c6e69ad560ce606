"""A fake OpenAI-compatible server: chat completions (``POST /v1/chat/completions``) and
embeddings (``POST /v1/embeddings``).

Answers use the real shapes (``choices[].message.content``, ``finish_reason``, ``usage``;
errors as ``{"error": {"message", "type", "param", "code"}}``), so any OpenAI-compatible
client (our httpx provider included) can be pointed at ``fake.base_url`` (``…/v1``).

Behaviours (besides ``sleep``/``drop``/``body`` from :mod:`tests.fakes.scripted_server`):

- ``("json", payload[, usage])``: the model answers ``json.dumps(payload)``, finish "stop".
- ``("raw", text[, usage])``: the model answers ``text`` verbatim (malformed JSON tests).
- ``("status", code[, headers[, message]])``: an error with OpenAI's error body.
- ``("reject_json_schema",)``: 400 saying ``response_format`` json_schema is unsupported,
  as vLLM/older servers do (consumed like any behaviour).
- ``("blocked",)``: finish_reason "content_filter", no content.
- ``("refusal", text)``: content null, ``message.refusal`` set (OpenAI structured outputs).
- ``("empty",)``: finish_reason "stop", empty content.
- ``("finish", reason[, text])``: that finish_reason (e.g. ``"length"``).
- ``("response", envelope)``: this exact JSON envelope.
- ``("embeddings"[, dim])``: an embeddings answer, one ``dim``-d vector (default 8) per input.

``usage`` overrides the counts: ``{"prompt": 12, "output": 5}``; ``usage=False`` on the
server omits the ``usage`` object, as some local servers do.
``json_schema=False`` makes the server reject every ``json_schema`` request (a server
without structured outputs) before any behaviour is consumed.
``api_key="k"`` makes it answer 401 unless ``Authorization: Bearer k`` is sent.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterable

from .scripted_server import Behaviour, Recorded, Reply, ScriptedServer

PATH = "/v1/chat/completions"
EMBED_PATH = "/v1/embeddings"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "not_found_error",
    408: "timeout",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}

DEFAULT_MESSAGES = {
    400: "Invalid request.",
    401: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
    403: "You are not allowed to access this model.",
    404: "The model `unknown` does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again in 1s.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}

JSON_SCHEMA_REJECTION = (
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."
)


def openai_error(code: int, message: str | None = None, param: str | None = None) -> dict:
    return {
        "error": {
            "message": message or DEFAULT_MESSAGES.get(code, "error"),
            "type": ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error"),
            "param": param,
            "code": None,
        }
    }


class FakeOpenAI(ScriptedServer):
    def __init__(
        self,
        behaviours: Iterable[Behaviour] = (),
        default: Behaviour | None = None,
        api_key: str | None = None,
        json_schema: bool = True,
        usage: bool = True,
    ):
        super().__init__(behaviours, default)
        self.api_key = api_key
        self.json_schema = json_schema
        self.usage = usage

    def default_behaviour(self) -> Behaviour:
        return ("json", {})

    @property
    def base_url(self) -> str:
        """What to configure as DISTILL_LLM_BASE_URL."""
        return f"{self.origin}/v1"

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == PATH]

    def _next(self, rec: Recorded) -> tuple:
        early = self._refuse_early(rec)
        if early is not None:
            with self._lock:
                self.requests.append(rec)
            return early
        return super()._next(rec)

    def _refuse_early(self, rec: Recorded) -> tuple | None:
        if rec.path not in (PATH, EMBED_PATH) or rec.method != "POST":
            return ("status", 404, {}, f"Unknown request URL: {rec.method} {rec.path}")
        if self.api_key is not None and rec.headers.get("authorization") != f"Bearer {self.api_key}":
            return ("status", 401)
        if rec.path == PATH and not self.json_schema and response_format_type(rec) == "json_schema":
            return ("reject_json_schema",)
        return None

    def render(self, rec: Recorded, behaviour: tuple) -> Reply:
        kind, args = behaviour[0], behaviour[1:]
        if kind == "json":
            return self._choice(rec, _dump(args[0]), "stop", args[1] if len(args) > 1 else None)
        if kind == "raw":
            return self._choice(rec, args[0], "stop", args[1] if len(args) > 1 else None)
        if kind == "status":
            code = args[0]
            headers = args[1] if len(args) > 1 else {}
            message = args[2] if len(args) > 2 else None
            return self.json_reply(code, openai_error(code, message), headers)
        if kind == "reject_json_schema":
            return self.json_reply(400, openai_error(400, JSON_SCHEMA_REJECTION, "response_format"))
        if kind == "blocked":
            return self._choice(rec, None, "content_filter")
        if kind == "refusal":
            return self._choice(rec, None, "stop", refusal=args[0])
        if kind == "empty":
            return self._choice(rec, "", "stop")
        if kind == "finish":
            return self._choice(rec, args[1] if len(args) > 1 else "", args[0])
        if kind == "response":
            return self.json_reply(200, args[0])
        if kind == "embeddings":
            texts = (rec.body or {}).get("input") or []
            data = [{"object": "embedding", "index": i, "embedding": vector(t, *args)} for i, t in enumerate(texts)]
            return self.json_reply(200, {"object": "list", "model": (rec.body or {}).get("model"), "data": data})
        raise ValueError(f"FakeOpenAI: unknown behaviour {behaviour!r}")

    def _choice(
        self, rec: Recorded, content: str | None, finish: str, usage: dict | None = None, refusal: str | None = None
    ) -> Reply:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            message["refusal"] = refusal
        body = rec.body if isinstance(rec.body, dict) else {}
        envelope: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage:
            usage = usage or {}
            prompt = usage.get("prompt", max(1, len(rec.raw) // 4))
            output = usage.get("output", len(content or "") // 4)
            envelope["usage"] = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
        return self.json_reply(200, envelope)


def vector(text: str, dim: int = 8) -> list[float]:
    """A fixed, non-zero, not unit-length vector for a text (the embedders normalise it)."""
    return [float(len(text) % 7 + k + 1) for k in range(dim)]


def _dump(payload: Any) -> str:
    if hasattr(payload, "model_dump_json"):
        return payload.model_dump_json()
    return json.dumps(payload, ensure_ascii=False)


def response_format_type(rec: Recorded) -> str | None:
    body = rec.body if isinstance(rec.body, dict) else {}
    fmt = body.get("response_format")
    return fmt.get("type") if isinstance(fmt, dict) else None


def sent_text(rec: Recorded) -> tuple[str, str]:
    """(system, user) message contents of a recorded chat request."""
    messages = (rec.body or {}).get("messages", [])
    system = "\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
    user = "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")
    return system, user
