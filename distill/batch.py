"""A batch: the new turns of a run, and exactly which byte ranges of which files they cover.

The keys of the script this replaces (``version``, ``createdAtMs``, ``agents[].agentId``,
``agents[].messages[].{ts, role, text}``, ``touchedFiles``) are kept so that cron prompts
written for it keep working; provenance is added per message and per file range.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BatchMessage(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str  # stable across runs: "<file key>:<start byte>", the evidence id of a turn
    ts: int  # Unix milliseconds
    role: str  # "user" | "assistant" | "tool"
    text: str
    sessionId: str
    file: str
    start: int
    end: int
    entryId: str | None = None


class BatchAgent(BaseModel):
    agentId: str
    messages: list[BatchMessage] = Field(default_factory=list)


class FileRange(BaseModel):
    """``[start, end)`` of one file (known by device + inode) that this batch covers."""

    path: str
    dev: int
    inode: int
    start: int
    end: int
    agentId: str


class Batch(BaseModel):
    version: int = 2
    batchId: str
    createdAtMs: int
    agents: list[BatchAgent] = Field(default_factory=list)
    touchedFiles: list[str] = Field(default_factory=list)
    ranges: list[FileRange] = Field(default_factory=list)
    counters: dict[str, int] = Field(default_factory=dict)
