"""The one retry policy for every network call (LLM and embeddings).

Providers translate their own exceptions into :class:`TransientError` (retry: 408, 429,
5xx, timeouts, connection errors; carries Retry-After when the server sent one) or
:class:`PermanentError` (fail fast: 400/401/403, with the provider's message and the
setting to fix). This module then decides how long to wait and when to give up.

``max_total`` bounds the whole call, waits included: a wait is cut to the time left, and a
server's Retry-After longer than the time left stops the call at once (sleeping to the end of
the budget only to be told "wait" again would spend it for nothing).
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from .errors import TransientError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
FAIL_FAST_STATUS = frozenset({400, 401, 403, 404, 422})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    initial: float = 0.5
    max_wait: float = 30.0
    max_total: float = 120.0

    def call(self, fn: Callable[[], T], *, on_retry: Callable[[TransientError, float], None] | None = None) -> T:
        """Run ``fn`` until it succeeds, raises a non-transient error, or the budget is spent.

        The last :class:`TransientError` is re-raised as is, so callers see the provider's
        message rather than tenacity's wrapper.
        """
        backoff = wait_exponential_jitter(initial=self.initial, max=self.max_wait)

        def asked(state: RetryCallState) -> float | None:
            """The wait the server asked for (capped by ``max_wait``), if it said."""
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, TransientError) and exc.retry_after is not None:
                return min(max(exc.retry_after, 0.0), self.max_wait)
            return None

        def left(state: RetryCallState) -> float:
            return self.max_total - (state.seconds_since_start or 0.0)

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number >= self.attempts or left(state) <= 0:
                return True
            server = asked(state)
            return server is not None and server > left(state)

        def wait(state: RetryCallState) -> float:
            server = asked(state)
            delay = backoff(state) if server is None else server
            return max(0.0, min(delay, left(state)))

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            if on_retry and isinstance(exc, TransientError) and state.next_action:
                on_retry(exc, state.next_action.sleep)

        retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            stop=stop,
            wait=wait,
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(fn)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
