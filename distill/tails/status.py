"""``distill status``: per agent and file, how far behind the cursor is, what is pending, the last run.

Read-only and lock-free: it may show a state a concurrent run is just changing.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from .ledger import LastRun
from ..config import Settings
from .cursor import Cursor
from .discover import discover


class FileStatus(BaseModel):
    path: str
    agentId: str
    format: str | None = None
    committed: int
    size: int | None  # None: the file is gone
    behind: int
    pending: list[str] = Field(default_factory=list)
    state: str = "tracked"  # tracked | new | archived | out-of-scope | gone


class AgentStatus(BaseModel):
    agentId: str
    files: int
    behind: int
    pending: list[str]


class SetAsideChunk(BaseModel):
    """A chunk whose answer never came right; its byte ranges stay uncommitted."""

    batchFile: str
    chunk: int
    agentId: str
    attempts: int
    error: str | None
    ranges: list[list]  # [path, start, end]


class StatusResult(BaseModel):
    cursorPath: str
    agents: list[AgentStatus]
    files: list[FileStatus]
    pendingBatches: list[str]
    setAside: list[SetAsideChunk] = Field(default_factory=list)
    lastRun: LastRun | None = None


def tail_status(settings: Settings, cursor_path: Path | None = None) -> StatusResult:
    cursor = Cursor.load(Path(cursor_path or settings.state.cursor).absolute())
    files: list[FileStatus] = []
    found = set()
    for sf in discover(settings):
        found.add(sf.key)
        e = cursor.files.get(sf.key)
        if e is None:
            files.append(FileStatus(path=sf.path, agentId=sf.agent, format=None if sf.format == "auto" else sf.format,
                                    committed=0, size=sf.st.st_size, behind=sf.st.st_size, state="new"))
            continue
        files.append(FileStatus(path=sf.path, agentId=sf.agent, format=e.get("format"), committed=e["offset"],
                                size=sf.st.st_size, behind=max(0, sf.st.st_size - e["offset"]),
                                pending=sorted(e.get("pending") or ())))
    for key, e in cursor.files.items():
        if key in found:
            continue
        try:
            size = os.stat(e["path"]).st_size
        except OSError:
            size = None
        state = "gone" if size is None else ("archived" if e.get("archived") else "out-of-scope")
        files.append(FileStatus(path=e["path"], agentId=e["agent"], format=e.get("format"), committed=e["offset"],
                                size=size, behind=max(0, (size or 0) - e["offset"]),
                                pending=sorted(e.get("pending") or ()), state=state))
    agents: dict[str, AgentStatus] = {}
    for f in files:
        a = agents.setdefault(f.agentId, AgentStatus(agentId=f.agentId, files=0, behind=0, pending=[]))
        a.files += 1
        a.behind += f.behind
        a.pending = sorted(set(a.pending) | set(f.pending))
    return StatusResult(
        cursorPath=str(cursor.path), agents=[agents[k] for k in sorted(agents)], files=files,
        pendingBatches=[str(settings.state.batches.absolute() / f"{b}.json") for b in sorted(cursor.pending_batch_ids())],
        setAside=_set_aside(settings, cursor),
        lastRun=_last_run(settings),
    )


def _set_aside(settings: Settings, cursor: Cursor) -> list[SetAsideChunk]:
    from .ledger import BatchProgress
    from ..errors import SchemaMismatch

    out = []
    for bid in sorted(cursor.pending_batch_ids()):
        path = settings.state.batches.absolute() / f"{bid}.json"
        try:
            state = BatchProgress.load(path)
        except SchemaMismatch:
            continue
        for i, c in sorted((state.with_status("failed") if state else {}).items()):
            out.append(SetAsideChunk(batchFile=str(path), chunk=i, agentId=c.agent, attempts=c.attempts,
                                     error=c.error, ranges=c.ranges))
    return out


def _last_run(settings: Settings) -> LastRun | None:
    try:
        return LastRun.model_validate(orjson.loads(settings.state.last_run.read_bytes()))
    except (OSError, ValueError):
        return None
