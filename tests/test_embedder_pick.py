"""Pointed at an existing table, distill uses the embedder that made it when it can tell
(vector size, the embedder the rows recorded, an API key in the environment), and otherwise
says in one line which settings to set. Nothing is written either way."""

from __future__ import annotations

import json

import lancedb
import pytest

from distill.errors import SchemaMismatch
from distill.store import MemoryStore
from distill.store.embedders import OpenAIEmbedder, make_embedder
from store_helpers import make_plugin_table, settings_for


def table_of(tmp_path, dim: int, embedder: str | None = None):
    md = json.dumps({"embedder": embedder}) if embedder else "{}"
    row = {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "text": "The gateway timeout is 30 seconds.",
           "vector": [1.0] + [0.0] * (dim - 1), "category": "fact", "scope": "global", "importance": 0.7,
           "timestamp": 1772359200000.0, "metadata": md}
    make_plugin_table(tmp_path / "db", dim, [row])


def test_a_plugin_table_of_jina_vectors_gets_jina_when_its_key_is_set(tmp_path, monkeypatch):
    table_of(tmp_path, 1024)
    monkeypatch.setenv("JINA_API_KEY", "jina_test_key")
    store = MemoryStore.open(settings_for(tmp_path))
    s = store.settings
    assert (s.embedder, s.embed_model, s.embed_dimensions, s.embed_task) == (
        "openai", "jina-embeddings-v3", 1024, "retrieval.passage")
    emb = make_embedder(s)
    assert isinstance(emb, OpenAIEmbedder) and emb.url == "https://api.jina.ai/v1/embeddings"
    assert emb._client.headers["authorization"] == "Bearer jina_test_key"
    assert store.embedder_name() == "openai:jina-embeddings-v3"
    assert s.dedup_thresholds() == settings_for(tmp_path, embedder="openai").dedup_thresholds()


def test_without_the_key_one_line_names_the_settings_and_nothing_is_written(tmp_path, monkeypatch):
    table_of(tmp_path, 1024)
    for var in ("JINA_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    version = lancedb.connect(str(tmp_path / "db")).open_table("memories").version
    with pytest.raises(SchemaMismatch) as err:
        MemoryStore.open(settings_for(tmp_path))
    msg = str(err.value)
    assert "\n" not in msg and "1024-d" in msg and "JINA_API_KEY" in msg
    assert "DISTILL_EMBEDDER=openai DISTILL_EMBED_MODEL=jina-embeddings-v3 DISTILL_EMBED_DIMENSIONS=1024" in msg
    assert "DISTILL_EMBED_BASE_URL=https://api.jina.ai/v1 DISTILL_EMBED_TASK=retrieval.passage" in msg
    assert lancedb.connect(str(tmp_path / "db")).open_table("memories").version == version


def test_the_recorded_embedder_wins_over_the_usual_one_for_its_size(tmp_path, monkeypatch):
    table_of(tmp_path, 768, embedder="openai:nomic-embed-text")
    monkeypatch.setenv("GEMINI_API_KEY", "g")  # 768-d is usually Gemini; these rows say otherwise
    with pytest.raises(SchemaMismatch) as err:
        MemoryStore.open(settings_for(tmp_path))
    assert "recorded embedder openai:nomic-embed-text" in str(err.value)
    assert "DISTILL_EMBED_MODEL=nomic-embed-text" in str(err.value)
    assert "DISTILL_EMBED_BASE_URL=<its server>" in str(err.value)


def test_a_configured_embedder_is_never_second_guessed(tmp_path, monkeypatch):
    table_of(tmp_path, 1024)
    monkeypatch.setenv("JINA_API_KEY", "jina_test_key")
    with pytest.raises(SchemaMismatch) as err:
        MemoryStore.open(settings_for(tmp_path, embedder="local"))
    assert "384-d" in str(err.value) and "usually openai:jina-embeddings-v3" in str(err.value)


def test_doctor_shows_the_pick(tmp_path, monkeypatch):
    from distill.store.doctor import diagnose

    table_of(tmp_path, 1024)
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    report = diagnose(settings_for(tmp_path))
    assert report.embedder is None and "JINA_API_KEY" in report.embedder_problem
    monkeypatch.setenv("JINA_API_KEY", "k")
    report = diagnose(settings_for(tmp_path))
    assert report.embedder == "openai:jina-embeddings-v3 at https://api.jina.ai/v1" and report.embedder_problem is None
