"""Shared helpers for the cursor / tail / run tests: real OpenClaw-shaped lines, real files."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock
from pathlib import Path

from distill.tails.ledger import create_batch, load_batch
from distill.model import Batch, BatchResult
from distill.config import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent


def header(sid: str = "s1") -> bytes:
    return (json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-20T09:00:00.000Z",
                        "cwd": "/home/u/src"}, separators=(",", ":")) + "\n").encode()


def msg(text: str, role: str = "user", n: int = 0) -> bytes:
    body = {"role": role, "content": [{"type": "text", "text": text}]}
    line = {"type": "message", "id": f"e{n:05d}", "parentId": None,
            "timestamp": "2026-11-20T09:00:00.000Z", "message": body}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def fact(i: int, tag: str = "f") -> str:
    """A turn text the noise filter keeps, unique per (tag, i)."""
    return f"Decision {tag}-{i}: deploy the billing service with uv sync --frozen on Debian 12 hosts only"


def settings_for(tmp_path: Path, **kw) -> Settings:
    return load_settings(state_dir=tmp_path / "state", agents_dir=tmp_path / "agents", **kw)


def session(tmp_path: Path, agent: str = "main", name: str = "s1") -> Path:
    p = tmp_path / "agents" / agent / "sessions" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def run(settings: Settings, **kw) -> tuple[BatchResult, Batch | None]:
    res = create_batch(settings, **kw)
    return res, (load_batch(Path(res.batch_file)) if res.batch_file else None)


def texts(batch: Batch | None) -> list[str]:
    if batch is None:
        return []
    return [m.text for a in batch.agents for m in a.messages]


def cli(settings_or_state: Settings | Path, *args: str, check: bool = True, env: dict | None = None,
        timeout: float = 60, process: bool = False) -> subprocess.CompletedProcess:
    """Run the ``distill`` command: in this process (:func:`run_main`), or in a real
    subprocess with ``process=True`` where the process is the point (its exit status, a lock
    another process holds)."""
    if isinstance(settings_or_state, Settings):
        flags = ["--state-dir", str(settings_or_state.state_dir), "--agents-dir", str(settings_or_state.agents_dir)]
    else:
        flags = ["--state-dir", str(settings_or_state)]
    if process:
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.run([sys.executable, "-m", "distill", *flags, *args], capture_output=True, text=True,
                           env=e, timeout=timeout, cwd=ROOT)
    else:
        p = run_main([*flags, *args], env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"distill {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def run_main(argv: list[str], *, env: dict | None = None, clear_env: bool = False) -> subprocess.CompletedProcess:
    """``distill ARGV`` through :func:`distill.cli.main` in this process, with its output
    captured: what ``python -m distill`` does, without a second interpreter importing
    LanceDB and loading the embedding model again (seconds per call). ``env`` is added to
    the environment for the call (``clear_env``: it is the whole environment)."""
    from distill.cli import main

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}, clear=clear_env), redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse: a usage error or --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
