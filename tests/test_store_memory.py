"""MemoryStore against a real LanceDB directory and the bundled local embedder."""

from __future__ import annotations

import json
import time
import uuid

import lancedb
import numpy as np
import pytest

from distill.errors import SchemaMismatch
from distill.store import MemoryDraft, MemoryStore
from store_helpers import HashEmbedder, settings_for

UV = "Use uv instead of pip for Python dependencies.\nKeywords (zh): 依赖管理; uv; pip"
DEBIAN = "Deploy only on Debian 12.\nKeywords (zh): 部署; Debian"
UBUNTU = "Deploy only on Ubuntu 22.04.\nKeywords (zh): 部署; Ubuntu"
MIGRATE_ZH = "部署服务之前必须先运行数据库迁移脚本，否则启动会报错。\nKeywords (zh): 部署; 数据库迁移"


def draft(text: str, *, scope: str = "global", category: str = "fact", file: str = "a.jsonl",
          start: int = 0, end: int = 100, session: str = "s1") -> MemoryDraft:
    return MemoryDraft(text=text, category=category, scope=scope, importance=0.8, metadata={
        "keywords_zh": ["部署"],
        "provenance": {"agent": "main", "session": session, "file": file, "ranges": [[start, end]]},
    })


@pytest.fixture(scope="module")
def local_embedder():
    from distill.store.embedders import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture
def store(tmp_path, local_embedder):
    return MemoryStore.open(settings_for(tmp_path), embedder=local_embedder)


def raw_rows(settings) -> list[dict]:
    return lancedb.connect(str(settings.db)).open_table("memories").to_arrow().to_pylist()


def test_rows_have_uuid_ids_ms_timestamps_and_json_metadata_with_provenance(store):
    before = int(time.time() * 1000)
    out = store.add([draft(UV), draft(DEBIAN, scope="agent:main", category="decision")])
    after = int(time.time() * 1000)
    assert [o.status for o in out] == ["added", "added"]
    rows = raw_rows(store.settings)
    assert len({r["id"] for r in rows}) == 2
    for r in rows:
        assert str(uuid.UUID(r["id"])) == r["id"]
        assert before <= r["timestamp"] <= after  # milliseconds, not seconds
        assert len(r["vector"]) == 384 and any(r["vector"])
        md = json.loads(r["metadata"])
        assert md["provenance"]["file"] == "a.jsonl" and md["seen_count"] == 1
        assert md["content_hash"] and md["keywords_zh"] == ["部署"]
    assert {(r["scope"], r["category"]) for r in rows} == {("global", "fact"), ("agent:main", "decision")}


def test_exact_duplicate_records_new_source_and_replay_changes_nothing(store):
    first = store.add([draft(UV)])[0]
    # same text with another keyword line, inside one call, from a second transcript
    again = store.add([draft(UV, file="b.jsonl"),
                       draft(UV.replace("uv; pip", "包管理"), file="c.jsonl")])
    assert [o.status for o in again] == ["duplicate", "duplicate"]
    assert {o.id for o in again} == {first.id} and again[0].reason == "exact"
    md = store.list()[0].metadata
    assert md["seen_count"] == 3
    assert [s["file"] for s in md["sources"]] == ["a.jsonl", "b.jsonl", "c.jsonl"]

    version = store.table.version
    replay = store.add([draft(UV, file="b.jsonl")])  # the very same source again
    assert replay[0].status == "duplicate"
    assert store.table.version == version  # nothing written
    assert store.count() == 1


def test_duplicates_inside_one_call_are_stored_once(store):
    out = store.add([draft(DEBIAN), draft(DEBIAN, file="z.jsonl"), draft(UBUNTU)])
    assert [o.status for o in out] == ["added", "duplicate", "added"]
    assert out[1].id == out[0].id
    assert store.count() == 2
    rows = {r.id: r for r in store.list()}
    assert rows[out[0].id].metadata["seen_count"] == 2


def test_near_duplicate_merges_but_one_entity_difference_stays_two(store):
    a = store.add([draft("Use uv instead of pip for installing Python dependencies.\nKeywords (zh): uv")])[0]
    b = store.add([draft("Always use uv instead of pip for installing Python dependencies.\nKeywords (zh): uv",
                         file="n.jsonl")])[0]
    assert b.status == "duplicate" and b.id == a.id and b.reason.startswith("near:")
    assert float(b.reason.split(":")[1]) >= 0.9
    c = store.add([draft(DEBIAN), draft(UBUNTU)])
    assert [o.status for o in c] == ["added", "added"]


def test_same_memory_in_two_scopes_is_two_rows(store):
    out = store.add([draft(UV, scope="global"), draft(UV, scope="agent:coder")])
    assert [o.status for o in out] == ["added", "added"]
    assert {r.scope for r in store.list()} == {"global", "agent:coder"}


def test_chinese_word_inside_a_sentence_is_found_by_full_text(store):
    store.add([draft(MIGRATE_ZH), draft(UV), draft("用户喜欢深色主题的编辑器。\nKeywords (zh): 深色主题")])
    hits = store.search("迁移", mode="fts")
    assert [h.text for h in hits] == [MIGRATE_ZH]
    assert store.search("主题", mode="fts")[0].text.startswith("用户喜欢")


def test_english_paraphrase_finds_chinese_memory_by_vector(store):
    store.add([draft(MIGRATE_ZH), draft(UV), draft(DEBIAN),
               draft("用户喜欢深色主题的编辑器。\nKeywords (zh): 深色主题")])
    hits = store.search("run the database migration script before deploying the service", mode="vector", limit=2)
    assert hits[0].text == MIGRATE_ZH


def test_hybrid_ranks_rows_found_by_both_first_and_filters_apply(store):
    store.add([draft(MIGRATE_ZH, scope="agent:main"), draft(UV), draft(DEBIAN, category="decision"),
               draft("数据库连接池的大小设置为 20。\nKeywords (zh): 数据库; 连接池")])
    hits = store.search("数据库迁移", mode="hybrid", limit=3)
    assert hits[0].text == MIGRATE_ZH and sorted(hits[0].sources) == ["fts", "vector"]
    assert all(h.scope == "global" for h in store.search("数据库迁移", scope="global"))
    assert [h.text for h in store.search("deploy", category="decision", mode="vector")] == [DEBIAN]


def test_second_store_object_sees_other_writers_rows_and_dedups_against_them(tmp_path, local_embedder):
    s = settings_for(tmp_path)
    reader = MemoryStore.open(s, embedder=local_embedder)
    assert reader.list() == []
    writer = MemoryStore.open(s, embedder=local_embedder)
    writer.add([draft(UV)])
    assert [r.text for r in reader.list()] == [UV]
    assert reader.search("Debian", mode="fts") == []
    writer.add([draft(DEBIAN)])
    assert reader.search("Debian", mode="fts")[0].text == DEBIAN
    assert reader.add([draft(UV, file="other.jsonl")])[0].status == "duplicate"
    assert reader.count() == 2


def test_unrelated_english_and_chinese_memories_are_both_kept(store):
    store.add([draft(UV)])
    assert store.add([draft(MIGRATE_ZH)])[0].status == "added"


def test_forget_by_prefix_refuses_short_and_ambiguous_prefixes(store):
    store.import_({"memories": [
        {"id": "abcdef12-0000-4000-8000-000000000001", "text": UV, "category": "fact", "importance": 0.5},
        {"id": "abcdef12-0000-4000-8000-000000000002", "text": DEBIAN, "category": "fact", "importance": 0.5},
    ]})
    with pytest.raises(SchemaMismatch, match="at least 8"):
        store.forget("abcdef1")
    with pytest.raises(SchemaMismatch, match="matches 2"):
        store.forget("abcdef12")
    gone = store.forget("abcdef12-0000-4000-8000-000000000001")
    assert gone.text.split("\nKeywords")[0] == UV.split("\nKeywords")[0] and store.count() == 1  # import adds keywords
    # forgotten means forgotten: the same text is new again
    assert store.add([draft(UV)])[0].status == "added"


def test_vector_size_mismatch_is_refused_and_table_untouched(tmp_path, local_embedder):
    s = settings_for(tmp_path)
    small = MemoryStore.open(s, embedder=HashEmbedder(dim=16))
    small.add([draft(UV)])
    version = small.table.version
    with pytest.raises(SchemaMismatch) as err:
        MemoryStore.open(s, embedder=local_embedder)
    msg = str(err.value)
    assert "16-d" in msg and "384-d" in msg and "distill memories reembed" in msg
    with pytest.raises(SchemaMismatch, match="16-d"):
        MemoryStore.open(s)  # the configured local embedder, known size without loading it
    assert lancedb.connect(str(s.db)).open_table("memories").version == version


def test_compaction_keeps_versions_a_reader_may_still_hold(tmp_path, local_embedder):
    s = settings_for(tmp_path, store_compact_small_fragments=1000)
    store = MemoryStore.open(s, embedder=local_embedder)
    for i in range(6):
        store.add([draft(f"Service number {i} listens on port {8000 + i}.\nKeywords (zh): 端口")])
    old = lancedb.connect(str(s.db)).open_table("memories")
    old.checkout(old.version)  # a reader pinned to the pre-compaction version
    fragments_before = store.table.stats()["fragment_stats"]["num_fragments"]
    store.compact()
    assert store.table.stats()["fragment_stats"]["num_fragments"] < fragments_before
    assert old.count_rows() == 6 and len(old.to_arrow()) == 6  # its files are still there
    assert store.search("端口", mode="fts", limit=10) and store.count() == 6


def test_small_writes_trigger_compaction(tmp_path):
    s = settings_for(tmp_path, store_compact_small_fragments=4)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    for i in range(9):
        store.add([draft(f"memory {i} about topic {i * 7}")])
        assert store.table.stats()["fragment_stats"]["num_small_fragments"] < 4
    assert store.count() == 9


def test_drafts_with_invalid_scope_never_reach_a_query():
    with pytest.raises(ValueError, match="scope"):
        MemoryDraft(text="x y", scope="global' OR 1=1 --")
    with pytest.raises(ValueError, match="scope"):
        MemoryDraft(text="x y", scope="agent:")


def test_secrets_are_redacted_before_anything_is_stored(tmp_path):
    store = MemoryStore.open(settings_for(tmp_path), embedder=HashEmbedder())
    key = "sk-proj-" + "Ab3" * 12
    store.add([MemoryDraft(text=f"The OpenAI key {key} lives in .env of the api repo.",
                           metadata={"entities": [f"OPENAI_API_KEY={key}"]})])
    raw = json.dumps(raw_rows(store.settings), default=str)
    assert key not in raw and "[REDACTED:" in raw
    assert store.redacted["openai_key"] >= 1


def test_indexed_search_in_a_small_scope_still_returns_all_its_rows(tmp_path):
    s = settings_for(tmp_path, store_vector_index_min_rows=1000)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    store.add([MemoryDraft(text=f"bulk memory number {i}", scope="global") for i in range(2000)]
              + [MemoryDraft(text=f"tiny scope memory {i}", scope="agent:tiny") for i in range(6)])
    store.compact()
    assert ("vector",) in {tuple(i.columns) for i in store.table.list_indices()}
    hits = store.search("tiny scope memory 2", mode="vector", scope="agent:tiny", limit=10)
    assert sorted(h.text for h in hits) == sorted(f"tiny scope memory {i}" for i in range(6))
    assert hits[0].text == "tiny scope memory 2" and hits[0].score > 0.99


def test_a_zero_vector_is_never_written(tmp_path):
    class Broken(HashEmbedder):
        def passages(self, texts):
            return np.zeros((len(texts), self.dim), dtype=np.float32)

    store = MemoryStore.open(settings_for(tmp_path), embedder=Broken())
    version = store.table.version
    with pytest.raises(SchemaMismatch, match="zero"):
        store.add([draft(UV)])
    assert store.table.version == version and store.count() == 0
    assert store.add([]) == []
