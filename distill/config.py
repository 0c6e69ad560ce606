"""The full settings model for every command, the daemon and the tests.

Where each value comes from (flags > ``DISTILL_*`` environment > ``config.toml`` > defaults)
is decided once, in :mod:`distill.settings.core`; this model validates the result. Defaults
follow the OpenClaw layout, so an OpenClaw user configures nothing. Relative paths in
``config.toml`` are resolved against the folder holding that file, so a state directory
(like ``state.example/``) can carry its own sample transcripts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError
from .settings import core
from .settings.core import AGENT_ID_RE
from .tails.state import StateDir

DEFAULT_STATE_DIR = Path(core.DEFAULT_STATE_DIR)
DEFAULT_AGENTS_DIR = Path(core.DEFAULT_AGENTS_DIR)
DEFAULT_DB = Path(core.DEFAULT_DB)

Format = Literal["auto", "openclaw", "claude-code", "codex"]


class SourceRoot(BaseModel):
    """An extra transcript root (Claude Code, Codex CLI, another OpenClaw tree).

    OpenClaw's own root (``agents_dir``) is implicit: its agent id is the folder name in
    ``<agents_dir>/<agentId>/sessions/``. Other roots say which agent their memories belong to.
    """

    path: Path
    agent_id: str
    format: Format = "auto"
    glob: str = "**/*.jsonl"

    @field_validator("agent_id")
    @classmethod
    def _valid_agent(cls, v: str) -> str:
        if not AGENT_ID_RE.match(v):
            raise ValueError(f"agent id {v!r} must match [A-Za-z0-9._-]{{1,64}}")
        return v

    @field_validator("path")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return Path(os.path.expanduser(str(v)))


class DedupThresholds(BaseModel):
    """Near-duplicate decision (``distill.store.dedup.judge``; docs/dedup.md says how each is used).

    ``cosine_cross`` applies when one memory is Chinese and the other English and both name
    the same entity or number (translations embed further apart than paraphrases); None
    means ``cosine``, which is also what a translation naming nothing in common must reach.
    ``lexical_zh`` is the shared-wording floor between two Chinese memories (character bigrams
    overlap less than English words); None means ``lexical``."""

    cosine: float = 0.90
    lexical: float = 0.5
    cosine_cross: float | None = None
    lexical_zh: float | None = None


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    # --- where things live
    state_dir: Path = DEFAULT_STATE_DIR
    agents_dir: Path = DEFAULT_AGENTS_DIR
    sources: list[SourceRoot] = Field(default_factory=list)
    db: Path = DEFAULT_DB
    table: str = "memories"

    # --- which agents
    distiller_agent_id: str = core.DEFAULT_DISTILLER
    allowed_agent_ids: str = ""  # also OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS; comma-separated, ""/"*"/"all" = every agent

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
    dedup: dict[str, DedupThresholds] = Field(default_factory=dict)
    store_lock_timeout: float = 120.0  # seconds a writer waits for the store's write lock
    store_compact_small_fragments: int = 32  # compact after a write once this many small fragments exist
    store_cleanup_grace_minutes: float = 60.0  # compaction keeps old versions this long for live readers
    store_vector_index_min_rows: int = 5_000  # compact() builds an ANN index for search from this many rows
    # Lance file format of tables distill creates: 2.0 is what memory-lancedb-pro's pinned Node client
    # (@lancedb/lancedb 0.26.2) writes itself (it reads 2.1 too, panics on 2.2); "stable" = this LanceDB's default
    store_file_format: Literal["2.0", "2.1", "2.2", "stable"] = "2.0"

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
    worker_watch_sources: bool = False
    worker_max_attempts: int = 5
    worker_backoff_seconds: float = 30.0
    worker_done_retention_days: float = 7.0
    worker_poll: bool = False  # force the polling observer (no inotify)
    worker_compact_interval: float = 3600.0  # seconds between store compactions (only after new memories)
    worker_stall_seconds: float = 1800.0  # a run silent this long stops the watchdog pings (systemd restarts us)
    worker_full_pass_interval: float = 0.0  # seconds between idle catch-up passes over every root; 0 = off

    @field_validator("state_dir", "agents_dir", "db")
    @classmethod
    def _expand_path(cls, v: Path) -> Path:
        return Path(os.path.expanduser(str(v)))

    @field_validator("distiller_agent_id")
    @classmethod
    def _valid_distiller(cls, v: str) -> str:
        if not AGENT_ID_RE.match(v):
            raise ValueError(f"agent id {v!r} must match [A-Za-z0-9._-]{{1,64}}")
        return v

    @property
    def state(self) -> StateDir:
        """Every path under ``state_dir`` (its one owner: :mod:`distill.tails.state`)."""
        return StateDir(self.state_dir)

    @property
    def store_lock_path(self) -> Path:
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


_JSON_FIELDS = frozenset(n for n, f in Settings.model_fields.items()
                         if getattr(f.annotation, "__origin__", None) in (list, dict))


def load_settings(**overrides: Any) -> Settings:
    """Build the settings: ``overrides`` are the command-line flags (None = not given)."""
    values, config_path = core.gather(Settings.model_fields, json_names=_JSON_FIELDS, flags=overrides, strict=True)
    try:
        return Settings(**values)
    except ValidationError as exc:  # name the setting and where it may have come from
        raise ConfigError(f"invalid configuration ({config_path} / DISTILL_* / flags):\n{exc}") from exc
