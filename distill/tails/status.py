"""``distill status``: per agent and file, how far behind the cursor is, what is pending, the last run.

Read-only and lock-free: it may show a state a concurrent run is just changing.
"""

from __future__ import annotations

import os

import msgspec
from pathlib import Path

from ..config import Settings
from ..errors import SchemaMismatch
from ..model import AgentStatus, FileStatus, LastRun, SetAsideChunk, StatusResult, decode
from .cursor import Cursor
from .discover import discover


def tail_status(settings: Settings, cursor_path: Path | None = None) -> StatusResult:
    cursor = Cursor.load(Path(cursor_path or settings.state.cursor).absolute())
    files: list[FileStatus] = []
    found = set()
    errors: list[str] = []
    for sf in discover(settings, None, errors):
        found.add(sf.key)
        e = cursor.files.get(sf.key)
        if e is None:
            files.append(FileStatus(path=sf.path, agent_id=sf.agent, format=None if sf.format == "auto" else sf.format,
                                    committed=0, size=sf.st.st_size, behind=sf.st.st_size, state="new"))
            continue
        files.append(FileStatus(path=sf.path, agent_id=sf.agent, format=e.get("format"), committed=e["offset"],
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
        files.append(FileStatus(path=e["path"], agent_id=e["agent"], format=e.get("format"), committed=e["offset"],
                                size=size, behind=max(0, (size or 0) - e["offset"]),
                                pending=sorted(e.get("pending") or ()), state=state))
    agents: dict[str, AgentStatus] = {}
    for f in files:
        a = agents.setdefault(f.agent_id, AgentStatus(agent_id=f.agent_id, files=0, behind=0, pending=[]))
        a.files += 1
        a.behind += f.behind
        a.pending = sorted(set(a.pending) | set(f.pending))
    return StatusResult(
        cursor_path=str(cursor.path), agents=[agents[k] for k in sorted(agents)], files=files,
        pending_batches=[str(settings.state.batches.absolute() / f"{b}.json") for b in sorted(cursor.pending_batch_ids())],
        set_aside=_set_aside(settings, cursor),
        last_run=_last_run(settings),
        errors=errors + _unreadable(settings, cursor),
        shared_table=_shared_table(settings) if isinstance(settings.db, str) else msgspec.UNSET,
    )


def _shared_table(settings: Settings):
    """Cursors and queues are this host's; the table on an object store is everyone's."""
    from ..store.table import shared_table_state  # LanceDB: only for a shared table

    return shared_table_state(settings)


def _unreadable(settings: Settings, cursor: Cursor) -> list[str]:
    if not cursor.pending_batch_ids():
        return []
    from .ledger import unreadable_pending  # only when something is pending

    return unreadable_pending(settings, cursor)


def _set_aside(settings: Settings, cursor: Cursor) -> list[SetAsideChunk]:
    out: list[SetAsideChunk] = []
    pending = sorted(cursor.pending_batch_ids())
    if not pending:
        return out
    from .ledger import load_progress  # only when something is pending

    for bid in pending:
        path = settings.state.batch(bid).absolute()
        try:
            state = load_progress(path)
        except SchemaMismatch:
            continue
        for i, c in sorted((state.with_status("failed") if state else {}).items()):
            out.append(SetAsideChunk(batch_file=str(path), chunk=i, agent_id=c.agent, attempts=c.attempts,
                                     error=c.error, ranges=c.ranges))
    return out


def _last_run(settings: Settings) -> LastRun | None:
    try:
        return decode(settings.state.last_run.read_bytes(), LastRun, "last-run.json: {error}")
    except (OSError, SchemaMismatch):
        return None
