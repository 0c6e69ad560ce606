"""The data contracts: what a batch file, ``last-run.json``, ``distill status`` and a transcript
turn hold.

Attributes are snake_case; the JSON keys stay those of the files already on disk (camelCase,
as in the script this replaces), so every batch file and every ``--json`` line is unchanged.
What ``run`` and ``status`` print and ``last-run.json`` are plain records
(:class:`~distill.record.Record`): those commands start without importing msgspec, whose
import alone cost more than a no-op ``run``. The batch file, its chunk progress and
``Turn`` are msgspec Structs (:mod:`distill.structs`, loaded on first use of their names
here): they are decoded and validated in bulk where a batch is.

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
    from .structs import Role as Role
    from .structs import Turn as Turn
    from .structs import TurnLimits as TurnLimits

_STRUCTS = frozenset({"Batch", "BatchAgent", "BatchMessage", "BatchProgress", "ChunkState", "ChunkStatus",
                      "FileRange", "Role", "Turn", "TurnLimits"})


def __getattr__(name: str):
    if name in _STRUCTS:
        from . import structs

        return getattr(structs, name)
    raise AttributeError(name)


# --- one run's figures --------------------------------------------------------------------

class RunSummary(Record):
    """The one-line summary every run ends with, and its JSON twin."""

    action: str = "noop"  # created | noop | pending | committed | distilled | ...
    files: int = 0
    bytes: int = 0
    turns: int = 0
    memories_added: int = 0
    memories_duplicate: int = 0
    llm_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    counters: dict[str, int] = {}

    def dropped(self) -> dict[str, int]:
        """Candidates found but not stored, by reason (every one is counted somewhere)."""
        c = self.counters
        below = sum(n for k, n in c.items() if k.startswith("dropped_") and k != "dropped_cap")
        return {"merged in run": c.get("merged_in_run", 0), "below the bar": below,
                "over the cap": c.get("dropped_cap", 0)}


class LastRun(Record, camel=True):
    """``<state>/last-run.json``: what ``distill status`` shows as the last run."""

    at_ms: int
    action: str
    batch_file: str | None = None
    summary: RunSummary


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
