"""Errors a user can act on.

Every error names what failed, which file or setting, and what to do. The CLI prints
``str(err)`` and exits with ``exit_code``; nothing else needs a traceback.
"""


class DistillError(Exception):
    """Base class: a problem the user can fix. ``exit_code`` is what the CLI returns."""

    exit_code = 1


class ConfigError(DistillError):
    """A setting is missing or invalid; the message names the setting."""

    exit_code = 2


class LockBusy(DistillError):
    """Another process holds a lock this command needs."""

    exit_code = 75  # EX_TEMPFAIL: cron may simply try again later


class TransientError(DistillError):
    """A network call failed in a way that may succeed later (408/429/5xx, timeout, reset)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(DistillError):
    """A network call failed in a way retrying cannot fix (400/401/403): fix the setting named."""


class BudgetExceeded(DistillError):
    """The token budget for this run or day would be exceeded; nothing more is spent."""


class SchemaMismatch(DistillError):
    """An existing table or file does not have the shape this code needs."""
