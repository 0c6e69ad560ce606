"""Export/import in memory-pro's JSON shape, and re-embedding into a new table."""

from __future__ import annotations

import json

import lancedb
import numpy as np
import pytest

from distill.errors import SchemaMismatch
from distill.store import MemoryDraft, MemoryStore
from distill.store.doctor import newest_format
from store_helpers import HashEmbedder, settings_for

PLUGIN_EXPORT = {
    "version": "1.0",
    "exportedAt": "2026-03-01T10:00:00.000Z",
    "count": 4,
    "filters": {"scope": None, "category": None},
    "memories": [
        {"id": "6f1c2a1e-1111-4c1e-9a1b-000000000001", "text": "Prefer pnpm over npm in the web repo.",
         "category": "preference", "scope": "agent:web", "importance": 0.9, "timestamp": 1772359200000,
         "metadata": "{\"source\":\"manual\"}"},
        {"text": "The staging database is reset every Sunday.", "category": "fact", "importance": 0.6},
        {"text": "Mystery category entry here", "category": "reflection", "importance": 7},
        {"text": "", "category": "fact"},
    ],
}


@pytest.fixture
def store(tmp_path):
    return MemoryStore.open(settings_for(tmp_path), embedder=HashEmbedder())


def test_import_plugin_export_then_same_file_again_adds_nothing(store):
    first = store.import_(PLUGIN_EXPORT)
    assert (first.total, first.added, first.duplicate, first.invalid) == (4, 3, 0, 1)
    rows = {r.text.split("\nKeywords")[0]: r for r in store.list()}  # import adds the keyword line (issue 23)
    kept = rows["Prefer pnpm over npm in the web repo."]
    assert kept.text.splitlines()[-1].startswith("Keywords (zh): ")
    assert kept.id == "6f1c2a1e-1111-4c1e-9a1b-000000000001" and kept.timestamp == 1772359200000
    assert kept.scope == "agent:web" and kept.metadata["source"] == "manual"
    odd = rows["Mystery category entry here"]
    assert odd.category == "other" and odd.importance == 1.0
    version = store.table.version
    second = store.import_(PLUGIN_EXPORT)
    assert (second.added, second.duplicate) == (0, 3)
    assert store.table.version == version and store.count() == 3


def test_dry_run_writes_nothing_and_scope_override_applies(store):
    version = store.table.version
    report = store.import_(PLUGIN_EXPORT, scope="agent:qa", dry_run=True)
    assert report.dry_run and report.added == 3
    assert store.count() == 0 and store.table.version == version
    store.import_(PLUGIN_EXPORT, scope="agent:qa")
    assert {r.scope for r in store.list()} == {"agent:qa"}


def test_export_round_trips_through_import_into_a_fresh_table(store, tmp_path):
    store.add([MemoryDraft(text="部署前先运行数据库迁移。\nKeywords (zh): 部署; 迁移", category="fact",
                           scope="global", importance=0.9,
                           metadata={"provenance": {"agent": "main", "file": "s.jsonl", "ranges": [[0, 9]]}})])
    doc = store.export()
    assert set(doc) >= {"version", "exportedAt", "count", "memories"} and doc["count"] == 1
    entry = doc["memories"][0]
    assert set(entry) == {"id", "text", "category", "scope", "importance", "timestamp", "metadata"}
    assert isinstance(entry["metadata"], str) and json.loads(entry["metadata"])["provenance"]["file"] == "s.jsonl"
    other = MemoryStore.open(settings_for(tmp_path / "other"), embedder=HashEmbedder())
    assert other.import_(json.loads(json.dumps(doc))).added == 1
    copy = other.list()[0]
    assert copy.id == entry["id"] and copy.metadata["provenance"]["file"] == "s.jsonl"
    assert copy.metadata["seen_count"] == 1


def test_not_an_export_is_a_clear_error(store):
    with pytest.raises(SchemaMismatch, match="memories"):
        store.import_({"items": []})
    with pytest.raises(ValueError, match="scope"):
        store.import_(PLUGIN_EXPORT, scope="nonsense")


def test_reembed_rebuilds_vectors_into_new_size_and_keeps_rows(tmp_path):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder(dim=16, name="test:small"))
    store.import_(PLUGIN_EXPORT)
    ids = {r.id for r in store.list()}
    report = store.reembed(s.replace(), embedder=HashEmbedder(dim=32, name="test:big"))
    assert (report.old_dim, report.new_dim, report.rows) == (16, 32, 3)
    db = lancedb.connect(str(s.db))
    live = db.open_table("memories")
    assert live.schema.field("vector").type.list_size == 32
    assert newest_format(s.db / "memories.lance") == "2.0"  # still readable by memory-lancedb-pro
    assert {r["id"] for r in live.to_arrow().to_pylist()} == ids
    backup = db.open_table(report.backup_table)
    assert backup.schema.field("vector").type.list_size == 16 and backup.count_rows() == 3
    assert "memories__reembed" not in list(db.list_tables().tables)
    reopened = MemoryStore.open(s, embedder=HashEmbedder(dim=32, name="test:big"))
    hit = reopened.search("Prefer pnpm over npm in the web repo.", mode="vector", limit=1)[0]
    assert hit.text.startswith("Prefer pnpm") and hit.score > 0.99
    assert reopened.add([MemoryDraft(text="The staging database is reset every Sunday.")])[0].status == "duplicate"
    assert np.isclose(np.linalg.norm(live.to_arrow()["vector"].to_pylist()[0]), 1.0, atol=1e-4)
