"""Transport providers and extractors are separate: what each name resolves to, the error for
a name nobody registered, and no import of the distiller from any providers module."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import distill.providers
from distill.config import load_settings
from distill.distiller.extract import Extraction, LLMExtractor, make_extractor
from distill.distiller.rules import RulesExtractor
from distill.errors import ConfigError
from distill.pipeline import distill_batch
from tests.distiller_helpers import PEP668_PITFALL, batch_of


def test_no_providers_module_loads_the_distiller():
    """Each module in a fresh interpreter (the package's __init__ runs first in each), in parallel."""
    modules = [f"distill.providers.{m.name}" for m in pkgutil.iter_modules(distill.providers.__path__)]
    code = "import importlib, sys; importlib.import_module(sys.argv[1]); " \
           "print(sorted(m for m in sys.modules if m.startswith('distill.distiller')))"
    procs = {m: subprocess.Popen([sys.executable, "-c", code, m], stdout=subprocess.PIPE, text=True) for m in modules}
    loaded = {m: p.communicate(timeout=120)[0].strip() for m, p in procs.items()}
    assert len(modules) >= 4 and all(p.returncode == 0 for p in procs.values())
    assert loaded == {m: "[]" for m in modules}


def test_each_name_resolves_to_its_extractor(tmp_path):
    rules = make_extractor(load_settings(state_dir=tmp_path))
    assert isinstance(rules, RulesExtractor) and (rules.name, rules.model) == ("rules", "rules-v1")
    llm = make_extractor(load_settings(state_dir=tmp_path, llm="openai", llm_base_url="http://127.0.0.1:9/v1",
                                       llm_model="qwen3:8b"))
    try:
        assert isinstance(llm, LLMExtractor) and (llm.name, llm.model) == ("openai", "qwen3:8b")
        assert type(llm.provider).__module__ == "distill.providers.openai_compat"
    finally:
        llm.close()


def test_an_unknown_name_names_the_setting_and_every_known_one(tmp_path):
    settings = load_settings(state_dir=tmp_path).replace(llm="claude")
    with pytest.raises(ConfigError) as err:
        make_extractor(settings)
    assert str(err.value) == "unknown DISTILL_LLM='claude': use one of rules, gemini, openai"
    with pytest.raises(ConfigError, match="DISTILL_LLM='rules': use one of gemini, openai"):
        distill.providers.get_provider(load_settings(state_dir=tmp_path))  # rules is no transport


class OneCandidate:
    """Any object with the Extractor shape runs through the pipeline like the built-in ones."""

    name, model, written = "stub", "stub-1", True

    def __init__(self):
        self.budgets = []

    def extract(self, chunk, budget):
        self.budgets.append(budget)
        return Extraction(candidates=[PEP668_PITFALL], calls=1, tokens=42)

    def close(self):
        pass


def test_the_pipeline_runs_any_extractor_and_books_its_name(tmp_path):
    settings = load_settings(state_dir=tmp_path)
    turns = [("user", "pip install lancedb fails with error: externally-managed-environment on Debian 12"),
             ("assistant", "Debian's system Python is protected (PEP 668). Use uv venv, then uv pip install lancedb.")]
    stub = OneCandidate()
    result = distill_batch(settings, batch_of({"main": turns}), extractor=stub, budget=None)
    (mem,) = result.memories
    assert mem.metadata["distiller"]["provider"] == "stub" and mem.metadata["distiller"]["model"] == "stub-1"
    assert (result.calls, result.tokens) == (1, 42) and stub.budgets == [None]


def test_embedders_are_registered_by_name_and_an_unknown_one_is_named(tmp_path):
    from distill.store.embedders import EMBEDDERS, GeminiEmbedder, OpenAIEmbedder, make_embedder

    assert EMBEDDERS.names() == ["local", "openai", "gemini"]
    base = dict(state_dir=tmp_path, embed_base_url="http://127.0.0.1:9/v1", embed_model="m", embed_api_key="k")
    assert isinstance(make_embedder(load_settings(embedder="openai", **base)), OpenAIEmbedder)
    assert isinstance(make_embedder(load_settings(embedder="gemini", **base)), GeminiEmbedder)
    with pytest.raises(ConfigError) as err:
        make_embedder(load_settings(state_dir=tmp_path).replace(embedder="voyage"))
    assert str(err.value) == "unknown DISTILL_EMBEDDER='voyage': use one of local, openai, gemini"
