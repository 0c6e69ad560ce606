"""Map: one extraction per chunk, a few at a time, every candidate validated on its own.

The mapper does not know what kind of extractor it runs (the offline rules or an LLM behind a
provider, :mod:`.extract`): it runs them concurrently, validates what each proposes and
counts a chunk that yielded no usable answer as failed.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .chunking import Chunk
from .extract import Extractor
from .schema import Candidate
from .validate import validate_chunk

if TYPE_CHECKING:
    from ..budget import TokenBudget


@dataclass
class ChunkResult:
    chunk: Chunk
    candidates: list[Candidate] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    failed: str | None = None
    transient: bool = False  # failed because the provider did (not because of its answer)
    calls: int = 0
    tokens: int = 0


class Mapper:
    def __init__(self, extractor: Extractor, *, budget: "TokenBudget | None"):
        self.extractor = extractor
        self.budget = budget

    def map_chunk(self, chunk: Chunk) -> ChunkResult:
        ex = self.extractor.extract(chunk, self.budget)
        res = ChunkResult(chunk, counters=ex.counters, transient=ex.transient, calls=ex.calls, tokens=ex.tokens)
        if ex.failed:
            res.failed = f"{_where(chunk)}: {ex.failed}"
            res.counters["chunks_failed"] += 1
            return res
        res.candidates = validate_chunk(ex.candidates, chunk, res.counters, written=self.extractor.written)
        return res

    def map_all(self, chunks: list[Chunk], *, concurrency: int,
                progress: Callable[[int, int], None] | None = None,
                on_result: Callable[[ChunkResult], None] | None = None) -> list[ChunkResult]:
        """Map every chunk, a failed one included (its result says why). A provider error that
        no retry can fix (a bad key, the budget) stops the lot and propagates -- but only after
        the calls already in flight have finished and ``on_result`` has seen every answer that
        came back, so nothing paid for is lost; chunks not yet started are not sent."""
        results: list[ChunkResult] = []
        if not chunks:
            return results
        error: BaseException | None = None
        # Set by the worker that met the error, before it can take another chunk (or by this
        # thread, interrupted): a chunk not yet started is then never sent. Cancelling futures
        # from this thread came too late when the server answers fast (a worker freed by the
        # error started the next chunk before this thread was scheduled again).
        stopped = threading.Event()

        def map_one(chunk: Chunk) -> ChunkResult | None:
            if stopped.is_set():
                return None
            try:
                return self.map_chunk(chunk)
            except BaseException:
                stopped.set()
                raise

        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="distill-map") as pool:
            futures = [pool.submit(map_one, c) for c in chunks]
            try:
                for fut in as_completed(futures):
                    try:
                        r = fut.result()
                    except Exception as exc:  # map_one has stopped the rest; keep collecting what is in flight
                        error = error or exc
                        continue
                    if r is None:  # not sent: the lot was stopped first
                        continue
                    results.append(r)
                    if on_result:
                        on_result(r)
                    if progress:
                        progress(len(results), len(chunks))
            except BaseException:  # KeyboardInterrupt, or on_result failing: stop at once
                stopped.set()
                raise
        if error is not None:
            raise error
        results.sort(key=lambda r: r.chunk.index)
        return results


def _where(chunk: Chunk) -> str:
    return f"chunk {chunk.index} of agent {chunk.agent_id}"
