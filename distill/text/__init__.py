"""What happens to a turn's text: runtime envelopes (``envelopes``), injected blocks, noise and
clipping (``noise``), and secret redaction (``redact``)."""

from __future__ import annotations

import re


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use.

    The text rules and the formats' bytes pre-tests hold about a hundred patterns, and most
    run only on a text that holds their literal anchor. Compiling them all at import cost
    30–50 ms of every ``distill run`` that reads a file. The first call compiles and puts the
    compiled pattern's own methods on the instance, so later calls cost what a compiled
    pattern's do (a ``__getattr__`` hook instead measured ~100 ns more a call)."""

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self.pattern, self._flags = pattern, flags

    def _compile(self) -> re.Pattern:
        compiled = re.compile(self.pattern, self._flags)
        for name in ("match", "fullmatch", "search", "finditer", "findall", "sub", "split"):
            setattr(self, name, getattr(compiled, name))
        return compiled

    def match(self, *args, **kwargs):
        return self._compile().match(*args, **kwargs)

    def fullmatch(self, *args, **kwargs):
        return self._compile().fullmatch(*args, **kwargs)

    def search(self, *args, **kwargs):
        return self._compile().search(*args, **kwargs)

    def finditer(self, *args, **kwargs):
        return self._compile().finditer(*args, **kwargs)

    def findall(self, *args, **kwargs):
        return self._compile().findall(*args, **kwargs)

    def sub(self, *args, **kwargs):
        return self._compile().sub(*args, **kwargs)

    def split(self, *args, **kwargs):
        return self._compile().split(*args, **kwargs)
