"""Which configured root holds a path: the one ownership rule, for discovery and the hook.

Its own module, importing only ``os``: ``distill enqueue`` (an agent hook's fast path) checks
a task's path with it, and :mod:`distill.tails.discover` (pathlib, fnmatch, the formats' names)
would cost the hook more to import than the check itself.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the hook's fast path (`distill enqueue`) imports this module: no typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence


def holders(path: str, agents_dir: str, sources: Sequence[tuple[str, str]],
            norm: Callable[[str], str]) -> Iterator[tuple[str, int, list[str]]]:
    """Every root that holds ``path``, in order: ``(agent id, index in sources or -1 for
    agents_dir, path parts below the root)``. ``path`` is already normalised by ``norm``
    (``os.path.abspath``, or ``os.path.realpath`` to see through symlinks), the roots are
    normalised with it here. Under ``agents_dir`` only ``<agentId>/sessions/<file>`` counts."""
    rel = _below(norm(agents_dir), path)
    if rel is not None and len(rel) == 3 and rel[1] == "sessions":
        yield rel[0], -1, rel
    for i, (root, agent) in enumerate(sources):
        rel = _below(norm(root), path)
        if rel is not None:
            yield agent, i, rel


def _below(root: str, path: str) -> list[str] | None:
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix):].split(os.sep) if path.startswith(prefix) else None
