"""The data contracts that are msgspec Structs: a batch file and its chunk progress. They load
where a batch is cut or read (msgspec decodes and validates a batch file in one pass), never
at a command's start, nor by a run that finds no turn; import them from :mod:`distill.model`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .model import BATCH_VERSION

ChunkStatus = Literal["mapped", "stored", "failed", "dropped"]


class _Camel(msgspec.Struct, rename="camel"):
    """A record whose JSON keys are the camelCase of its attributes (``batch_id`` ↔ ``batchId``)."""


# --- a batch file -------------------------------------------------------------------------

class BatchMessage(_Camel, kw_only=True):
    id: str  # stable across runs: "<file key>:<start byte>", the evidence id of a turn
    ts: int  # Unix milliseconds
    role: str  # "user" | "assistant" | "tool"
    text: str
    session_id: str
    file: str
    start: int
    end: int
    entry_id: str | None = None
    author: str | None = None  # see envelopes.Author; None in batches written before it existed


class BatchAgent(_Camel, kw_only=True):
    agent_id: str
    messages: list[BatchMessage] = []


class FileRange(_Camel, kw_only=True):
    """``[start, end)`` of one file (known by device + inode) that this batch covers."""

    path: str
    dev: int
    inode: int
    start: int
    end: int
    agent_id: str
    skip_line: bool = False  # ``end`` lies inside an over-long line whose rest is skipped

    @property
    def key(self) -> str:
        return f"{self.dev}:{self.inode}"


class Batch(_Camel, kw_only=True):
    """``batches/<id>.json``. The script's keys (``version``, ``createdAtMs``, ``agents[].agentId``,
    ``agents[].messages[].{ts, role, text}``, ``touchedFiles``) are kept for cron prompts written for it."""

    version: int = BATCH_VERSION
    batch_id: str
    created_at_ms: int
    agents: list[BatchAgent] = []
    touched_files: list[str] = []
    ranges: list[FileRange] = []
    counters: dict[str, int] = {}
    cursor_path: str | None = None  # the cursor whose ranges this batch holds (None = the default one)


class ChunkState(msgspec.Struct, kw_only=True):
    """What one chunk of a batch produced. ``mapped``: validated candidates kept here, not yet
    stored; ``stored``: its memories are in the store; ``failed``: set aside, ``hold`` says from
    which byte of which file (``"<dev>:<inode>"``) nothing may be committed; ``dropped``: a
    person gave up on it (``distill retry --drop``)."""

    status: ChunkStatus
    agent: str
    candidates: list[dict] = []
    error: str | None = None
    attempts: int = 0
    hold: dict[str, int] = {}
    ranges: list[list] = []  # [path, start, end] per file, for people


class BatchProgress(_Camel, kw_only=True):
    """A batch's own state beside it (``batches/<id>.chunks``), written atomically after every
    chunk, so a rerun maps only what never finished and stores nothing twice."""

    chunk_tokens: int
    overlap_turns: int
    chunks: dict[str, ChunkState] = {}

    def with_status(self, *statuses: str) -> dict[int, ChunkState]:
        return {int(i): c for i, c in self.chunks.items() if c.status in statuses}

    def holds(self) -> dict[str, int]:
        """Per file key, the first byte no commit may pass: the earliest turn of a set-aside chunk."""
        out: dict[str, int] = {}
        for c in self.with_status("failed").values():
            for key, start in c.hold.items():
                out[key] = min(start, out.get(key, start))
        return out
