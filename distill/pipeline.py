"""The whole path in one call: tails → batch → map → reduce → store → commit.

Invariant served: a batch is committed (its cursor ranges advanced) only after every memory
drawn from it is in the store; any failure (provider error, budget, a failed chunk, the
store) leaves it pending, and the next run retries it first. A retry never stores a memory
twice: the rules provider is deterministic, and the store's dedup (exact hash, then vector +
lexical guard) turns a replayed memory into a no-op.

Two processes never distil the same batch at once: each batch is worked on under its own
lock (``batches/.<id>.distill.lock``); a batch held by someone else is skipped, not waited on.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .batch import Batch
from .budget import TokenBudget
from .config import Settings
from .distiller.chunking import chunk_batch
from .distiller.mapper import Mapper
from .distiller.prompts import PROMPT_VERSION
from .distiller.reduce import Memory, reduce_candidates
from .errors import ConfigError, DistillError, LockBusy, SchemaMismatch
from .lock import FileLock
from .summary import RunSummary

MAX_BATCHES_PER_RUN = 1000
Progress = Callable[[str, int, int], None]  # (stage: "map" | "store" | "commit", done, total)


class StoreFailed(DistillError):
    """The store raised something that is not one of our errors (disk, LanceDB, embedder)."""


@dataclass
class Distilled:
    memories: list[Memory] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    calls: int = 0
    tokens: int = 0
    chunks: int = 0


def distill_batch(settings: Settings, batch: Batch, *, provider: Any, budget: TokenBudget | None,
                  progress: Progress | None = None) -> Distilled:
    """Map and reduce one batch; raises (and stores nothing) if any chunk failed."""
    chunks = chunk_batch(batch.agents, chunk_tokens=settings.chunk_tokens,
                         overlap_turns=settings.chunk_overlap_turns)
    mapper = Mapper(provider, provider_name=getattr(provider, "name", settings.llm), budget=budget)
    step = (lambda done, total: progress("map", done, total)) if progress else None
    results = mapper.map_all(chunks, concurrency=settings.llm_concurrency, progress=step)
    out = Distilled(chunks=len(chunks))
    candidates = []
    model = getattr(provider, "model", None)
    for r in results:
        out.counters.update(r.counters)
        out.calls += r.calls
        out.tokens += r.tokens
        candidates.extend(r.candidates)
        model = r.model or model
    messages = {m.id: m for agent in batch.agents for m in agent.messages}
    out.memories = reduce_candidates(
        candidates, messages, max_per_agent=settings.max_per_agent, max_global=settings.max_global,
        provider=getattr(provider, "name", settings.llm), model=model, prompt_version=PROMPT_VERSION,
        counters=out.counters,
    )
    out.counters["chunks"] += len(chunks)
    return out


_stores: dict[tuple, Any] = {}


def open_store(settings: Settings):
    """One store per process and table, reused across batches and tasks.

    Its dedup copy of the vectors loads on first write (seconds at 100k rows) and then
    follows other writers incrementally, so the daemon and a long backfill must not reopen
    the store for every batch."""
    from .store import MemoryStore

    key = (str(settings.db), settings.table, settings.embedder, settings.embed_model, settings.embed_dimensions)
    store = _stores.get(key)
    if store is None:
        store = _stores[key] = MemoryStore.open(settings)
    return store


def store_memories(settings: Settings, memories: list[Memory]) -> tuple[int, int]:
    """Write through the store's dedup; returns (added, duplicate). Opens nothing if empty."""
    if not memories:
        return 0, 0
    from .store import MemoryDraft

    drafts = [MemoryDraft(**m.model_dump()) for m in memories]
    try:
        outcomes = open_store(settings).add(drafts)
    except DistillError:
        raise
    except Exception as exc:  # LanceDB / OS / embedder: name the store and keep the batch pending
        raise StoreFailed(f"could not write memories to the store at {settings.db} "
                          f"(DISTILL_DB, table {settings.table!r}): {type(exc).__name__}: {exc}") from exc
    added = sum(1 for o in outcomes if o.status == "added")
    return added, len(outcomes) - added


def batch_summary(batch: Batch) -> RunSummary:
    return RunSummary(
        files=len({r.path for r in batch.ranges}) or len(batch.touchedFiles),
        bytes=sum(r.end - r.start for r in batch.ranges),
        turns=sum(len(a.messages) for a in batch.agents),
    )


def _process(settings: Settings, path: Path, *, provider: Any, budget: TokenBudget | None, commit: bool,
             progress: Progress | None) -> RunSummary:
    from .batch import commit_batch, load_batch

    lock_path = path.with_name(f".{path.stem}.distill.lock")
    try:
        guard = FileLock(lock_path, purpose=f"distilling {path.name}").acquire(timeout=0)
    except LockBusy:
        return RunSummary(action="busy", counters={"batches_busy": 1})
    try:
        if not path.exists():  # committed or aborted by whoever held the lock before us
            lock_path.unlink(missing_ok=True)
            return RunSummary(action="noop")
        batch = load_batch(path)
        summary = batch_summary(batch)
        try:
            result = distill_batch(settings, batch, provider=provider, budget=budget, progress=progress)
            if progress:
                progress("store", 0, len(result.memories))
            added, dup = store_memories(settings, result.memories)
        except DistillError as exc:
            exc.args = (f"batch {path} left pending, nothing from it committed: {exc}",)
            raise
        summary.memories_added, summary.memories_duplicate = added, dup
        summary.llm_calls, summary.tokens = result.calls, result.tokens
        summary.counters = dict(Counter(batch.counters) + result.counters)
        summary.action = "distilled"
        if commit:
            commit_batch(settings, path)
            summary.action = "committed"
            lock_path.unlink(missing_ok=True)  # whoever waits on it finds the batch gone and stops
            if progress:
                progress("commit", 1, 1)
        return summary
    finally:
        guard.release()


def _add(total: RunSummary, part: RunSummary) -> None:
    for name in ("files", "bytes", "turns", "memories_added", "memories_duplicate", "llm_calls", "tokens"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    total.counters = dict(Counter(total.counters) + Counter(part.counters))


def distill_batch_file(settings: Settings, path: Path, *, commit: bool,
                       progress: Progress | None = None) -> RunSummary:
    """``distill distill --batch-file F``: distil one batch made by ``run``; commit it if asked."""
    from .llm.base import get_provider

    started = time.monotonic()
    path = Path(path)
    if not path.is_file():
        for state in ("done", "aborted"):
            if (settings.batches_dir / state / path.name).is_file():
                raise DistillError(f"batch {path.name} was already {'committed' if state == 'done' else 'aborted'} "
                                   f"(it is in {settings.batches_dir / state}); there is nothing to distil")
        raise ConfigError(f"batch file {path} does not exist; `distill run` prints the batch file it made")
    provider = get_provider(settings)
    try:
        summary = _process(settings, path, provider=provider, budget=TokenBudget(settings),
                           commit=commit, progress=progress)
    finally:
        provider.close()
    if summary.action == "busy":
        raise LockBusy(f"{path} is being distilled by another process; try again when it is done")
    summary.seconds = time.monotonic() - started
    return summary


def run_distill(settings: Settings, *, only_files: set[Path] | None = None,
                file_filter: Callable[[Path, os.stat_result], bool] | None = None,
                cursor_path: Path | None = None, read_limit: Callable[[str], int | None] | None = None,
                progress: Progress | None = None) -> RunSummary:
    """Retry pending batches, then cut and distil new ones until the tails are drained."""
    from .batch import create_batch, pending_batches, record_last_run
    from .llm.base import get_provider

    started = time.monotonic()
    total = RunSummary(action="noop")
    provider = get_provider(settings)
    budget = TokenBudget(settings)
    committed = 0
    try:
        for path in pending_batches(settings, cursor_path=cursor_path):
            try:
                part = _process(settings, Path(path), provider=provider, budget=budget, commit=True,
                                progress=progress)
            except SchemaMismatch:  # a damaged batch file must not stall every later run
                total.counters["batches_unreadable"] = total.counters.get("batches_unreadable", 0) + 1
                continue
            committed += part.action == "committed"
            _add(total, part)
        for _ in range(MAX_BATCHES_PER_RUN):
            made = create_batch(settings, only_files=only_files, file_filter=file_filter,
                                cursor_path=cursor_path, read_limit=read_limit)
            if made.action != "created" or not made.batchFile:
                break
            part = _process(settings, Path(made.batchFile), provider=provider, budget=budget, commit=True,
                            progress=progress)
            committed += part.action == "committed"
            _add(total, part)
            if part.action != "committed":
                break
    finally:
        provider.close()
    total.action = "committed" if committed else "noop"
    total.counters["batches_committed"] = committed
    total.seconds = time.monotonic() - started
    record_last_run(settings, total)
    return total
