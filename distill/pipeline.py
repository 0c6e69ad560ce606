"""The whole path in one call: tails → batch → map → reduce → store → commit.

Invariant served: a byte range is committed only after every memory drawn from it is in the
store. A batch goes through its life by the names of :class:`~distill.tails.life.BatchLife`
(cut, take, map, set aside, drop, store, commit), whose module draws it. Progress is kept per
chunk, beside the batch (:class:`~distill.model.BatchProgress`):
each chunk's validated candidates are written as soon as it is mapped, marked stored once its
memories are in the store, and a rerun maps only the chunks that never finished. A chunk that
fails (its answer unusable after a second try, the provider still failing after the retry
policy, or the server refusing its request for what it holds: too long, a content policy) is
set aside; the rest of the batch is stored and committed up to the first turn the
set-aside chunk holds in each file (see docs/distiller.md). ``distill retry`` tries set-aside
chunks again; ``distill retry --drop`` gives them up and commits their ranges.

When *every* chunk mapped in an attempt failed because the provider did (down, timing out),
nothing is set aside: the batch stays pending as it was and the next run tries it again.
A budget or a permanent provider error (bad key, unknown model) stops the batch the same way.
A retry never stores a memory twice: the store's dedup (exact hash, then vector + lexical
guard) turns a replayed memory into a no-op.

Two processes never distil the same batch at once: each batch is worked on under its own
lock (``batches/.<id>.distill.lock``); a batch held by someone else is skipped, not waited on.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .tails.life import BatchLife
from .budget import TokenBudget
from .config import Settings
from .distiller.chunking import chunk_batch
from .distiller.extract import Extractor, make_extractor
from .distiller.mapper import ChunkResult, Mapper
from .distiller.prompts import PROMPT_VERSION
from .distiller.reduce import Memory, reduce_candidates
from .distiller.schema import Candidate
from .errors import DistillError, LockBusy, MapFailed, SchemaMismatch, StoreFailed, TransientError
from .model import Batch, RunSummary

MAX_BATCHES_PER_RUN = 1000
MAX_WARNINGS = 20  # a summary names this many problems; the counters count them all
Progress = Callable[[str, int, int], None]  # (stage: "map" | "store" | "commit", done, total)


@dataclass
class Distilled:
    memories: list[Memory] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    calls: int = 0
    tokens: int = 0
    chunks: int = 0


def _reduce(settings: Settings, batch: Batch, extractor: Extractor, candidates: list[Candidate],
            counters: Counter) -> list[Memory]:
    messages = {m.id: m for agent in batch.agents for m in agent.messages}
    return reduce_candidates(
        candidates, messages, max_per_agent=settings.max_per_agent, max_global=settings.max_global,
        provider=extractor.name, model=extractor.model, prompt_version=PROMPT_VERSION, counters=counters,
    )


def distill_batch(settings: Settings, batch: Batch, *, extractor: Extractor, budget: TokenBudget | None,
                  progress: Progress | None = None) -> Distilled:
    """Map and reduce one whole batch in memory; raises MapFailed (and returns nothing) if any
    chunk failed. The pipeline uses :func:`_process`, which keeps progress per chunk."""
    chunks = chunk_batch(batch.agents, chunk_tokens=settings.chunk_tokens,
                         overlap_turns=settings.chunk_overlap_turns)
    step = (lambda done, total: progress("map", done, total)) if progress else None
    results = Mapper(extractor, budget=budget).map_all(chunks, concurrency=settings.llm_concurrency, progress=step)
    out = Distilled(chunks=len(chunks))
    candidates: list[Candidate] = []
    for r in results:
        out.counters.update(r.counters)
        out.calls += r.calls
        out.tokens += r.tokens
        candidates.extend(r.candidates)
    failed = [r.failed for r in results if r.failed]
    if failed:
        raise MapFailed("; ".join(failed))
    out.memories = _reduce(settings, batch, extractor, candidates, out.counters)
    out.counters["chunks"] += len(chunks)
    return out


def _map(settings: Settings, life: BatchLife, *, extractor: Extractor, budget: TokenBudget | None,
         retry: bool, progress: Progress | None, out: Distilled) -> None:
    """Map the batch's chunks that have no result yet (and the set-aside ones when retrying).
    Failures are set aside only if some chunk of this attempt got an answer: a provider that
    is down sets nothing aside, it raises and the batch waits."""
    chunks = chunk_batch(life.batch.agents, chunk_tokens=life.progress.chunk_tokens,
                         overlap_turns=life.progress.overlap_turns)
    out.chunks = len(chunks)
    todo = set(life.to_map([c.index for c in chunks], retry))
    if not todo:
        return

    def keep(r: ChunkResult) -> None:
        out.counters.update(r.counters)
        out.calls += r.calls
        out.tokens += r.tokens
        if not r.failed:
            life.mapped(r.chunk.index, r.chunk.agent_id, [c.model_dump() for c in r.candidates], paid=r.calls > 0)

    step = (lambda done, total: progress("map", done, total)) if progress else None
    results = Mapper(extractor, budget=budget).map_all([c for c in chunks if c.index in todo],
                                                       concurrency=settings.llm_concurrency,
                                                       progress=step, on_result=keep)
    failed = [r for r in results if r.failed]
    if not failed:
        return
    if all(r.transient for r in failed) and len(failed) == len(results):
        raise TransientError("; ".join(r.failed for r in failed))
    life.set_aside([(r.chunk.index, r.chunk.agent_id, r.failed, r.chunk.messages) for r in failed])
    out.counters["chunks_set_aside"] += len(failed)


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


def store_memories(settings: Settings, memories: list[Memory], counters: Counter | None = None) -> tuple[int, int]:
    """Write through the store's dedup; returns (added, duplicate). Opens nothing if empty.
    ``counters`` gets how many added memories supersede or contradict a stored one."""
    if not memories:
        return 0, 0
    from .store import MemoryDraft
    from .text.keywords import keyword_draft  # each memory named in both languages (issue 23)

    drafts = [keyword_draft(MemoryDraft(**m.model_dump())) for m in memories]
    try:
        store = open_store(settings)
        judged_before = Counter(store.lifecycle)
        outcomes = store.add(drafts)
    except DistillError:
        raise
    except Exception as exc:  # LanceDB / OS / embedder: name the store and keep the batch pending
        raise StoreFailed(f"could not write memories to the store at {settings.db} "
                          f"(DISTILL_DB, table {settings.table!r}): {type(exc).__name__}: {exc}") from exc
    added = sum(1 for o in outcomes if o.status == "added")
    if counters is not None:
        counters.update(Counter(store.lifecycle) - judged_before)  # judge_calls, judge_failed
        counters.update(f"memories_{o.relation}" for o in outcomes if o.relation)
    return added, len(outcomes) - added


def batch_summary(batch: Batch) -> RunSummary:
    return RunSummary(
        files=len({r.path for r in batch.ranges}) or len(batch.touched_files),
        bytes=sum(r.end - r.start for r in batch.ranges),
        turns=sum(len(a.messages) for a in batch.agents),
    )


def _process(settings: Settings, path: Path, *, extractor: Extractor, budget: TokenBudget | None, commit: bool,
             progress: Progress | None, retry_failed: bool = False, drop_failed: bool = False) -> RunSummary:
    """One pending batch through its life (:mod:`distill.tails.life`): map, store, commit."""
    try:
        life = BatchLife.take(settings, path)
    except LockBusy:
        return RunSummary(action="busy", counters={"batches_busy": 1})
    if life is None:  # committed or aborted by whoever held it before us
        return RunSummary(action="noop")
    try:
        batch = life.batch
        summary = batch_summary(batch)
        result = Distilled()
        try:
            _map(settings, life, extractor=extractor, budget=budget, retry=retry_failed, progress=progress,
                 out=result)
            if drop_failed:
                result.counters["chunks_dropped"] += life.drop()
            candidates = [Candidate.model_validate(c) for c in life.mapped_candidates()]
            result.memories = _reduce(settings, batch, extractor, candidates, result.counters)
            if progress:
                progress("store", 0, len(result.memories))
            added, dup = store_memories(settings, result.memories, result.counters)
            life.stored(commit_next=commit)
        except DistillError as exc:
            exc.args = (f"batch {path} left pending, nothing from it committed: {exc}",)
            raise
        summary.memories_added, summary.memories_duplicate = added, dup
        summary.llm_calls, summary.tokens = result.calls, result.tokens
        result.counters["chunks"] += result.chunks
        set_aside = life.waiting()
        if set_aside:
            result.counters["chunks_waiting"] = set_aside
        summary.counters = dict(Counter(batch.counters) + result.counters)
        summary.action = "distilled"
        if commit:
            held = life.held()
            done = life.commit()
            # what this call committed, not the batch's size: a held file, or a batch committed
            # up to its held turns on an earlier run, adds only the bytes that moved now
            summary.files, summary.bytes, summary.turns = done.files, done.bytes, done.turns
            summary.action = "partial" if held else "committed"
            if held and not (done.files or result.calls or added or dup or result.counters["chunks_dropped"]):
                # a batch waiting on its set-aside chunks, and nothing done to it: say nothing
                # happened (its waiting chunks are still counted, so the summary recalls them)
                summary.action = "noop"
                summary.counters = {"chunks_waiting": set_aside}
            if progress:
                progress("commit", 1, 1)
        return summary
    finally:
        life.release()


def _add(total: RunSummary, part: RunSummary) -> None:
    for name in ("files", "bytes", "turns", "memories_added", "memories_duplicate", "llm_calls", "tokens"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    total.counters = dict(Counter(total.counters) + Counter(part.counters))
    _warn(total, part.errors)


def _warn(total: RunSummary, errors: list[str]) -> None:
    """Keep a run's warnings (each once, the first ``MAX_WARNINGS``): a run that distils many
    batches meets the same unreadable folder in each."""
    for e in errors:
        if e not in total.errors and len(total.errors) < MAX_WARNINGS:
            total.errors.append(e)


def distill_batch_file(settings: Settings, path: Path, *, commit: bool,
                       progress: Progress | None = None) -> RunSummary:
    """``distill distill --batch-file F``: distil one batch made by ``run``; commit it if asked."""
    started = time.monotonic()
    path = BatchLife.own_pending(settings, Path(path), "distil")
    extractor = make_extractor(settings)
    try:
        summary = _process(settings, path, extractor=extractor, budget=TokenBudget(settings),
                           commit=commit, progress=progress)
    finally:
        extractor.close()
    if summary.action == "busy":
        raise LockBusy(f"{path} is being distilled by another process; try again when it is done")
    summary.seconds = time.monotonic() - started
    return summary


def run_distill(settings: Settings, *, only_files: set[Path] | None = None,
                file_filter: Callable[[Path, os.stat_result], bool] | None = None,
                cursor_path: Path | None = None, read_limit: Callable[[str], int | None] | None = None,
                progress: Progress | None = None) -> RunSummary:
    """Retry pending batches, then cut and distil new ones until the tails are drained.

    The total is recorded as the last run, also when the run fails (with the error, and what
    was committed and spent before it)."""
    started = time.monotonic()
    extractor = make_extractor(settings)
    budget = TokenBudget(settings)
    with _recorded_run(settings, extractor, budget, started) as (total, actions):
        for path in BatchLife.pending(settings, cursor_path=cursor_path):
            try:
                part = _process(settings, Path(path), extractor=extractor, budget=budget, commit=True,
                                progress=progress)
            except SchemaMismatch as exc:  # a damaged batch file must not stall every later run
                total.counters["batches_unreadable"] = total.counters.get("batches_unreadable", 0) + 1
                _warn(total, [str(exc)])
                continue
            actions[part.action] += 1
            _add(total, part)
        for _ in range(MAX_BATCHES_PER_RUN):
            made = BatchLife.cut(settings, only_files=only_files, file_filter=file_filter,
                                cursor_path=cursor_path, read_limit=read_limit)
            _warn(total, made.errors)
            if made.action != "created" or not made.batch_file:
                break
            part = _process(settings, Path(made.batch_file), extractor=extractor, budget=budget, commit=True,
                            progress=progress)
            actions[part.action] += 1
            _add(total, part)
            if part.action not in ("committed", "partial", "noop"):
                break
    return total


@contextmanager
def _recorded_run(settings: Settings, extractor: Extractor, budget: TokenBudget,
                  started: float) -> Iterator[tuple[RunSummary, Counter]]:
    """The total of a run and the actions of its batches; on the way out the extractor is closed
    and the total closed and recorded as the last run -- with the error, if the run raised."""
    total, actions = RunSummary(action="noop"), Counter[str]()
    try:
        try:
            yield total, actions
        finally:
            extractor.close()
    except Exception as exc:
        _record(settings, _close(total, actions, budget, started), error=exc)
        raise
    _record(settings, _close(total, actions, budget, started))


def _close(total: RunSummary, actions: Counter, budget: TokenBudget | None, started: float) -> RunSummary:
    """A run's total: ``partial`` when a batch it worked on still has chunks waiting, ``committed``
    when it committed batches whole, else ``noop``; calls and tokens as the budget booked them
    (so a run that failed mid-batch still shows what it spent)."""
    total.action = "partial" if actions["partial"] else "committed" if actions["committed"] else "noop"
    total.counters["batches_committed"] = actions["committed"]
    if actions["partial"]:
        total.counters["batches_partial"] = actions["partial"]
    if budget is not None and budget.calls > total.llm_calls:
        total.llm_calls, total.tokens = budget.calls, max(total.tokens, budget.run_used)
    total.seconds = time.monotonic() - started
    return total


def _record(settings: Settings, total: RunSummary, error: BaseException | None = None) -> None:
    """The last run for `distill status`; a failure to write it never hides the run's own error."""
    from .tails.ledger import record_last_run

    message = (str(error) or type(error).__name__) if error is not None else None
    try:
        record_last_run(settings, total, error=message)
    except OSError:
        if error is None:
            raise


def set_aside_batches(settings: Settings, cursor_path: Path | None = None) -> list[Path]:
    """Pending batches with chunks set aside (read-only)."""
    return BatchLife.with_set_aside(settings, cursor_path)


def retry_failed(settings: Settings, *, drop: bool = False, batch_file: Path | None = None,
                 progress: Progress | None = None) -> RunSummary:
    """``distill retry``: map the set-aside chunks again (or, with ``drop``, give them up), store
    what they yield and commit every range no chunk holds any more. One token budget for the
    whole command, as for ``run --distill``; the total is recorded as the last run (also when
    it fails), unless there was nothing to retry."""
    started = time.monotonic()
    total = RunSummary(action="noop")
    if batch_file:  # only a batch pending here, and only for its set-aside chunks
        path = BatchLife.own_pending(settings, Path(batch_file), "retry")
        paths = [path] if BatchLife.has_set_aside(path) else []
    else:
        paths = set_aside_batches(settings)
    if not paths:
        total.seconds = time.monotonic() - started
        return total
    extractor = make_extractor(settings)
    budget = TokenBudget(settings)  # one for the whole command, as run_distill's
    with _recorded_run(settings, extractor, budget, started) as (total, actions):
        for path in paths:
            part = _process(settings, path, extractor=extractor, budget=budget, commit=True,
                            progress=progress, retry_failed=not drop, drop_failed=drop)
            actions[part.action] += 1
            _add(total, part)
    return total
