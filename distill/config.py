"""One settings model for every command, the daemon and the tests.

Precedence, highest first: command-line flags (passed as keyword overrides), environment
(``DISTILL_<FIELD>``, plus ``OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS`` as in the script this
replaces), ``config.toml`` (``DISTILL_CONFIG`` or ``<state_dir>/config.toml``), defaults.
Defaults follow the OpenClaw layout, so an OpenClaw user configures nothing.

Relative paths in ``config.toml`` are resolved against the folder holding that file, so a
state directory (like ``state.example/``) can carry its own sample transcripts.
"""

from __future__ import annotations

import os
import re
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .errors import ConfigError

HOME = Path.home()
DEFAULT_STATE_DIR = HOME / ".openclaw" / "state" / "jsonl-distill"
DEFAULT_AGENTS_DIR = HOME / ".openclaw" / "agents"
DEFAULT_DB = HOME / ".openclaw" / "memory" / "lancedb-pro"

AGENT_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

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
    """Near-duplicate decision: cosine at least ``cosine`` and the lexical guard agrees.

    ``cosine_cross`` applies when one memory is Chinese and the other English (translations
    embed further apart than paraphrases); None means ``cosine``. See docs/dedup.md."""

    cosine: float = 0.90
    lexical: float = 0.5
    cosine_cross: float | None = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DISTILL_", extra="forbid", populate_by_name=True, validate_default=True
    )

    # --- where things live
    state_dir: Path = DEFAULT_STATE_DIR
    agents_dir: Path = DEFAULT_AGENTS_DIR
    sources: list[SourceRoot] = Field(default_factory=list)
    db: Path = DEFAULT_DB
    table: str = "memories"

    # --- which agents
    distiller_agent_id: str = "memory-distiller"
    allowed_agent_ids: str = Field(
        default="",
        validation_alias=AliasChoices(
            "allowed_agent_ids", "DISTILL_ALLOWED_AGENT_IDS", "OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS"
        ),
    )

    # --- reading transcripts
    max_line_bytes: int = 8 * 1024 * 1024
    max_turn_chars: int = 6000
    max_tool_trace_chars: int = 300
    max_messages_per_agent: int = 2000
    state_lock_wait: float = 10.0  # seconds `run`/`commit` wait for <state>/.lock, then refuse
    batch_retention_days: float = 14.0  # committed/aborted batch files kept this long

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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))

    # --- derived paths (one place, so no module invents its own)
    @property
    def cursor_path(self) -> Path:
        return self.state_dir / "cursor.json"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / ".lock"

    @property
    def batches_dir(self) -> Path:
        return self.state_dir / "batches"

    @property
    def queue_dir(self) -> Path:
        return self.state_dir / "queue"

    @property
    def store_lock_path(self) -> Path:
        return self.db / ".distill-write.lock"

    @property
    def usage_path(self) -> Path:
        return self.state_dir / "usage.json"

    def allowed_agents(self) -> frozenset[str] | None:
        """None means every agent (unset, empty, ``*`` or ``all``)."""
        raw = self.allowed_agent_ids.strip()
        if raw in ("", "*", "all"):
            return None
        return frozenset(a.strip() for a in raw.split(",") if a.strip())

    def agent_is_read(self, agent_id: str) -> bool:
        """The distiller never reads itself; the allow-list narrows the rest."""
        if agent_id == self.distiller_agent_id or not AGENT_ID_RE.match(agent_id):
            return False
        allowed = self.allowed_agents()
        return allowed is None or agent_id in allowed

    def dedup_thresholds(self) -> DedupThresholds:
        from .store.calibration import DEFAULT_THRESHOLDS  # calibrated per embedder

        key = self.embedder
        return self.dedup.get(key) or DEFAULT_THRESHOLDS.get(key, DedupThresholds())

    def retry_policy(self):
        from .retry import RetryPolicy

        return RetryPolicy(
            attempts=self.retry_attempts, max_wait=self.retry_max_wait, max_total=self.retry_max_total
        )


_config_file: ContextVar[Path | None] = ContextVar("distill_config_file", default=None)


class _TomlSource(PydanticBaseSettingsSource):
    """``config.toml`` values, with relative paths resolved against the file's folder."""

    PATH_KEYS = ("state_dir", "agents_dir", "db")

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _config_file.get()
        if path is None or not path.is_file():
            return {}
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        base = path.parent
        for key in self.PATH_KEYS:
            if isinstance(data.get(key), str):
                data[key] = str(_resolve(base, data[key]))
        for src in data.get("sources", []) or []:
            if isinstance(src, dict) and isinstance(src.get("path"), str):
                src["path"] = str(_resolve(base, src["path"]))
        return data


def _resolve(base: Path, value: str) -> Path:
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else (base / p).resolve()


def load_settings(**overrides: Any) -> Settings:
    """Build the settings: ``overrides`` are the command-line flags (None = not given)."""
    overrides = {k: v for k, v in overrides.items() if v is not None}
    state_dir = Path(
        os.path.expanduser(str(overrides.get("state_dir") or os.environ.get("DISTILL_STATE_DIR") or ""))
    ) if (overrides.get("state_dir") or os.environ.get("DISTILL_STATE_DIR")) else None
    config = os.environ.get("DISTILL_CONFIG")
    if config:
        config_path = Path(os.path.expanduser(config))
        if not config_path.is_file():
            raise ConfigError(f"DISTILL_CONFIG points at {config_path}, which is not a file")
    else:
        config_path = (state_dir or DEFAULT_STATE_DIR) / "config.toml"
    token = _config_file.set(config_path)
    try:
        settings = Settings(**overrides)
    except ConfigError:
        raise
    except Exception as exc:  # pydantic's ValidationError: name the setting and the source
        raise ConfigError(f"invalid configuration ({config_path} / DISTILL_* / flags):\n{exc}") from exc
    finally:
        _config_file.reset(token)
    if state_dir is not None:
        # the config file may not move the state dir away from where it was found
        settings.state_dir = state_dir
    return settings
