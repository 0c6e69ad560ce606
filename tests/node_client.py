"""Run LanceDB's Node client (the version memory-lancedb-pro pins, and a current one) from
the Python tests, through tests/node/plugin_client.mjs.

Node must be on PATH (it is on the build machine and in CI); without it the interop tests
skip, saying so. The npm packages are installed from tests/node/package-lock.json on first
use (`.ci/run` does it up front).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from distill.lock import FileLock

NODE_DIR = Path(__file__).parent / "node"
PINNED = "lancedb-0262"  # @lancedb/lancedb 0.26.2: memory-lancedb-pro's package-lock.json
CURRENT = "lancedb-current"  # @lancedb/lancedb 0.39.0: the newest release when this was written
CLIENTS = (PINNED, CURRENT)


def require_node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the memory-lancedb-pro interop tests need Node.js >= 18")
    if not (NODE_DIR / "node_modules" / PINNED).is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("node is installed but npm is not: cannot install tests/node's LanceDB clients")
        with FileLock(NODE_DIR / "node_modules.lock", purpose="npm install").acquire(timeout=900):  # one xdist worker installs
            if not (NODE_DIR / "node_modules" / PINNED).is_dir():
                subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True,
                               timeout=900)
    return node


class NodeError(AssertionError):
    pass


def run(client: str, db: Path, *steps: dict, timeout: float = 120) -> list:
    """Run the steps in one Node process; a panic or error raises :class:`NodeError`."""
    node = require_node()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"steps": list(steps)}, f)
    try:
        proc = subprocess.run([node, str(NODE_DIR / "plugin_client.mjs"), client, str(db), f.name],
                              capture_output=True, text=True, timeout=timeout)
    finally:
        Path(f.name).unlink()
    if proc.returncode != 0:
        raise NodeError(f"{client} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["results"]
