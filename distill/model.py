"""The data contracts, all msgspec Structs: a batch file and its chunk progress, ``last-run.json``,
what ``distill run``, ``status`` and ``init`` print, and a transcript turn.

Attributes are snake_case; the JSON keys stay those of the files already on disk (camelCase,
as in the script this replaces), so every batch file and every ``--json`` line is unchanged.
Files are decoded with :func:`decode` (bad input → :class:`~distill.errors.SchemaMismatch`
naming the file and the field) and written from :func:`to_builtins` / :func:`encode_json`. The
settings are Structs too (:mod:`distill.config`); pydantic is kept where a library or its schema
needs it (the LLM's answer schema, the MCP server's tools, the store's rows, the queue task).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from .errors import SchemaMismatch

Role = Literal["user", "assistant", "tool"]
BATCH_VERSION = 2  # a batch file's "version"
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


# --- one run's figures --------------------------------------------------------------------

class RunSummary(msgspec.Struct, kw_only=True):
    """The one-line summary every run ends with, and its JSON twin."""

    action: str = "noop"  # created | noop | pending | committed | partial (chunks wait) | distilled | ...
    files: int = 0
    bytes: int = 0
    turns: int = 0
    memories_added: int = 0
    memories_duplicate: int = 0
    llm_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    counters: dict[str, int] = {}
    errors: list[str] = []  # warnings, each naming a file or setting and what to do

    def dropped(self) -> dict[str, int]:
        """Candidates found but not stored, by reason (every one is counted somewhere)."""
        c = self.counters
        below = sum(n for k, n in c.items() if k.startswith("dropped_") and k != "dropped_cap")
        return {"merged in run": c.get("merged_in_run", 0), "below the bar": below,
                "over the cap": c.get("dropped_cap", 0),
                "left out as unsure": sum(n for k, n in c.items() if k.startswith("unsure_"))}


class LastRun(_Camel, kw_only=True):
    """``<state>/last-run.json``: what ``distill status`` shows as the last run."""

    at_ms: int
    action: str  # the summary's, or "failed": the run raised, ``error`` says what
    batch_file: str | None = None
    summary: RunSummary  # a failed run's: what it committed and spent before the failure
    error: str | None = None  # a failed run's error message; absent from files written before it


class BatchResult(_Camel, kw_only=True):
    """What ``distill run`` prints."""

    action: Literal["created", "noop", "pending"]
    batch_file: str | None = None
    batch_files: list[str] = []
    cursor_path: str = ""
    summary: RunSummary
    released: list[str] = []
    errors: list[str] = []


# --- distill init and status -------------------------------------------------------------

class InitResult(_Camel, kw_only=True):
    action: str = "init"
    cursor_path: str
    tracked_files: int
    marked_files: int
    marked_bytes: int
    counters: dict[str, int] = {}  # what discovery could not mark (file_name_not_utf8, folder_unreadable, …)
    errors: list[str] = []  # warnings naming each of them


class FileStatus(_Camel, kw_only=True):
    path: str
    agent_id: str
    format: str | None = None
    committed: int
    size: int | None  # None: the file is gone
    behind: int
    pending: list[str] = []
    state: str = "tracked"  # tracked | new | archived | out-of-scope | gone


class AgentStatus(_Camel, kw_only=True):
    agent_id: str
    files: int
    behind: int
    pending: list[str]


class SetAsideChunk(_Camel, kw_only=True):
    """A chunk whose answer never came right; its byte ranges stay uncommitted."""

    batch_file: str
    chunk: int
    agent_id: str
    attempts: int
    error: str | None
    ranges: list[list]  # [path, start, end]


class HostSeen(_Camel, kw_only=True):
    """A host that wrote to a shared table: its newest sighting among the newest rows."""

    host: str
    last_seen_ms: int
    sources: int


class SharedTable(_Camel, kw_only=True):
    """``distill status`` on an object-store table: its state and who wrote to it last."""

    db: str
    table: str
    rows: int = 0
    version: int = 0
    hosts: list[HostSeen] = []
    error: str | None = None  # the store could not be read (credentials never appear here)


class StatusResult(_Camel, kw_only=True):
    cursor_path: str
    agents: list[AgentStatus]
    files: list[FileStatus]
    pending_batches: list[str]
    set_aside: list[SetAsideChunk] = []
    last_run: LastRun | None = None
    # warnings: discovery's (a folder that cannot be listed, a missing root, …), and what blocks
    # reading (a pending batch whose file is unreadable) with how to fix it
    errors: list[str] = []
    # db on an object store (several hosts may write it); left out of --json for a local folder, so the
    # line stays what scripts read before
    shared_table: SharedTable | msgspec.UnsetType = msgspec.UNSET


# --- what every transcript format produces ------------------------------------------------

class Turn(msgspec.Struct):
    """One thing said in a transcript, cleaned. Built per kept line; its arguments may be given
    in order (the hottest builder passes them so)."""

    agent_id: str
    session_id: str
    file: str
    start: int  # byte range [start, end) of the line(s) in the file
    end: int
    entry_id: str | None  # the format's own entry/message id, if it has one
    ts: int  # Unix milliseconds; 0 = unknown (the caller falls back to the file's mtime)
    role: Role
    text: str  # cleaned: injected blocks stripped, clipped, redacted
    author: str  # distill.envelopes.Author, set by the format module: who actually wrote it


class TurnLimits(msgspec.Struct, kw_only=True):
    max_turn_chars: int = 6000
    max_tool_trace_chars: int = 300
    owners: Any = None  # distill.trust.Owners: whose chat messages are the owner's

    def __post_init__(self) -> None:
        if self.owners is None:  # no OpenClaw configuration
            from .trust import NO_CONFIG

            self.owners = NO_CONFIG

    @classmethod
    def from_settings(cls, settings: Any) -> TurnLimits:
        from .trust import owners_for

        return cls(max_turn_chars=settings.max_turn_chars, max_tool_trace_chars=settings.max_tool_trace_chars,
                   owners=owners_for(settings))


# --- reading and writing them -------------------------------------------------------------

def decode(data: bytes, type_: type, message: str) -> Any:
    """``data`` (JSON) as ``type_``; bad input raises SchemaMismatch with ``message``, whose
    ``{error}`` becomes what was wrong, naming the field (``at `$.ranges[0].dev```)."""
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.DecodeError as exc:  # also ValidationError: a missing or mistyped field
        raise SchemaMismatch(message.replace("{error}", str(exc))) from exc


def _enc(obj: Any) -> Any:
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise NotImplementedError(f"cannot write {type(obj).__name__} as JSON")


def to_builtins(obj: Any) -> Any:
    """``obj`` as plain JSON types, Structs under their JSON keys."""
    return msgspec.to_builtins(obj, enc_hook=_enc)


def encode_json(obj: Any) -> bytes:
    """One line of JSON: what ``--json`` prints and ``last-run.json`` holds."""
    return msgspec.json.encode(obj, enc_hook=_enc)


def as_dict(obj: Any) -> dict:
    """``obj``'s attributes (snake_case) to values, one level deep, like ``dataclasses.asdict``'s top."""
    return msgspec.structs.asdict(obj)
