"""A fake Gemini API (``POST /v1beta/models/<model>:generateContent`` and
``:batchEmbedContents``) for google-genai.

Point the real client at it: ``HttpOptions(base_url=fake.base_url)``. Answers use the
REST shapes of the real API (camelCase; ``candidates[].content.parts[].text``,
``finishReason``, ``usageMetadata``, ``promptFeedback``; errors as
``{"error": {"code", "message", "status"}}``).

Behaviours (besides ``sleep``/``drop``/``body`` from :mod:`tests.fakes.scripted_server`):

- ``("json", payload[, usage])``: the model answers ``json.dumps(payload)`` (payload may
  be a pydantic model), finishReason STOP.
- ``("raw", text[, usage])``: the model answers ``text`` verbatim (malformed JSON tests).
- ``("status", code[, headers[, message]])``: an error with Google's error body.
- ``("retry_info", seconds)``: 429 RESOURCE_EXHAUSTED whose body carries a
  ``google.rpc.RetryInfo`` ``retryDelay`` (how the real API says when to come back).
- ``("blocked"[, reason])``: the prompt is blocked (``promptFeedback.blockReason``, no candidates).
- ``("finish", reason[, text])``: one candidate ending with that finishReason
  (``"SAFETY"``, ``"MAX_TOKENS"``, ``"RECITATION"``, …).
- ``("empty",)``: one candidate, finishReason STOP, no parts.
- ``("response", envelope)``: this exact JSON envelope.
- ``("embeddings"[, dim])``: a batchEmbedContents answer, one ``dim``-d vector (default 8) per request.

``usage`` overrides the counts: ``{"prompt": 12, "output": 5, "thoughts": 3}``. Without it
the fake counts about one token per four characters, so usage is never zero.

``api_key="k"`` makes the fake check ``x-goog-api-key`` (or ``?key=``) and answer a wrong
one the way Google does: 400 INVALID_ARGUMENT "API key not valid".
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from .openai_server import vector
from .scripted_server import Behaviour, Recorded, Reply, ScriptedServer

_PATH = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^/:]+):(generateContent|batchEmbedContents)$")

GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

DEFAULT_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: "Request had invalid authentication credentials.",
    403: "Method doesn't allow unregistered callers (callers without established identity).",
    404: "models/unknown is not found for API version v1beta.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report.",
    503: "The model is overloaded. Please try again later.",
}


def google_error(code: int, message: str | None = None, details: list | None = None) -> dict:
    err: dict[str, Any] = {
        "code": code,
        "message": message or DEFAULT_MESSAGES.get(code, "error"),
        "status": GOOGLE_STATUS.get(code, "UNKNOWN"),
    }
    if details:
        err["details"] = details
    return {"error": err}


class FakeGemini(ScriptedServer):
    def __init__(
        self,
        behaviours: Iterable[Behaviour] = (),
        default: Behaviour | None = None,
        api_key: str | None = None,
    ):
        super().__init__(behaviours, default)
        self.api_key = api_key

    def default_behaviour(self) -> Behaviour:
        return ("json", {})

    @property
    def base_url(self) -> str:
        """What to give google-genai (it appends ``/v1beta/models/…``)."""
        return self.origin

    def generate_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith(":generateContent") and _PATH.match(r.path)]

    def _next(self, rec: Recorded) -> tuple:
        if not _PATH.match(rec.path) or rec.method != "POST":
            with self._lock:
                self.requests.append(rec)
            return ("status", 404, {}, f"Method not found: {rec.method} {rec.path}")
        if self.api_key is not None and _sent_key(rec) != self.api_key:
            with self._lock:
                self.requests.append(rec)
            return ("bad_key",)
        return super()._next(rec)

    def render(self, rec: Recorded, behaviour: tuple) -> Reply:
        kind, args = behaviour[0], behaviour[1:]
        model = _model(rec)
        if kind == "json":
            return self._text(rec, model, _dump(args[0]), args[1] if len(args) > 1 else None)
        if kind == "raw":
            return self._text(rec, model, args[0], args[1] if len(args) > 1 else None)
        if kind == "status":
            code = args[0]
            headers = args[1] if len(args) > 1 else {}
            message = args[2] if len(args) > 2 else None
            return self.json_reply(code, google_error(code, message), headers)
        if kind == "retry_info":
            details = [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{args[0]}s"},
            ]
            return self.json_reply(429, google_error(429, None, details))
        if kind == "bad_key":
            details = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                }
            ]
            return self.json_reply(400, google_error(400, "API key not valid. Please pass a valid API key.", details))
        if kind == "blocked":
            reason = args[0] if args else "SAFETY"
            prompt = _prompt_tokens(rec)
            return self.json_reply(
                200,
                {
                    "promptFeedback": {"blockReason": reason},
                    "usageMetadata": {"promptTokenCount": prompt, "totalTokenCount": prompt},
                    "modelVersion": model,
                },
            )
        if kind == "finish":
            reason = args[0]
            text = args[1] if len(args) > 1 else None
            candidate: dict[str, Any] = {"finishReason": reason, "index": 0}
            if text:
                candidate["content"] = {"role": "model", "parts": [{"text": text}]}
            return self.json_reply(200, _envelope(rec, model, [candidate], text or ""))
        if kind == "empty":
            candidate = {"content": {"role": "model"}, "finishReason": "STOP", "index": 0}
            return self.json_reply(200, _envelope(rec, model, [candidate], ""))
        if kind == "response":
            return self.json_reply(200, args[0])
        if kind == "embeddings":
            texts = [" ".join(p.get("text", "") for p in r["content"]["parts"]) for r in (rec.body or {}).get("requests", [])]
            return self.json_reply(200, {"embeddings": [{"values": vector(t, *args)} for t in texts]})
        raise ValueError(f"FakeGemini: unknown behaviour {behaviour!r}")

    def _text(self, rec: Recorded, model: str, text: str, usage: dict | None) -> Reply:
        candidate = {
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "index": 0,
        }
        return self.json_reply(200, _envelope(rec, model, [candidate], text, usage))


def _envelope(rec: Recorded, model: str, candidates: list, text: str, usage: dict | None = None) -> dict:
    usage = usage or {}
    prompt = usage.get("prompt", _prompt_tokens(rec))
    output = usage.get("output", max(1, len(text) // 4) if text else 0)
    thoughts = usage.get("thoughts", 0)
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output + thoughts}
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    return {"candidates": candidates, "usageMetadata": meta, "modelVersion": model, "responseId": "fake-1"}


def _dump(payload: Any) -> str:
    if hasattr(payload, "model_dump_json"):
        return payload.model_dump_json()
    return json.dumps(payload, ensure_ascii=False)


def _model(rec: Recorded) -> str:
    m = _PATH.match(rec.path)
    return m.group(2) if m else "unknown"


def _sent_key(rec: Recorded) -> str | None:
    if "x-goog-api-key" in rec.headers:
        return rec.headers["x-goog-api-key"]
    for part in rec.query.split("&"):
        if part.startswith("key="):
            return part[4:]
    return None


def _prompt_tokens(rec: Recorded) -> int:
    return max(1, len(rec.raw) // 4)


def sent_text(rec: Recorded) -> tuple[str, str]:
    """(system instruction, user text) of a recorded generateContent request."""
    body = rec.body or {}
    system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
    user = " ".join(
        p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []) if isinstance(p, dict)
    )
    return system, user
