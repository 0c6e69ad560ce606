"""Turn an HTTP failure from a model endpoint into the error our retry policy understands.

The one mapping for chat and embeddings, for both HTTP stacks (httpx, and google-genai's own
httpx2 fork with its ``APIError``): a 429 from Gemini and a 429 from Ollama read the same to
the user and to :mod:`distill.retry`: retryable statuses become :class:`TransientError`
(carrying Retry-After), the rest :class:`PermanentError` naming the setting to fix -- or,
when the server refused this one request for what it holds (longer than the model's context,
a 413, a content-policy refusal), :class:`RequestRejected`, which the distiller turns into a
set-aside chunk while the other requests go on.

Every call site uses two entry points: ``with mapped(endpoint, timeout):`` around the call
(transport errors and timeouts of httpx and httpx2, google-genai's ``APIError``, a body that
is not JSON) and :func:`response_error` for an error response read with httpx.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from ..errors import DistillError, PermanentError, RequestRejected, TransientError
from ..retry import RETRYABLE_STATUS, parse_retry_after

log = logging.getLogger("distill.providers")


@dataclass(frozen=True)
class Endpoint:
    """What a message needs to say where the call went and which settings steer it."""

    label: str  # "Gemini (gemini-2.5-flash)"
    url: str
    key_hint: str  # "set a valid key in GEMINI_API_KEY, GOOGLE_API_KEY or DISTILL_LLM_API_KEY"
    settings_hint: str  # for 404 and other refusals: "check DISTILL_LLM_MODEL and DISTILL_LLM_BASE_URL"
    timeout_hint: str = "raise DISTILL_LLM_TIMEOUT if the model is slow"
    url_setting: str = "DISTILL_LLM_BASE_URL"
    # for a request too long for the model: the setting that makes the next requests shorter
    size_hint: str = ("lower DISTILL_CHUNK_TOKENS (chunk_tokens) so later calls fit the model's context, "
                      "or serve the model with a longer context")


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def looks_like_key_problem(status: int, message: str) -> bool:
    """Google answers a bad key with 400 "API key not valid", others with 401/403."""
    text = message.lower()
    return status in (401, 403) or (status == 400 and ("api key" in text or "api_key" in text))


# What servers say when one request is too long for the model (OpenAI, vLLM, llama.cpp, Ollama,
# Gemini's "input token count … exceeds the maximum number of tokens"), or when they refuse what
# it holds (OpenAI's and Azure's content filters). Matched against the message and the error's
# code/type, lower-cased.
_TOO_LONG = ("context_length_exceeded", "maximum context length", "context length", "context window",
             "context size", "exceed_context_size", "too many tokens", "prompt is too long",
             "input is too long", "request too large", "payload too large", "input token count",
             "exceeds the maximum number of tokens", "string_above_max_length")
_POLICY = ("content_policy", "content policy", "content management policy", "content_filter",
           "safety system", "responsible_ai_policy", "invalid_prompt", "flagged as potentially")


def request_problem(status: int, text: str) -> str | None:
    """``"too long"`` or ``"content"`` when a refusal is about this request's contents, not about
    a setting every request shares (those stay :class:`PermanentError` and stop the run)."""
    if status == 413:
        return "too long"
    if status not in (400, 422):
        return None
    text = text.lower()
    if any(w in text for w in _TOO_LONG):
        return "too long"
    if any(w in text for w in _POLICY):
        return "content"
    return None


def status_error(ep: Endpoint, status: int, message: str, retry_after: float | None = None,
                 code: str = "") -> DistillError:
    """``code``: the error's own code or type from the body (``context_length_exceeded``)."""
    message = _short(message) or "(no message)"
    if is_retryable(status):
        return TransientError(f"{ep.label} at {ep.url} answered {status}: {message}", retry_after)
    if looks_like_key_problem(status, message):
        return PermanentError(f"{ep.label}: API key rejected ({status}: {message}): {ep.key_hint}")
    problem = request_problem(status, f"{message} {code}")
    if problem == "too long":
        return RequestRejected(f"{ep.label} at {ep.url} refused the request as too long for the model "
                               f"({status}: {message}): {ep.size_hint}")
    if problem == "content":
        return RequestRejected(f"{ep.label} at {ep.url} refused the request's content ({status}: {message}); "
                               "sending the same text again will not help")
    if status == 404:
        return PermanentError(f"{ep.label} at {ep.url}: not found (404: {message}): {ep.settings_hint}")
    return PermanentError(
        f"{ep.label} at {ep.url} rejected the request ({status}: {message}); "
        f"retrying will not help: {ep.settings_hint}"
    )


def genai_error(ep: Endpoint, exc: BaseException) -> DistillError:
    """google-genai's ``APIError`` (chat or embeddings), through the same mapping."""
    message = getattr(exc, "message", None) or str(exc)
    if getattr(exc, "status", None):
        message = f"{exc.status}: {message}"
    return status_error(ep, int(getattr(exc, "code", 0) or 0), message, genai_retry_after(exc))


_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def genai_retry_after(exc: BaseException) -> float | None:
    """Retry-After, or the RetryInfo delay Google puts in the error body."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        seconds = parse_retry_after(headers.get("retry-after"))
        if seconds is not None:
            return seconds
    raw = getattr(exc, "details", None)
    details = raw.get("error", raw) if isinstance(raw, dict) else {}
    for item in details.get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DELAY.match(str(item.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


@contextmanager
def mapped(ep: Endpoint, timeout: float) -> Iterator[None]:
    """Every way a call can fail outside an HTTP status, from either stack, as our error."""
    timeouts, transport = transport_errors()
    try:
        yield
    except DistillError:
        raise
    except timeouts as exc:
        raise timeout_error(ep, timeout) from exc
    except transport as exc:
        raise connection_error(ep, exc) from exc
    except json.JSONDecodeError as exc:  # google-genai parses the body itself
        raise not_json_error(ep, exc.doc) from exc
    except Exception as exc:
        errors = sys.modules.get("google.genai.errors")  # loaded if the call went through google-genai
        if errors is not None and isinstance(exc, errors.APIError):
            raise genai_error(ep, exc) from exc
        raise


def response_error(ep: Endpoint, response) -> DistillError:
    """An error response read with httpx: its status, the server's own words, when to come back."""
    return status_error(ep, response.status_code, error_message(response), response_retry_after(response),
                        error_code(response))


def response_retry_after(response) -> float | None:
    """OpenAI's ``retry-after-ms``, else Retry-After (seconds or an HTTP date)."""
    ms = response.headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(response.headers.get("retry-after"))


@functools.cache
def transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other transport errors) of whichever httpx flavours are installed: google-genai
    3.x sends through ``httpx2`` when it is there, so catching ``httpx`` alone misses them."""
    timeouts: list[type[BaseException]] = []
    transport: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        try:
            mod = __import__(name)
        except ImportError:
            continue
        timeouts.append(mod.TimeoutException)
        transport.append(mod.TransportError)
    return tuple(timeouts), tuple(transport)


def error_code(response) -> str:
    """The error's ``code`` and ``type`` from an OpenAI-shaped body (``context_length_exceeded``,
    llama.cpp's ``exceed_context_size_error``), or ""."""
    try:
        data = response.json()
    except ValueError:
        return ""
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return ""
    return " ".join(str(err[k]) for k in ("code", "type") if err.get(k) is not None)


def error_message(response) -> str:
    """The server's own words from an HTTP error response (OpenAI, Ollama, FastAPI shapes)."""
    try:
        data = response.json()
    except ValueError:
        return response.text or response.reason_phrase
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err  # Ollama: {"error": "model 'x' not found"}
    if isinstance(data, dict) and data.get("detail"):
        return str(data["detail"])  # FastAPI-based servers
    return response.text


def log_retry(exc: TransientError, wait: float) -> None:
    """A long Retry-After should not look like a hang: say what is being waited for."""
    log.warning("%s; retrying in %.1fs", exc, wait)


def timeout_error(ep: Endpoint, seconds: float) -> TransientError:
    return TransientError(
        f"{ep.label} at {ep.url} did not answer within {seconds:g}s "
        f"({ep.timeout_hint})"
    )


def connection_error(ep: Endpoint, exc: BaseException) -> TransientError:
    return TransientError(
        f"{ep.label}: cannot reach {ep.url} ({type(exc).__name__}: {exc}); "
        f"is the server up and {ep.url_setting} right?"
    )


def not_json_error(ep: Endpoint, body: str) -> PermanentError:
    return PermanentError(
        f"{ep.label} at {ep.url} answered with a body that is not JSON (starts {_short(body, 80)!r}): "
        f"check that {ep.url_setting} points at the API itself"
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
