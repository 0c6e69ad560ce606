"""The one small interface every chat model sits behind (transport only: the prompt and the
parsing of the answer are the distiller's, :mod:`distill.distiller.extract`).

A provider turns (system prompt, user text, expected JSON schema) into the raw JSON text
the model returned, its token usage and why it stopped. It does not parse or validate the
memories (the distiller does, candidate by candidate) and it never raises for an answer
that is merely empty or safety-blocked: those are ``finish`` values the distiller counts.
It raises :class:`~distill.errors.TransientError` (after our retry policy gave up),
:class:`~distill.errors.PermanentError` (fix a setting) or
:class:`~distill.errors.ConfigError` (at construction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..registry import Registry

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
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")  # the JSON the model must return
    response_model: type[BaseModel] | None = None  # or a model whose schema that is (references inlined)
    temperature: float = 0.2
    max_output_tokens: int | None = None  # sent as max_tokens / maxOutputTokens

    model_config = ConfigDict(populate_by_name=True)

    def json_schema(self) -> dict[str, Any]:
        if self.schema_ is not None:
            return self.schema_
        if self.response_model is None:
            raise ValueError("an LLMRequest needs a schema or a response_model")
        return inline_refs(self.response_model.model_json_schema())


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every local ``$ref`` replaced by its definition and ``$defs`` gone:
    several OpenAI-compatible servers and Gemini's schema path do not resolve references."""
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
            name = ref.rsplit("/", 1)[-1]
            if name in seen:
                raise ValueError(f"schema {name!r} refers to itself; it cannot be inlined")
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[name], **extra}, (*seen, name))
        return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, ())


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


PROVIDERS: Registry[LLMProvider] = Registry("DISTILL_LLM")


@PROVIDERS.register("gemini")
def _gemini(settings: "Settings") -> LLMProvider:
    from .gemini import GeminiProvider

    return GeminiProvider(settings)


@PROVIDERS.register("openai")
def _openai(settings: "Settings") -> LLMProvider:
    from .openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(settings)


def get_provider(settings: "Settings") -> LLMProvider:
    """The chat provider ``settings.llm`` names; heavy clients are imported only here.
    (``rules`` is no provider: :func:`distill.distiller.extract.make_extractor` resolves it.)"""
    return PROVIDERS.make(settings.llm, settings)
