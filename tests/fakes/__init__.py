"""Local fake servers speaking real provider wire formats, for tests with real clients.

    from tests.fakes import FakeGemini, FakeOpenAI

    with FakeOpenAI([("status", 429, {"Retry-After": "1"}), ("json", {"memories": []})]) as fake:
        settings = load_settings(llm="openai", llm_base_url=fake.base_url, llm_model="m")
        ...
        assert len(fake.requests) == 2

See :mod:`tests.fakes.scripted_server` for the behaviours every fake understands and each
fake's module for its own.
"""

from .gemini_server import FakeGemini
from .openai_server import FakeOpenAI
from .scripted_server import Recorded, ScriptedServer

__all__ = ["FakeGemini", "FakeOpenAI", "Recorded", "ScriptedServer"]
