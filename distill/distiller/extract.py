"""Extraction: one chunk in, the candidate memories it proposes out (not yet validated).

Two extractors sit behind :class:`Extractor`: the offline rules (:mod:`.rules`), and
:class:`LLMExtractor`, which owns the prompt, the answer's parsing, repair and salvage, and the
token budget, and reaches a model only through a transport provider's ``complete``
(:mod:`distill.providers`). The mapper runs either the same way, so nothing downstream asks
which kind it has. ``DISTILL_LLM`` picks one: ``rules``, or the name of a registered provider.

A chunk has failed, and nothing from it may be committed, when its answer is blocked, empty
(twice), not the JSON asked for even after one repair, or a list whose every candidate breaks
the schema (after one repair) -- or when the provider kept failing after the retry policy, or
refused this one request for what it holds (:class:`~distill.errors.RequestRejected`: longer
than the model's context, a content-policy refusal), which is the chunk's failure, not the
run's: a bad key, model or URL still raises and stops the run.
``{"memories": []}`` is an answer: the model found nothing worth keeping. An answer cut off by
the token cap (or a server's own limit) is salvaged: the complete items before the cut are
kept (``answers_salvaged``), the torn one is dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from pydantic import ValidationError

from ..errors import NotJSON, RequestRejected, TransientError
from .chunking import Chunk, estimate_tokens
from .prompts import SYSTEM, map_prompt, repair_prompt
from .schema import CandidateOut, output_token_cap, response_schema

if TYPE_CHECKING:
    from ..budget import TokenBudget
    from ..config import Settings
    from ..providers.base import LLMProvider, LLMResponse

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass
class Extraction:
    """What one chunk yielded: raw candidates for validation, or why it failed."""

    candidates: list[Any] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    failed: str | None = None  # no usable answer; the chunk is set aside
    transient: bool = False  # failed because the provider did (not because of its answer)
    calls: int = 0
    tokens: int = 0


class Extractor(Protocol):
    name: str  # books usage and goes into each memory's metadata ("rules", "gemini", "openai")
    model: str
    written: bool  # candidates are a model's prose: validation's style checks apply

    def extract(self, chunk: Chunk, budget: "TokenBudget | None") -> Extraction: ...

    def close(self) -> None: ...


def make_extractor(settings: "Settings") -> Extractor:
    """The extractor ``settings.llm`` names: ``rules``, or an LLM behind a registered provider."""
    if settings.llm == "rules":
        from .rules import RulesExtractor

        return RulesExtractor()
    from ..providers import PROVIDERS

    if settings.llm not in PROVIDERS:
        raise PROVIDERS.unknown(settings.llm, "rules")
    return LLMExtractor(PROVIDERS.make(settings.llm, settings), max_output_tokens=settings.llm_max_output_tokens)


class LLMExtractor:
    """A chunk → the map prompt → one provider call (plus one repair) → the parsed candidates."""

    written = True

    def __init__(self, provider: "LLMProvider", *, max_output_tokens: int | None = None):
        self.provider = provider
        self.name = provider.name
        self.model = provider.model
        self.max_output_tokens = max_output_tokens or output_token_cap()

    def close(self) -> None:
        self.provider.close()

    def extract(self, chunk: Chunk, budget: "TokenBudget | None") -> Extraction:
        out = Extraction()
        try:
            self._ask(chunk, budget, out)
        except TransientError as exc:  # the retry policy gave up: this chunk waits for a retry
            out.failed, out.transient = str(exc), True
        except RequestRejected as exc:  # about this chunk's request only: set it aside, the rest go on
            out.counters["requests_rejected"] += 1
            out.failed = str(exc)
        return out

    def _ask(self, chunk: Chunk, budget: "TokenBudget | None", out: Extraction) -> None:
        user = map_prompt(chunk)
        problem = ""
        for attempt in range(2):
            resp = self._complete(user, budget, out)
            text = (resp.text or "").strip()
            if resp.finish == "blocked":
                out.counters["answers_blocked"] += 1
                problem = f"the answer was blocked ({resp.detail or 'no reason given'})"
                break  # asking the same again is blocked again
            if not text:
                out.counters["answers_empty"] += 1
                problem = f"the answer was empty ({resp.detail or 'no text'})"
                continue  # the same question once more
            try:
                raw = parse_answer(text)
            except ValueError as exc:
                raw = salvage_items(text) if isinstance(exc, NotJSON) else []
                if not raw:
                    out.counters["answers_invalid"] += 1
                    problem = str(exc) + (" (cut off by the token cap)" if resp.finish == "length" else "")
                    out.counters["repairs"] += attempt == 0
                    user = repair_prompt(chunk, problem)
                    continue
                out.counters["answers_salvaged"] += 1
            out.counters["candidates_proposed"] += len(raw)
            if raw and not any(_fits_schema(item) for item in raw):
                out.counters["answers_all_invalid"] += 1
                out.counters["dropped_schema"] += len(raw)
                problem = f"none of the {len(raw)} memories had the required fields and types"
                out.counters["repairs"] += attempt == 0
                user = repair_prompt(chunk, problem)
                continue
            out.candidates = raw
            return
        tries = "after one repair" if out.counters["repairs"] else ("twice" if out.calls > 1 else "once")
        out.failed = f"{problem} ({tries})"

    def _complete(self, user: str, budget: "TokenBudget | None", out: Extraction) -> "LLMResponse":
        from ..providers.base import LLMRequest

        estimate = estimate_tokens(SYSTEM) + estimate_tokens(user) + self.max_output_tokens
        reservation = budget.reserve(estimate) if budget else 0
        try:
            resp = self.provider.complete(LLMRequest(system=SYSTEM, user=user, schema=response_schema(),
                                                     temperature=0.2, max_output_tokens=self.max_output_tokens))
        except BaseException:
            if budget:
                budget.release(reservation)
            raise
        usage = resp.usage
        used = usage.total_tokens or usage.prompt_tokens + usage.output_tokens
        if not used:
            used = estimate - self.max_output_tokens + estimate_tokens(resp.text or "")
            out.counters["usage_estimated"] += 1
        model = self.model or resp.model  # the configured name books the usage
        if budget:
            budget.settle(reservation, used, provider=self.name, model=model)
        out.calls += 1
        out.tokens += used
        return resp


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


def _fits_schema(item: Any) -> bool:
    try:
        CandidateOut.model_validate(item)
        return True
    except ValidationError:
        return False
