"""What each error makes a command exit with; the CLI, ``distill enqueue``'s fast path and
``distill-worker`` all ask here. Stdlib only (the hook's fast path imports it)."""

from __future__ import annotations

from ..errors import ConfigError, InvalidTask, LockBusy

EXIT_CODES: dict[type[BaseException], int] = {
    ConfigError: 2,
    InvalidTask: 65,  # EX_DATAERR
    LockBusy: 75,  # EX_TEMPFAIL: cron may simply try again later
}


def exit_code_of(exc: BaseException) -> int:
    """The code of the nearest class in ``exc``'s ancestry that has one; 1 otherwise."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1
