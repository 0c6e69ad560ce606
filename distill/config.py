"""The full settings model for every command, the daemon and the tests.

Where each value comes from (flags > ``DISTILL_*`` environment > ``config.toml`` > defaults)
is decided once, in :mod:`distill.settings.core`; this model validates the result. It is a
msgspec Struct, like every other contract of ours (:mod:`distill.model`). Every error names the setting.
Defaults follow the OpenClaw layout, so an OpenClaw
user configures nothing. Relative paths in ``config.toml`` are resolved against the folder
holding that file, so a state directory (like ``state.example/``) can carry its own sample
transcripts.

No ``from __future__ import annotations`` here: msgspec resolves a string annotation by
compiling it, for each of the ~70 settings, on every command (7 M instructions of a no-op run).
"""

import os
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

from .errors import ConfigError
from .settings import core
from .settings.core import AGENT_ID_RULE, is_agent_id
from .settings.thresholds import DedupThresholds
from .tails.state import StateDir


DEFAULT_STATE_DIR = Path(core.DEFAULT_STATE_DIR)
DEFAULT_AGENTS_DIR = Path(core.DEFAULT_AGENTS_DIR)
DEFAULT_DB = Path(core.DEFAULT_DB)


def _path(value) -> Path:
    return Path(os.path.expanduser(os.fspath(value)))


def _db(value) -> "Path | str":
    """A local folder as a Path; an object-store URI (``s3://bucket/prefix``) as its string, also
    when it arrived through a Path (which folds ``//`` into ``/``)."""
    text = os.fspath(value)
    m = _URI.match(text)
    if m is None or m[1] == "file":  # file:///srv/db is the folder /srv/db
        return _path("/" + m[2] if m else text)
    return f"{m[1]}://{m[2]}".rstrip("/")


_URI = re.compile(r"^([a-z][a-z0-9+.-]+):/+(.+)$")


def _agent_id(setting: str, value: str) -> None:
    if not is_agent_id(value):
        raise ValueError(f"agent id {value!r} in {setting} is not valid: use {AGENT_ID_RULE}")


# The range of every numeric setting, checked once here (flags, DISTILL_* and config.toml all
# arrive through Settings): name -> (lowest allowed, whether the lowest itself is allowed, what
# the value is). Floats must also be finite (NaN would make a deadline never come, inf wait
# forever). Bounds a user would expect: max_line_bytes of 0 would skip every line as too long
# and move the cursor past it, so it takes at least 4 KiB (the head fingerprint's length; the
# default is 8 MiB); counts of things to take at least one; waits and ages may be 0 (do not wait,
# keep nothing); the caps and budgets may be 0 (keep no memory of that scope, send no token).
_RANGES: dict[str, tuple[float, bool, str]] = {
    "max_line_bytes": (4096, True, "bytes (4 KiB; the default is 8 MiB)"),
    "max_turn_chars": (100, True, "characters"),
    "max_tool_trace_chars": (50, True, "characters"),
    "max_messages_per_agent": (1, True, "messages"),
    "state_lock_wait": (0, True, "seconds"),
    "batch_retention_days": (0, True, "days"),
    "embed_dimensions": (1, True, "dimensions"),
    "embed_batch_size": (1, True, "texts per call"),
    "store_lock_timeout": (0, True, "seconds"),
    "store_compact_small_fragments": (1, True, "fragments"),
    "store_cleanup_grace_minutes": (0, True, "minutes"),
    "store_vector_index_min_rows": (0, True, "rows"),
    "store_converge_window_minutes": (0, True, "minutes"),
    "llm_timeout": (0, False, "seconds"),
    "llm_max_output_tokens": (1, True, "tokens"),
    "llm_concurrency": (1, True, "calls at once"),
    "chunk_tokens": (1, True, "tokens"),
    "chunk_overlap_turns": (0, True, "turns"),
    "max_per_agent": (0, True, "memories"),
    "max_global": (0, True, "memories"),
    "token_budget_run": (0, True, "tokens"),
    "token_budget_day": (0, True, "tokens"),
    "retry_attempts": (1, True, "attempts"),
    "retry_max_wait": (0, True, "seconds"),
    "retry_max_total": (0, True, "seconds"),
    "worker_quiet_seconds": (0, True, "seconds"),
    "worker_max_attempts": (1, True, "attempts"),
    "worker_backoff_seconds": (0, True, "seconds"),
    "worker_done_retention_days": (0, True, "days"),
    "worker_compact_interval": (0, True, "seconds"),
    "worker_stall_seconds": (0, False, "seconds"),
    "worker_full_pass_interval": (0, True, "seconds (0 = off)"),
}


def _check_ranges(settings: "Settings") -> None:
    for name, (low, inclusive, unit) in _RANGES.items():
        value = getattr(settings, name)
        if value is None:
            continue
        if value != value or value in (float("inf"), float("-inf")) or value < low or (value == low and not inclusive):
            kind = "a finite number" if isinstance(value, float) else "an integer"
            raise ValueError(f"{name} (DISTILL_{name.upper()}) = {value!r} is out of range: use {kind} "
                             f"{'of at least' if inclusive else 'greater than'} {low} {unit}")
    for embedder, thresholds in settings.dedup.items():
        for name in thresholds.__struct_fields__:
            value = getattr(thresholds, name)
            if value is not None and not 0 <= value <= 1:  # NaN fails this too
                raise ValueError(f"dedup.{embedder}.{name} = {value!r} is out of range: use a number from 0 to 1")


class SourceRoot(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """An extra transcript root (Claude Code, Codex CLI, another OpenClaw tree).

    OpenClaw's own root (``agents_dir``) is implicit: its agent id is the folder name in
    ``<agents_dir>/<agentId>/sessions/``. Other roots say which agent their memories belong to.
    """

    path: Path
    agent_id: str
    format: Literal["auto", "openclaw", "claude-code", "codex"] = "auto"
    glob: str = "**/*.jsonl"

    def __post_init__(self) -> None:
        self.path = _path(self.path)
        _agent_id("agent_id", self.agent_id)
        from .tails.discover import GLOB_RULE, glob_problem

        why = glob_problem(self.glob)
        if why is not None:
            raise ValueError(f"glob {self.glob!r} of root {self.path} cannot be used: {why}; {GLOB_RULE}")


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, dict=True):
    """Every setting; built by :func:`load_settings` (which validates and converts), or directly
    in tests and by code deriving a variant (:meth:`replace`)."""

    # --- where things live
    state_dir: Path = DEFAULT_STATE_DIR
    agents_dir: Path = DEFAULT_AGENTS_DIR
    sources: list[SourceRoot] = []
    # a local folder (a Path), or an object-store URI kept as its string (s3://bucket/prefix, gs://, az://);
    # msgspec takes no union of Path and str, so __post_init__ converts it (see _db)
    db: Any = DEFAULT_DB
    table: str = "memories"

    # --- which agents
    distiller_agent_id: str = core.DEFAULT_DISTILLER
    allowed_agent_ids: str = ""  # also OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS; comma-separated, ""/"*"/"all" = every agent

    # --- who the owner is (distill.trust): OpenClaw's config (default <agents_dir>/../openclaw.json)
    # and more sender ids whose chat messages are the owner's (e.g. "telegram:123", "ou_x")
    openclaw_config: str | None = None
    trusted_senders: list[str] = []

    # --- reading transcripts
    max_line_bytes: int = 8 * 1024 * 1024
    max_turn_chars: int = 6000
    max_tool_trace_chars: int = 300
    max_messages_per_agent: int = 2000
    state_lock_wait: float = 10.0  # seconds `run`/`commit` wait for <state>/.lock, then refuse
    batch_retention_days: float = 14.0  # committed/aborted batch files kept this long
    # OpenClaw's archived sessions (<id>.jsonl.reset.<time>, .deleted.<time>): `backfill` reads
    # them unless this is false or it is given --no-archives; `run` and the worker never do
    backfill_archives: bool = True
    read_archives: bool = False  # set by backfill on its own copy of the settings; leave it off

    # --- store
    embedder: Literal["local", "openai", "gemini"] = "local"
    embed_model: str | None = None
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    embed_dimensions: int | None = None
    embed_task: str | None = None  # Jina's `task` parameter, e.g. "retrieval.passage"
    embed_batch_size: int = 64
    dedup: dict[str, DedupThresholds] = {}
    store_lock_timeout: float = 120.0  # seconds a writer waits for the store's write lock
    store_compact_small_fragments: int = 32  # compact after a write once this many small fragments exist
    store_cleanup_grace_minutes: float = 60.0  # compaction keeps old versions this long for live readers
    store_vector_index_min_rows: int = 5_000  # compact() builds an ANN index for search from this many rows
    # Lance file format of tables distill creates: 2.0 is what memory-lancedb-pro's pinned Node client
    # (@lancedb/lancedb 0.26.2) writes itself (it reads 2.1 too, panics on 2.2); "stable" = this LanceDB's default
    store_file_format: Literal["2.0", "2.1", "2.2", "stable"] = "2.0"
    storage_options: dict[str, str] = {}  # object store: LanceDB's storage options over the AWS_* environment
    host: str = ""  # this host's name in each row's provenance (shared tables); "" = the system's host name
    store_converge_window_minutes: float = 1440.0  # `memories converge` / housekeeping: rows this recent are re-checked

    # --- distiller
    llm: Literal["rules", "gemini", "openai"] = "rules"
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 60.0  # wall clock per call attempt, even while an answer keeps streaming
    llm_max_output_tokens: int | None = None  # answer cap; None = sized to the schema's caps (2,064)
    llm_concurrency: int = 2
    chunk_tokens: int = 6000
    chunk_overlap_turns: int = 2
    # caps per session and chunk (not per batch: a backfill is one batch), see reduce.apply_caps
    max_per_agent: int = 3
    max_global: int = 3
    token_budget_run: int = 200_000
    token_budget_day: int = 2_000_000

    # --- retries (one policy for every network call)
    retry_attempts: int = 5
    retry_max_wait: float = 30.0
    retry_max_total: float = 120.0

    # --- worker
    worker_quiet_seconds: float = 5.0
    worker_watch_sources: bool = True  # the daemon watches session roots unasked; hooks mark ends sooner
    worker_max_attempts: int = 5
    worker_backoff_seconds: float = 30.0
    worker_done_retention_days: float = 7.0
    worker_poll: bool = False  # force the polling observer (no inotify)
    worker_compact_interval: float = 3600.0  # seconds between store compactions (only after new memories)
    worker_stall_seconds: float = 1800.0  # a run silent this long stops the watchdog pings (systemd restarts us)
    worker_full_pass_interval: float = 0.0  # seconds between idle catch-up passes over every root; 0 = off

    def __post_init__(self) -> None:
        self.state_dir, self.agents_dir, self.db = _path(self.state_dir), _path(self.agents_dir), _db(self.db)
        _agent_id("distiller_agent_id", self.distiller_agent_id)
        _check_ranges(self)

    @property
    def given(self) -> frozenset[str]:
        """The settings some layer set (flag, ``DISTILL_*``, ``config.toml``) rather than left at
        their defaults: a configured embedder is kept even where another would fit a table."""
        return self.__dict__.get("_given", frozenset())

    @property
    def inputs(self) -> int | None:
        """:func:`distill.settings.core.inputs_key` of what :func:`load_settings` built these from;
        None for settings made otherwise (directly, or by :meth:`replace`)."""
        return self.__dict__.get("_inputs")

    def replace(self, **changes: Any) -> "Settings":
        """A copy with ``changes`` (not validated: the caller's values are already typed)."""
        new = msgspec.structs.replace(self, **changes)
        new.__dict__["_given"] = self.given | changes.keys()
        return new

    @property
    def state(self) -> StateDir:
        """Every path under ``state_dir`` (its one owner: :mod:`distill.tails.state`)."""
        return StateDir(self.state_dir)

    @property
    def store_lock_path(self) -> Path:
        """Serialises this host's writers; an object store's lock lives in the state dir (hosts rely on
        LanceDB's commit protocol, see distill.store.converge)."""
        if isinstance(self.db, str):
            return self.state_dir / "store-write.lock"
        return self.db / ".distill-write.lock"

    def allowed_agents(self) -> frozenset[str] | None:
        """None means every agent (unset, empty, ``*`` or ``all``)."""
        return core.allow_list(self.allowed_agent_ids)

    def agent_is_read(self, agent_id: str) -> bool:
        return core.agent_refusal(agent_id, self.distiller_agent_id, self.allowed_agent_ids) is None

    def dedup_thresholds(self) -> DedupThresholds:
        from .store.dedup import DEFAULT_THRESHOLDS  # calibrated per embedder

        key = self.embedder
        return self.dedup.get(key) or DEFAULT_THRESHOLDS.get(key, DedupThresholds())

    def retry_policy(self):
        from .retry import RetryPolicy

        return RetryPolicy(
            attempts=self.retry_attempts, max_wait=self.retry_max_wait, max_total=self.retry_max_total
        )


FIELDS = Settings.__struct_fields__
# words the configuration takes for booleans (``DISTILL_WORKER_POLL=yes``), beside msgspec's true/false/1/0
_BOOL_WORDS = {"true": True, "1": True, "on": True, "yes": True, "y": True, "t": True,
               "false": False, "0": False, "off": False, "no": False, "n": False, "f": False}
_TYPES = {f.name: f.type for f in msgspec.structs.fields(Settings)}  # resolving the annotations: once
_BOOLS = frozenset(name for name, type_ in _TYPES.items() if type_ is bool)
_JSON_FIELDS = frozenset(name for name, type_ in _TYPES.items() if getattr(type_, "__origin__", None) in (list, dict))


def _path_hook(type_: type, value: Any) -> Any:
    if type_ is Path:
        if isinstance(value, (str, os.PathLike)):
            return Path(os.path.expanduser(os.fspath(value)))
        raise ValueError(f"expected Path, got {type(value).__name__}")
    raise NotImplementedError


def load_settings(**overrides: Any) -> Settings:
    """Build the settings: ``overrides`` are the command-line flags (None = not given)."""
    values, config_path = core.gather(FIELDS, json_names=_JSON_FIELDS, flags=overrides, strict=True)
    where = f"invalid configuration ({config_path} / DISTILL_* / flags): "
    unknown = next((k for k in values if k not in FIELDS), None)
    if unknown is not None:
        raise ConfigError(f"{where}unknown setting `{unknown}`")
    for name in _BOOLS & values.keys():
        word = values[name]
        if isinstance(word, str) and word.strip().lower() in _BOOL_WORDS:
            values[name] = _BOOL_WORDS[word.strip().lower()]
    try:
        settings = msgspec.convert(values, Settings, strict=False, dec_hook=_path_hook)
    except msgspec.ValidationError as exc:  # name the setting and where it may have come from
        message, _, at = str(exc).partition(" - at `$")
        at = at.rstrip("`").lstrip(".")
        raise ConfigError(f"{where}{f'setting {at}: ' if at else ''}{message}") from None
    settings.__dict__["_given"] = frozenset(values)
    settings.__dict__["_inputs"] = core.inputs_key(overrides, config_path)
    return settings
