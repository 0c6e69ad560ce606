"""Chat providers (transport only) behind one interface: ``get_provider(settings).complete(LLMRequest(...))``.

Importing this package is cheap: google-genai and httpx load only when a provider is built.
Nothing here imports the distiller (a test holds that).
"""

from .base import PROVIDERS, Finish, LLMProvider, LLMRequest, LLMResponse, Usage, get_provider

__all__ = ["PROVIDERS", "Finish", "LLMProvider", "LLMRequest", "LLMResponse", "Usage", "get_provider"]
