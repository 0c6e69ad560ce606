"""LLM providers behind one interface: ``get_provider(settings).complete(LLMRequest(...))``.

Importing this package is cheap: google-genai and httpx load only when a provider is built.
"""

from .base import Finish, LLMProvider, LLMRequest, LLMResponse, Usage, get_provider

__all__ = ["Finish", "LLMProvider", "LLMRequest", "LLMResponse", "Usage", "get_provider"]
