"""The one small interface every distiller model sits behind.

A provider turns (system prompt, user text, expected JSON schema) into the raw JSON text
the model returned, its token usage and why it stopped. It does not parse or validate the
memories (the distiller does, candidate by candidate) and it never raises for an answer
that is merely empty or safety-blocked: those are ``finish`` values the distiller counts.
It raises :class:`~distill.errors.TransientError` (after our retry policy gave up),
:class:`~distill.errors.PermanentError` (fix a setting) or
:class:`~distill.errors.ConfigError` (at construction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from ..config import Settings

Finish = Literal["stop", "blocked", "empty", "length"]


class Usage(BaseModel):
    prompt_tokens: int = 0
    output_tokens: int = 0  # includes "thinking" tokens where the provider bills them as output
    total_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class LLMRequest(BaseModel):
    system: str
    user: str
    response_model: type[BaseModel]  # the JSON the model must return (structured output)
    temperature: float = 0.2


class LLMResponse(BaseModel):
    text: str  # the raw JSON text the model returned ("" if none)
    usage: Usage
    finish: Finish
    model: str
    detail: str | None = None  # e.g. the block reason


@runtime_checkable
class LLMProvider(Protocol):
    name: str
    model: str

    def complete(self, req: LLMRequest) -> LLMResponse:
        """One structured-output call, retried through ``settings.retry_policy()``."""
        ...

    def close(self) -> None: ...


def get_provider(settings: "Settings") -> LLMProvider:
    """The provider ``settings.llm`` names; heavy clients are imported only here."""
    if settings.llm == "gemini":
        from .gemini import GeminiProvider

        return GeminiProvider(settings)
    if settings.llm == "openai":
        from .openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(settings)
    from .rules import RulesProvider

    return RulesProvider(settings)
