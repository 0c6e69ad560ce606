"""Errors a user can act on: every class the program raises on purpose lives here.

Every error names what failed, which file or setting, and what to do. The CLI prints
``str(err)``; nothing else needs a traceback. Exit codes are the CLI's business, mapped in
:mod:`distill.cli.exitcodes` (not on the classes). The tree::

    DistillError                 a problem the user can fix
    ├── ConfigError              a setting is missing or invalid
    ├── LockBusy                 another process holds a lock this command needs
    ├── TransientError           may succeed later (408/429/5xx, timeout, reset)
    │   └── MapFailed            some chunks gave no usable answer
    ├── PermanentError           retrying cannot fix it (400/401/403)
    │   └── RequestRejected      the server refused this one request (too long, content
    │                            policy), not the key, model or URL: its chunk is set aside
    ├── BudgetExceeded           the token budget would be exceeded
    ├── SchemaMismatch           a table or file has the wrong shape
    ├── InvalidTask              a task names something it may not; never retried
    │   └── SessionGone          the task's file no longer exists
    ├── UnknownFormat            a transcript of no known format
    ├── MissingDependency        a package distill needs cannot be imported
    └── StoreFailed              the store raised something not ours

Signals caught where they are raised, never shown as they are::

    NotJSON (ValueError)         an LLM answer that does not parse (salvage, then repair)
    ToolFailure                  an MCP tool's refusal; becomes the tool's error text
"""


class DistillError(Exception):
    """Base class: a problem the user can fix."""


class ConfigError(DistillError):
    """A setting is missing or invalid; the message names the setting."""


class LockBusy(DistillError):
    """Another process holds a lock this command needs."""


class TransientError(DistillError):
    """A network call failed in a way that may succeed later (408/429/5xx, timeout, reset)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class MapFailed(TransientError):
    """Some chunks gave no usable answer; nothing from them is committed."""


class PermanentError(DistillError):
    """A network call failed in a way retrying cannot fix (400/401/403): fix the setting named."""


class RequestRejected(PermanentError):
    """The server refused this one request for what it holds -- longer than the model's
    context (400 ``context_length_exceeded``, 413), or a content-policy refusal -- rather than
    for a setting that every request shares (key, model, URL). Sending it again unchanged
    fails again, but the other requests may succeed: the distiller sets its chunk aside."""


class BudgetExceeded(DistillError):
    """The token budget for this run or day would be exceeded; nothing more is spent."""


class SchemaMismatch(DistillError):
    """An existing table or file does not have the shape this code needs."""


class InvalidTask(DistillError):
    """A task (or the enqueue call making one) names something it may not: never retried."""


class SessionGone(InvalidTask):
    """The task's file no longer exists (deleted, or renamed to an archive since it was queued)."""


class UnknownFormat(DistillError):
    """A transcript whose first line matches none of the known formats."""


class MissingDependency(DistillError):
    """A package distill needs cannot be imported: the install is incomplete. Not a bad line:
    reading stops with nothing moved, rather than skip every line that needed the package."""


class StoreFailed(DistillError):
    """The store raised something that is not one of our errors (disk, LanceDB, embedder)."""


class NotJSON(ValueError):
    """The answer does not parse (as opposed to parsing into the wrong shape)."""


class ToolFailure(Exception):
    """A refusal the caller can act on; becomes the tool's error text."""
