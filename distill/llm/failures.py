"""Turn an HTTP failure from an LLM endpoint into the error our retry policy understands.

Both providers share this so a 429 from Gemini and a 429 from Ollama read the same to the
user and to :mod:`distill.retry`: retryable statuses become :class:`TransientError`
(carrying Retry-After), the rest :class:`PermanentError` naming the setting to fix.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import DistillError, PermanentError, TransientError
from ..retry import RETRYABLE_STATUS

log = logging.getLogger("distill.llm")


@dataclass(frozen=True)
class Endpoint:
    """What a message needs to say where the call went and which settings steer it."""

    label: str  # "Gemini (gemini-2.5-flash)"
    url: str
    key_hint: str  # "set a valid key in GEMINI_API_KEY, GOOGLE_API_KEY or DISTILL_LLM_API_KEY"
    not_found_hint: str  # "check DISTILL_LLM_MODEL and DISTILL_LLM_BASE_URL"


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def looks_like_key_problem(status: int, message: str) -> bool:
    """Google answers a bad key with 400 "API key not valid", others with 401/403."""
    text = message.lower()
    return status in (401, 403) or (status == 400 and ("api key" in text or "api_key" in text))


def status_error(ep: Endpoint, status: int, message: str, retry_after: float | None = None) -> DistillError:
    message = _short(message) or "(no message)"
    if is_retryable(status):
        return TransientError(f"{ep.label} at {ep.url} answered {status}: {message}", retry_after)
    if looks_like_key_problem(status, message):
        return PermanentError(f"{ep.label}: API key rejected ({status}: {message}): {ep.key_hint}")
    if status == 404:
        return PermanentError(f"{ep.label} at {ep.url}: not found (404: {message}): {ep.not_found_hint}")
    return PermanentError(
        f"{ep.label} at {ep.url} rejected the request ({status}: {message}); "
        "retrying will not help: check DISTILL_LLM_MODEL and DISTILL_LLM_BASE_URL"
    )


def log_retry(exc: TransientError, wait: float) -> None:
    """A long Retry-After should not look like a hang: say what is being waited for."""
    log.warning("%s; retrying in %.1fs", exc, wait)


def timeout_error(ep: Endpoint, seconds: float) -> TransientError:
    return TransientError(
        f"{ep.label} at {ep.url} did not answer within {seconds:g}s "
        "(raise DISTILL_LLM_TIMEOUT if the model is slow)"
    )


def connection_error(ep: Endpoint, exc: BaseException) -> TransientError:
    return TransientError(
        f"{ep.label}: cannot reach {ep.url} ({type(exc).__name__}: {exc}); "
        "is the server up and DISTILL_LLM_BASE_URL right?"
    )


def not_json_error(ep: Endpoint, body: str) -> PermanentError:
    return PermanentError(
        f"{ep.label} at {ep.url} answered with a body that is not JSON (starts {_short(body, 80)!r}): "
        "check that DISTILL_LLM_BASE_URL points at the API itself"
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
