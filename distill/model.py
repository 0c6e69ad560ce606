"""The data contracts: what a batch file, ``last-run.json``, ``distill status`` and a transcript
turn hold.

Attributes are snake_case; the JSON keys stay those of the files already on disk (camelCase,
as in the script this replaces), so every batch file and every ``--json`` line is unchanged.
What ``run`` and ``status`` print and ``last-run.json`` are plain records
(:class:`~distill.record.Record`), and ``Turn`` a slotted class: those commands, and a run
that keeps no turn, start without importing msgspec, whose import alone cost more than a
no-op ``run``. The batch file and its chunk progress are msgspec Structs
(:mod:`distill.structs`, loaded on first use of their names here): they are decoded and
validated in bulk where a batch is.

Files are decoded with :func:`decode` (bad input → :class:`~distill.errors.SchemaMismatch`
naming the file and the field) and written from :func:`to_builtins`.
"""

from __future__ import annotations

from .errors import SchemaMismatch
from .record import Invalid, Record, decode_json
from .record import as_dict as _record_as_dict
from .record import to_builtins as to_builtins

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from .structs import Batch as Batch
    from .structs import BatchAgent as BatchAgent
    from .structs import BatchMessage as BatchMessage
    from .structs import BatchProgress as BatchProgress
    from .structs import ChunkState as ChunkState
    from .structs import ChunkStatus as ChunkStatus
    from .structs import FileRange as FileRange

    Role = Literal["user", "assistant", "tool"]

BATCH_VERSION = 2  # a batch file's "version" (structs.Batch)

_STRUCTS = frozenset({"Batch", "BatchAgent", "BatchMessage", "BatchProgress", "ChunkState", "ChunkStatus",
                      "FileRange"})


def __getattr__(name: str):
    if name in _STRUCTS:
        from . import structs

        return getattr(structs, name)
    if name == "Role":
        from typing import Literal

        return Literal["user", "assistant", "tool"]
    raise AttributeError(name)


# --- one run's figures --------------------------------------------------------------------

class RunSummary(Record):
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
                "over the cap": c.get("dropped_cap", 0)}


class LastRun(Record, camel=True):
    """``<state>/last-run.json``: what ``distill status`` shows as the last run."""

    at_ms: int
    action: str  # the summary's, or "failed": the run raised, ``error`` says what
    batch_file: str | None = None
    summary: RunSummary  # a failed run's: what it committed and spent before the failure
    error: str | None = None  # a failed run's error message; absent from files written before it


class BatchResult(Record, camel=True):
    """What ``distill run`` prints."""

    action: Literal["created", "noop", "pending"]
    batch_file: str | None = None
    batch_files: list[str] = []
    cursor_path: str = ""
    summary: RunSummary
    released: list[str] = []
    errors: list[str] = []


# --- distill init and status -------------------------------------------------------------

class InitResult(Record, camel=True):
    action: str = "init"
    cursor_path: str
    tracked_files: int
    marked_files: int
    marked_bytes: int
    counters: dict[str, int] = {}  # what discovery could not mark (file_name_not_utf8, folder_unreadable, …)
    errors: list[str] = []  # warnings naming each of them


class FileStatus(Record, camel=True):
    path: str
    agent_id: str
    format: str | None = None
    committed: int
    size: int | None  # None: the file is gone
    behind: int
    pending: list[str] = []
    state: str = "tracked"  # tracked | new | archived | out-of-scope | gone


class AgentStatus(Record, camel=True):
    agent_id: str
    files: int
    behind: int
    pending: list[str]


class SetAsideChunk(Record, camel=True):
    """A chunk whose answer never came right; its byte ranges stay uncommitted."""

    batch_file: str
    chunk: int
    agent_id: str
    attempts: int
    error: str | None
    ranges: list[list]  # [path, start, end]


class StatusResult(Record, camel=True):
    cursor_path: str
    agents: list[AgentStatus]
    files: list[FileStatus]
    pending_batches: list[str]
    set_aside: list[SetAsideChunk] = []
    last_run: LastRun | None = None
    # warnings: discovery's (a folder that cannot be listed, a missing root, …), and what blocks
    # reading (a pending batch whose file is unreadable) with how to fix it
    errors: list[str] = []


# --- what every transcript format produces ------------------------------------------------

class _Slots:
    """``==`` and ``repr`` over ``__slots__``, for the two classes built on the per-line path."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class Turn(_Slots):
    """One thing said in a transcript, cleaned. Built per kept line, so a slotted class with a
    written-out ``__init__``: a read that keeps no turn never loads msgspec, and this costs a
    microsecond a turn. Its arguments may be given in order (the order of ``__slots__``):
    matching ten keywords costs more than the rest of the call (7.3k against 3.0k
    instructions), so the hottest builder passes them so."""

    __slots__ = ("agent_id", "session_id", "file", "start", "end", "entry_id", "ts", "role", "text", "author")

    def __init__(self, agent_id: str, session_id: str, file: str, start: int, end: int,
                 entry_id: str | None, ts: int, role: Role, text: str, author: str):
        self.agent_id = agent_id
        self.session_id = session_id
        self.file = file
        self.start = start  # byte range [start, end) of the line(s) in the file
        self.end = end
        self.entry_id = entry_id  # the format's own entry/message id, if it has one
        self.ts = ts  # Unix milliseconds; 0 = unknown (the caller falls back to the file's mtime)
        self.role = role
        self.text = text  # cleaned: injected blocks stripped, clipped, redacted
        self.author = author  # distill.envelopes.Author, set by the format module: who actually wrote it


class TurnLimits(_Slots):
    __slots__ = ("max_turn_chars", "max_tool_trace_chars", "owners")

    def __init__(self, *, max_turn_chars: int = 6000, max_tool_trace_chars: int = 300, owners=None):
        self.max_turn_chars = max_turn_chars
        self.max_tool_trace_chars = max_tool_trace_chars
        if owners is None:  # no OpenClaw configuration
            from .trust import NO_CONFIG as owners
        self.owners = owners  # distill.trust.Owners: whose chat messages are the owner's

    @classmethod
    def from_settings(cls, settings) -> TurnLimits:
        from .trust import owners_for

        return cls(max_turn_chars=settings.max_turn_chars, max_tool_trace_chars=settings.max_tool_trace_chars,
                   owners=owners_for(settings))


# --- reading and writing them -------------------------------------------------------------

def decode(data: bytes, type_: type, message: str):
    """``data`` (JSON) as ``type_``; bad input raises SchemaMismatch with ``message``, whose
    ``{error}`` becomes what was wrong, naming the field (``at `$.ranges[0].dev```)."""
    if issubclass(type_, Record):
        try:
            return decode_json(data, type_)
        except Invalid as exc:
            raise SchemaMismatch(message.replace("{error}", str(exc))) from exc
    import msgspec

    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.DecodeError as exc:  # also ValidationError: a missing or mistyped field
        raise SchemaMismatch(message.replace("{error}", str(exc))) from exc


def as_dict(obj) -> dict:
    """``obj``'s attributes (snake_case) to values, one level deep, like ``dataclasses.asdict``'s top."""
    if isinstance(obj, Record):
        return _record_as_dict(obj)
    import msgspec

    return msgspec.structs.asdict(obj)
