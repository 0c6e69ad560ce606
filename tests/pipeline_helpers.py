"""OpenClaw transcripts on disk and state inspection for the pipeline tests."""

from __future__ import annotations

import json
from pathlib import Path

from distill.config import load_settings

_counter = [0]


def line(role: str, text: str) -> str:
    _counter[0] += 1
    n = _counter[0]
    if role == "toolResult":
        msg = {"role": "toolResult", "toolCallId": f"c{n}", "toolName": "exec", "isError": True,
               "content": [{"type": "text", "text": text}]}
    else:
        msg = {"role": role, "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "message", "id": f"m{n:06d}", "parentId": None,
                       "timestamp": "2026-11-20T09:00:00.000Z", "message": msg}, ensure_ascii=False) + "\n"


def write_session(root: Path, agent: str, session: str, turns: list[tuple[str, str]], *, append: bool = False) -> Path:
    path = root / "agents" / agent / "sessions" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as f:
        if not append:
            f.write(json.dumps({"type": "session", "version": 3, "id": session,
                                "timestamp": "2026-11-20T09:00:00.000Z", "cwd": "/srv"}) + "\n")
        for role, text in turns:
            f.write(line(role, text))
    return path


def settings(root: Path, **over):
    base = dict(state_dir=root / "state", agents_dir=root / "agents", db=root / "db")
    base.update(over)
    return load_settings(**base)


def stored(s) -> list:
    """Every row the store holds, history included: what a run wrote, lost or doubled is counted
    over rows, whether or not a later memory superseded one (recall leaves those out)."""
    from distill.store import MemoryStore

    if not s.db.exists():
        return []
    return MemoryStore.open(s).list(limit=10_000, include_history=True)


def cursor_state(s) -> dict[str, tuple[int, dict]]:
    """path → (committed offset, pending ranges) from the cursor file itself."""
    data = json.loads(s.state.cursor.read_text()) if s.state.cursor.exists() else {"files": {}}
    return {e["path"]: (e.get("offset", 0), e.get("pending") or {}) for e in data["files"].values()}


EN = [
    ("user", "hello, good morning"),
    ("assistant", "Good morning! What are we working on?"),
    ("user", "From now on always use uv instead of pip in this repo; pip resolves the wrong numpy."),
    ("assistant", "Understood. Running the tests."),
    ("toolResult", "ImportError: libpq.so.5: cannot open shared object file: No such file or directory"),
    ("assistant", "Fixed: the ImportError came from the missing system package; apt-get install libpq5 solved it."),
]
ZH = [
    ("user", "你好"),
    ("user", "我们决定把部署目标改成 Debian 12，因为 Ubuntu 20.04 的 glibc 太旧。"),
    ("assistant", "好的，记下了。"),
]
