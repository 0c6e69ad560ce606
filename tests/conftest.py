"""Suite-wide set-up: how the tests are shared out between pytest-xdist's workers.

The suite runs in parallel (``-n auto`` in pyproject's addopts; ``-p no:xdist`` or ``-n 0`` runs
it in one process). Every test works in its own ``tmp_path`` and every server binds port 0, so
tests need no order; but a module-scoped fixture (a corpus embedded once, a store built once)
would be built again on each worker that runs one of the module's tests. Such a module's tests
are kept together on one worker (``--dist loadgroup``); the rest are dealt out one by one.
"""

from __future__ import annotations

import pytest

SHARED_SCOPES = {"module", "package", "class"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
