"""Map: one provider call per chunk, a few at a time, every answer validated candidate by candidate.

An LLM answer that is not the JSON asked for gets one repair attempt (the same transcript and
the parse error); if the repair fails too, the chunk has failed and so has the batch, which
stays pending. The offline rules provider skips prompts: it offers ``extract(chunk)``, and its
candidates go through the same validation as an LLM's.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from ..budget import TokenBudget
from ..errors import TransientError
from .chunking import Chunk, estimate_tokens
from .prompts import SYSTEM, map_prompt, repair_prompt
from .schema import Candidate, MapOutput
from .validate import validate_candidate

OUTPUT_ALLOWANCE = 2048  # tokens reserved for the answer when estimating a call
_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class MapFailed(TransientError):
    """Some chunks gave no usable answer even after a repair; the batch stays pending."""


@dataclass
class ChunkResult:
    chunk: Chunk
    candidates: list[Candidate] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    failed: str | None = None
    calls: int = 0
    tokens: int = 0
    model: str | None = None


def parse_answer(text: str) -> list[Any]:
    """The raw candidate list from an answer, or ValueError saying what is wrong with it."""
    m = _FENCE_RE.match(text or "")
    body = (m.group(1) if m else text or "").strip()
    if not body:
        raise ValueError("the answer was empty")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("memories"), list):
        return data["memories"]
    if isinstance(data, list):
        return data
    shape = type(data).__name__ if not isinstance(data, dict) else f"an object with keys {sorted(data)[:5]}"
    raise ValueError(f'expected {{"memories": [...]}}, got {shape}')


class Mapper:
    def __init__(self, provider: Any, *, provider_name: str, budget: TokenBudget | None):
        self.provider = provider
        self.provider_name = provider_name
        self.budget = budget

    def map_chunk(self, chunk: Chunk) -> ChunkResult:
        res = ChunkResult(chunk)
        if hasattr(self.provider, "extract"):
            raw = self.provider.extract(chunk)
            res.model = getattr(self.provider, "model", None)
        else:
            raw = self._ask_llm(chunk, res)
            if raw is None:
                return res
        res.counters["candidates_proposed"] += len(raw)
        for item in raw:
            cand = validate_candidate(item, chunk, res.counters)
            if cand is not None:
                res.candidates.append(cand)
        return res

    def _ask_llm(self, chunk: Chunk, res: ChunkResult) -> list[Any] | None:
        user = map_prompt(chunk)
        for attempt in range(2):
            resp = self._complete(user, res)
            if resp.finish in ("blocked", "empty") or not (resp.text or "").strip():
                res.counters["answers_blocked" if resp.finish == "blocked" else "answers_empty"] += 1
                return None
            try:
                return parse_answer(resp.text)
            except ValueError as exc:
                res.counters["answers_invalid"] += 1
                if attempt == 0:
                    res.counters["repairs"] += 1
                    user = repair_prompt(chunk, str(exc))
                    continue
                res.failed = f"chunk {chunk.index} of agent {chunk.agent_id}: {exc} (after one repair)"
                res.counters["chunks_failed"] += 1
                return None
        return None

    def _complete(self, user: str, res: ChunkResult):
        from ..llm.base import LLMRequest

        estimate = estimate_tokens(SYSTEM) + estimate_tokens(user) + OUTPUT_ALLOWANCE
        reservation = self.budget.reserve(estimate) if self.budget else 0
        try:
            resp = self.provider.complete(
                LLMRequest(system=SYSTEM, user=user, response_model=MapOutput, temperature=0.2)
            )
        except BaseException:
            if self.budget:
                self.budget.release(reservation)
            raise
        usage = getattr(resp, "usage", None)
        used = int(getattr(usage, "total_tokens", 0) or 0) or (
            int(getattr(usage, "prompt_tokens", 0) or 0) + int(getattr(usage, "output_tokens", 0) or 0)
        )
        if not used:
            used = estimate - OUTPUT_ALLOWANCE + estimate_tokens(resp.text or "")
            res.counters["usage_estimated"] += 1
        if self.budget:
            self.budget.settle(reservation, used, provider=self.provider_name, model=resp.model)
        res.calls += 1
        res.tokens += used
        res.model = resp.model or res.model
        return resp

    def map_all(self, chunks: list[Chunk], *, concurrency: int,
                progress: Callable[[int, int], None] | None = None) -> list[ChunkResult]:
        """Map every chunk; stop at the first provider error or failed chunk (the batch will stay
        pending, so later chunks would be paid for twice)."""
        results: list[ChunkResult] = []
        if not chunks:
            return results
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="distill-map") as pool:
            pending = {pool.submit(self.map_chunk, c) for c in chunks}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                    for fut in done:
                        r = fut.result()  # a provider error or BudgetExceeded propagates
                        results.append(r)
                        if progress:
                            progress(len(results), len(chunks))
                        if r.failed:
                            raise MapFailed(r.failed)
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
        results.sort(key=lambda r: r.chunk.index)
        return results
