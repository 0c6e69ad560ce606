"""Map: one provider call per chunk, a few at a time, every answer validated candidate by candidate.

A chunk has failed, and nothing from it may be committed, when its answer is blocked, empty
(twice), not the JSON asked for even after one repair, or a list whose every candidate breaks
the schema (after one repair) -- or when the provider kept failing after the retry policy.
``{"memories": []}`` is an answer: the model found nothing worth keeping.

An answer cut off by the token cap (or by a server's own limit) is salvaged: the complete
items before the cut are kept (``answers_salvaged``), the torn one is dropped.

The offline rules provider skips prompts: it offers ``extract(chunk)``, and its candidates
go through the same validation as an LLM's.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson
from pydantic import ValidationError

from ..budget import TokenBudget
from ..errors import TransientError
from .chunking import Chunk, estimate_tokens
from .prompts import SYSTEM, map_prompt, repair_prompt
from .schema import Candidate, CandidateOut, output_token_cap, response_schema
from .validate import validate_chunk

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class NotJSON(ValueError):
    """The answer does not parse (as opposed to parsing into the wrong shape)."""


@dataclass
class ChunkResult:
    chunk: Chunk
    candidates: list[Candidate] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    failed: str | None = None
    transient: bool = False  # failed because the provider did (not because of its answer)
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
        raise NotJSON(f"the answer is not valid JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("memories"), list):
        return data["memories"]
    if isinstance(data, list):
        return data
    shape = type(data).__name__ if not isinstance(data, dict) else f"an object with keys {sorted(data)[:5]}"
    raise ValueError(f'expected {{"memories": [...]}}, got {shape}')


def salvage_items(text: str) -> list[Any]:
    """The complete objects of the first array in a cut-off answer (``{"memories": [{…}, {…}, {…``).

    A small scanner rather than a partial-JSON library: we need only whole items, never a torn
    one, and tracking strings, escapes and depth is all that takes."""
    start = text.find("[")
    if start < 0:
        return []
    items: list[Any] = []
    depth, in_str, esc, item_at = 0, False, False, -1
    for i in range(start + 1, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            if depth == 0:
                item_at = i
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break  # the array itself closed
            depth -= 1
            if depth == 0 and item_at >= 0:
                try:
                    items.append(orjson.loads(text[item_at:i + 1]))
                except orjson.JSONDecodeError:
                    pass
                item_at = -1
    return items


class Mapper:
    def __init__(self, provider: Any, *, provider_name: str, budget: TokenBudget | None,
                 max_output_tokens: int | None = None):
        self.provider = provider
        self.provider_name = provider_name
        self.budget = budget
        self.max_output_tokens = max_output_tokens or output_token_cap()

    def map_chunk(self, chunk: Chunk) -> ChunkResult:
        res = ChunkResult(chunk)
        if hasattr(self.provider, "extract"):
            res.model = getattr(self.provider, "model", None)
            raw = self.provider.extract(chunk)
            res.counters["candidates_proposed"] += len(raw)
            res.candidates = validate_chunk(raw, chunk, res.counters, written=False)
            return res
        try:
            self._ask_llm(chunk, res)
        except TransientError as exc:  # the retry policy gave up: this chunk waits for a retry
            res.failed, res.transient = f"{_where(chunk)}: {exc}", True
            res.counters["chunks_failed"] += 1
        return res

    def _ask_llm(self, chunk: Chunk, res: ChunkResult) -> None:
        user = map_prompt(chunk)
        problem = ""
        for attempt in range(2):
            resp = self._complete(user, res)
            text = (resp.text or "").strip()
            if resp.finish == "blocked":
                res.counters["answers_blocked"] += 1
                problem = f"the answer was blocked ({resp.detail or 'no reason given'})"
                break  # asking the same again is blocked again
            if not text:
                res.counters["answers_empty"] += 1
                problem = f"the answer was empty ({resp.detail or 'no text'})"
                continue  # the same question once more
            try:
                raw = parse_answer(text)
            except ValueError as exc:
                raw = salvage_items(text) if isinstance(exc, NotJSON) else []
                if not raw:
                    res.counters["answers_invalid"] += 1
                    problem = str(exc) + (" (cut off by the token cap)" if resp.finish == "length" else "")
                    res.counters["repairs"] += attempt == 0
                    user = repair_prompt(chunk, problem)
                    continue
                res.counters["answers_salvaged"] += 1
            res.counters["candidates_proposed"] += len(raw)
            if raw and not any(_fits_schema(item) for item in raw):
                res.counters["answers_all_invalid"] += 1
                res.counters["dropped_schema"] += len(raw)
                problem = f"none of the {len(raw)} memories had the required fields and types"
                res.counters["repairs"] += attempt == 0
                user = repair_prompt(chunk, problem)
                continue
            res.candidates = validate_chunk(raw, chunk, res.counters)
            return
        tries = "after one repair" if res.counters["repairs"] else ("twice" if res.calls > 1 else "once")
        res.failed = f"{_where(chunk)}: {problem} ({tries})"
        res.counters["chunks_failed"] += 1

    def _complete(self, user: str, res: ChunkResult):
        from ..providers.base import LLMRequest

        estimate = estimate_tokens(SYSTEM) + estimate_tokens(user) + self.max_output_tokens
        reservation = self.budget.reserve(estimate) if self.budget else 0
        try:
            resp = self.provider.complete(LLMRequest(system=SYSTEM, user=user, schema=response_schema(),
                                                     temperature=0.2, max_output_tokens=self.max_output_tokens))
        except BaseException:
            if self.budget:
                self.budget.release(reservation)
            raise
        usage = getattr(resp, "usage", None)
        used = int(getattr(usage, "total_tokens", 0) or 0) or (
            int(getattr(usage, "prompt_tokens", 0) or 0) + int(getattr(usage, "output_tokens", 0) or 0)
        )
        if not used:
            used = estimate - self.max_output_tokens + estimate_tokens(resp.text or "")
            res.counters["usage_estimated"] += 1
        model = getattr(self.provider, "model", None) or resp.model  # the configured name books the usage
        if self.budget:
            self.budget.settle(reservation, used, provider=self.provider_name, model=model)
        res.calls += 1
        res.tokens += used
        res.model = model
        return resp

    def map_all(self, chunks: list[Chunk], *, concurrency: int,
                progress: Callable[[int, int], None] | None = None,
                on_result: Callable[[ChunkResult], None] | None = None) -> list[ChunkResult]:
        """Map every chunk, a failed one included (its result says why). A provider error that
        no retry can fix (a bad key, the budget) stops the lot and propagates."""
        results: list[ChunkResult] = []
        if not chunks:
            return results
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="distill-map") as pool:
            futures = [pool.submit(self.map_chunk, c) for c in chunks]
            try:
                for fut in as_completed(futures):
                    r = fut.result()
                    results.append(r)
                    if on_result:
                        on_result(r)
                    if progress:
                        progress(len(results), len(chunks))
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
        results.sort(key=lambda r: r.chunk.index)
        return results


def _fits_schema(item: Any) -> bool:
    try:
        CandidateOut.model_validate(item)
        return True
    except ValidationError:
        return False


def _where(chunk: Chunk) -> str:
    return f"chunk {chunk.index} of agent {chunk.agent_id}"
