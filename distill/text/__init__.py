"""What happens to a turn's text: runtime envelopes (``envelopes``), injected blocks, noise and
clipping (``noise``), and secret redaction (``redact``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Any

_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "split")


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use.

    The text rules and the formats' bytes pre-tests hold about a hundred patterns, and most
    run only on a text that holds their literal anchor. Compiling them all at import cost
    30–50 ms of every ``distill run`` that reads a file. The first call compiles and puts the
    compiled pattern's own methods on the instance, so later calls cost what a compiled
    pattern's do (a ``__getattr__`` hook instead measured ~100 ns more a call)."""

    # set below (the first call) and on the instance (every later one): declared for type checkers
    match: Callable[..., Any]
    fullmatch: Callable[..., Any]
    search: Callable[..., Any]
    finditer: Callable[..., Any]
    findall: Callable[..., Any]
    sub: Callable[..., Any]
    split: Callable[..., Any]

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self.pattern: Any = pattern  # str or bytes, as re.Pattern.pattern (Any: either concatenates)
        self._flags = flags

    def _compile(self) -> re.Pattern:
        compiled = re.compile(self.pattern, self._flags)
        for name in _METHODS:
            setattr(self, name, getattr(compiled, name))
        return compiled


def _first_call(name: str):
    def method(self: LazyPattern, *args, **kwargs):
        return getattr(self._compile(), name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in _METHODS:
    setattr(LazyPattern, _name, _first_call(_name))
