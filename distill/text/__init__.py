"""What happens to a turn's text: runtime envelopes (``envelopes``), injected blocks, noise and
clipping (``noise``), and secret redaction (``redact``)."""

from __future__ import annotations

import re


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use.

    The text rules and the formats' bytes pre-tests hold about a hundred patterns, and most
    run only on a text that holds their literal anchor. Compiling them all at import cost
    30–50 ms of every ``distill run`` that reads a file. After its first use a method is
    the compiled pattern's own, stored on the instance: later calls cost nothing extra."""

    _METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "subn", "split", "groupindex")

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self.pattern, self._flags = pattern, flags

    def __getattr__(self, name: str):  # only called for what the instance does not hold yet
        if name.startswith("__") or name not in self._METHODS:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for method in self._METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
