"""Tables memory-lancedb-pro made (its Arrow types) open as they are, accept writes, stay readable."""

from __future__ import annotations

import json
import time

import lancedb
import numpy as np
import pytest

from distill.store import MemoryDraft, MemoryStore
from store_helpers import make_plugin_table, plugin_schema, settings_for


@pytest.fixture(scope="module")
def local_embedder():
    from distill.store.embedders import LocalEmbedder

    return LocalEmbedder()


def plugin_row(embedder, text: str, scope: str = "global") -> dict:
    return {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "text": text,
            "vector": embedder.passages([text])[0].tolist(), "category": "fact", "scope": scope,
            "importance": 0.7, "timestamp": float(int(time.time() * 1000) - 86_400_000),
            "metadata": "{}"}


def test_plugin_table_accepts_writes_and_keeps_its_types(tmp_path, local_embedder):
    s = settings_for(tmp_path)
    text = "The gateway timeout is 30 seconds.\nKeywords (zh): 网关; 超时"
    make_plugin_table(s.db, 384, [plugin_row(local_embedder, text)])

    store = MemoryStore.open(s, embedder=local_embedder)
    out = store.add([
        MemoryDraft(text=text, category="fact", scope="global", importance=0.9,
                    metadata={"provenance": {"agent": "main", "file": "x.jsonl", "ranges": [[0, 10]]}}),
        MemoryDraft(text="网关重启前需要先清空缓存。\nKeywords (zh): 网关; 缓存", category="decision",
                    scope="agent:main", importance=0.8),
    ])
    assert [o.status for o in out] == ["duplicate", "added"]
    assert out[0].id == "0f8fad5b-d9cb-469f-a165-70867728950e"

    # read back the way the plugin does: same schema, float64 ms timestamps, string metadata
    table = lancedb.connect(str(s.db)).open_table("memories")
    assert table.schema == plugin_schema(384)
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert len(rows) == 2
    new = rows[out[1].id]
    assert isinstance(new["timestamp"], float) and abs(new["timestamp"] - time.time() * 1000) < 60_000
    assert isinstance(new["importance"], float)
    old = rows[out[0].id]
    assert old["text"] == text  # a duplicate keeps the row's text and vector
    md = json.loads(old["metadata"])
    assert md["seen_count"] == 2 and md["sources"][0]["file"] == "x.jsonl"

    # the plugin's own queries still work: vector search, FTS on its own index (kept as it was;
    # "缓存" is a whole keyword phrase, so one token even to its simple tokenizer), listing
    assert [i.index_details["base_tokenizer"] for i in table.list_indices()] == ["simple"]
    q = np.asarray(local_embedder.query("网关缓存"), dtype=np.float32)
    assert table.search(q).limit(5).to_list()[0]["id"] == out[1].id
    assert [r["id"] for r in table.search("缓存", query_type="fts").limit(5).to_list()] == [out[1].id]
    assert {r.id for r in store.list()} == set(rows)


def test_plugin_table_with_other_vector_size_refuses_import_untouched(tmp_path, local_embedder):
    s = settings_for(tmp_path)
    rng = np.random.default_rng(1)
    row = {"id": "a" * 8 + "-0000-4000-8000-" + "0" * 12, "text": "existing memory", "vector":
           rng.standard_normal(1024).astype(np.float32).tolist(), "category": "fact", "scope": "global",
           "importance": 0.5, "timestamp": 1.7e12, "metadata": "{}"}
    table = make_plugin_table(s.db, 1024, [row])
    version = table.version
    with pytest.raises(Exception) as err:
        store = MemoryStore.open(s, embedder=local_embedder)
        store.import_({"memories": [{"text": "new memory here", "category": "fact", "importance": 0.5}]})
    assert "1024-d" in str(err.value) and "384-d" in str(err.value) and "reembed" in str(err.value)
    again = lancedb.connect(str(s.db)).open_table("memories")
    assert again.version == version and again.count_rows() == 1


def test_rows_with_float_timestamps_list_newest_first_and_filter_since(tmp_path, local_embedder):
    s = settings_for(tmp_path)
    rows = []
    for i, day in enumerate((10, 5, 1)):
        r = plugin_row(local_embedder, f"memory written {day} days ago number {i}")
        r["id"] = f"{i:08d}-0000-4000-8000-000000000000"
        r["timestamp"] = float(int(time.time() * 1000) - day * 86_400_000)
        rows.append(r)
    make_plugin_table(s.db, 384, rows)
    store = MemoryStore.open(s, embedder=local_embedder)
    listed = store.list()
    assert [r.id[:8] for r in listed] == ["00000002", "00000001", "00000000"]
    since = int(time.time() * 1000) - 7 * 86_400_000
    assert [r.id[:8] for r in store.list(since_ms=since)] == ["00000002", "00000001"]
    assert all(isinstance(r.timestamp, int) for r in listed)
