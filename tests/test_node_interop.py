"""Sharing a table with memory-lancedb-pro, checked against the real LanceDB Node clients:
0.26.2 (the plugin's package-lock.json) and a current release, driven the way the plugin's
store and CLI use them (tests/node/plugin_client.mjs)."""

from __future__ import annotations

import json

import lancedb
import pytest

from distill.cli import main
from distill.store import MemoryDraft, MemoryStore
from node_client import CLIENTS, PINNED, NodeError, run
from distill.store.table import table_names
from store_helpers import HashEmbedder, settings_for

GATEWAY = "Pitfall: the gateway returns 502 after deploys. Fix: run the migrations first.\nKeywords (zh): 网关; 数据库迁移"
UV = "Preference: use uv instead of pip for Python dependencies.\nKeywords (zh): 依赖管理"
DEBIAN = "Decision: the coder agent deploys only on Debian 12.\nKeywords (zh): 部署"
CJK = "部署服务之前必须先运行数据库迁移脚本，否则网关会返回502。\nKeywords (zh): 部署; 数据库迁移"


def drafts(scope="global"):
    # one write, one scope: the constant column that made 0.26.2 panic on a 2.2 table
    return [MemoryDraft(text=t, category="fact", scope=scope, importance=0.8,
                        metadata={"provenance": {"agent": "main", "file": "a.jsonl", "ranges": [[i, i + 1]]}})
            for i, t in enumerate((GATEWAY, UV, DEBIAN))]


def version(s) -> int:
    return lancedb.connect(str(s.db)).open_table("memories").version


@pytest.mark.parametrize("client", CLIENTS)
def test_a_table_distill_creates_is_read_listed_and_searched_by_the_plugins_clients(tmp_path, client):
    s = settings_for(tmp_path)
    emb = HashEmbedder()
    store = MemoryStore.open(s, embedder=emb)
    ids = [o.id for o in store.add(drafts())]
    assert lancedb.connect(str(s.db)).open_table("memories").list_indices()[0].index_type == "FTS"

    start, count, listed, scoped, nearest, bm25 = run(
        client, s.db, {"op": "start", "dim": 384}, {"op": "count"}, {"op": "list"},
        {"op": "list", "scope": "agent:coder"},
        {"op": "vector", "vector": emb.query(UV).tolist(), "scope": "global"},
        {"op": "fts", "query": "gateway migrations", "scope": "global"})
    assert start["created_fts"] == (client == PINNED)  # 0.26.2 cannot read the ICU index; 0.39 uses it
    assert count == 3 and {m["id"] for m in listed} == set(ids)
    assert all(m["scope"] == "global" and m["timestamp"] > 1.7e12 for m in listed)
    assert scoped == []
    assert nearest[0] == ids[1]
    assert bm25[0] == ids[0]


def test_python_lancedbs_own_default_format_is_what_crashes_the_pinned_client(tmp_path):
    """Why ``store_file_format`` exists: the same table in LanceDB's default format (2.2)."""
    s = settings_for(tmp_path, store_file_format="stable")
    MemoryStore.open(s, embedder=HashEmbedder()).add(drafts())
    with pytest.raises(NodeError, match="[Pp]anic"):
        run(PINNED, s.db, {"op": "list"})


@pytest.mark.parametrize("fmt", ["2.0", "2.1"])
def test_both_formats_the_pinned_client_reads(tmp_path, fmt):
    from distill.store.table import file_formats

    s = settings_for(tmp_path, store_file_format=fmt)
    MemoryStore.open(s, embedder=HashEmbedder()).add(drafts())
    assert file_formats(s.db / "memories.lance") == [fmt]
    assert len(run(PINNED, s.db, {"op": "list", "scope": "global"})[0]) == 3


def test_doctor_says_why_the_plugin_cannot_read_a_table_and_migrate_fixes_it(tmp_path, monkeypatch, capsys):
    s = settings_for(tmp_path, store_file_format="stable")
    ids = {o.id for o in MemoryStore.open(s, embedder=HashEmbedder()).add(drafts())}
    monkeypatch.setenv("DISTILL_DB", str(s.db))
    monkeypatch.setenv("DISTILL_STATE_DIR", str(s.state_dir))
    v = version(s)

    assert main(["memories", "doctor"]) == 0
    report = capsys.readouterr().out
    assert "file format: 2.2" in report and "can read it: NO" in report and "distill memories migrate" in report
    assert "text_idx: FTS on text, tokenizer icu, index format 2, made by distill" in report
    assert "vectors: 384-d; recorded embedder: test:hash" in report
    assert version(s) == v

    assert main(["memories", "migrate", "--json"]) == 0
    migrated = json.loads(capsys.readouterr().out)
    assert migrated["old_format"] == "2.2" and migrated["new_format"] == "2.0" and migrated["rows"] == 3
    assert main(["memories", "doctor", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["file_format"] == "2.0" and after["pinned_client_reads"] and after["rows"] == 3
    listed, = run(PINNED, s.db, {"op": "list"})
    assert {m["id"] for m in listed} == ids
    assert migrated["backup_table"] in table_names(lancedb.connect(str(s.db)))


def test_a_row_the_plugin_writes_is_read_and_deduplicated_by_distill(tmp_path):
    s = settings_for(tmp_path)
    emb = HashEmbedder()
    row = {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "text": GATEWAY, "vector": emb.passages([GATEWAY])[0].tolist(),
           "category": "fact", "scope": "global", "importance": 0.7, "timestamp": 1772359200000, "metadata": "{}"}
    run(PINNED, s.db, {"op": "start", "dim": 384}, {"op": "add", "rows": [row]})

    store = MemoryStore.open(s, embedder=emb)
    assert [(m.id, m.timestamp) for m in store.list()] == [(row["id"], 1772359200000)]
    out = store.add(drafts())
    assert [o.status for o in out] == ["duplicate", "added", "added"] and out[0].id == row["id"]
    md = {m.id: m.metadata for m in store.list()}[row["id"]]
    assert md["seen_count"] == 2
    # and the plugin still reads everything, its own index untouched
    listed, = run(PINNED, s.db, {"op": "list"})
    assert len(listed) == 3


def test_the_fts_index_survives_alternating_starts_and_read_only_commands_never_write(tmp_path, monkeypatch, capsys):
    s = settings_for(tmp_path)
    emb = HashEmbedder()
    store = MemoryStore.open(s, embedder=emb)  # distill creates the table and its ICU index
    store.add(drafts())
    first = run(PINNED, s.db, {"op": "start", "dim": 384})[0]
    assert first["created_fts"]  # 0.26.2 cannot read this LanceDB's index, so it makes its own, once

    def plugin_index():
        return [(i.name, i.index_version, i.index_details.get("base_tokenizer"))
                for i in lancedb.connect(str(s.db)).open_table("memories").list_indices() if i.index_type == "FTS"]

    index = plugin_index()
    assert index == [("text_idx", 1, "simple")]
    v = version(s)

    monkeypatch.setenv("DISTILL_DB", str(s.db))
    monkeypatch.setenv("DISTILL_STATE_DIR", str(s.state_dir))
    for argv in (["list"], ["stats"], ["export"], ["search", "gateway", "--mode", "fts"], ["doctor"]):
        assert main(["memories", *argv, "--json"]) == 0, argv
        capsys.readouterr()
        assert version(s) == v, f"`distill memories {' '.join(argv)}` wrote to the table"

    again = MemoryStore.open(s, embedder=emb)  # a writer's start keeps the plugin's index
    again.add([MemoryDraft(text="Fact: the staging database is reset every Monday.", scope="global")])
    assert plugin_index() == index
    for _ in range(2):
        started, bm25, scoped = run(PINNED, s.db, {"op": "start", "dim": 384},
                                    {"op": "fts", "query": "staging Monday"}, {"op": "list", "scope": "global"})
        assert not started["created_fts"] and bm25 and len(scoped) == 4
        MemoryStore.open(s, embedder=emb).compact()
        assert plugin_index() == index  # compaction updates the plugin's index, in its own format
    assert {"name": "text_idx", "type": "FTS", "columns": ["text"]} in run(PINNED, s.db, {"op": "indices"})[0]


def test_chinese_search_works_on_a_table_the_plugin_created(tmp_path):
    s = settings_for(tmp_path)
    emb = HashEmbedder()
    rows = [{"id": f"00000000-0000-4000-8000-00000000000{i}", "text": t, "vector": emb.passages([t])[0].tolist(),
             "category": "fact", "scope": "global", "importance": 0.7, "timestamp": 1772359200000 + i,
             "metadata": "{}"} for i, t in enumerate((CJK, UV, DEBIAN))]
    run(PINNED, s.db, {"op": "start", "dim": 384}, {"op": "add", "rows": rows})
    plugin_only, = run(PINNED, s.db, {"op": "fts", "query": "迁移"})
    assert plugin_only == []  # its index makes the whole sentence one token

    store = MemoryStore.open(s, embedder=emb, read_only=True)
    for query in ("迁移", "数据库迁移", "网关 返回", "运行迁移脚本"):
        assert [h.id for h in store.search(query, mode="fts")][:1] == [rows[0]["id"]], query
    assert [h.id for h in store.search("uv pip", mode="fts")][:1] == [rows[1]["id"]]


@pytest.mark.parametrize("filters", [{}, {"scope": "agent:coder"}, {"category": "decision"}])
def test_export_is_byte_for_byte_what_memory_pro_export_writes(tmp_path, monkeypatch, capsys, filters):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    store.add(drafts())  # one call: three rows with the same timestamp
    store.add([MemoryDraft(text=DEBIAN.replace("12", "13"), category="decision", scope="agent:coder", importance=1.0),
               MemoryDraft(text="网关重启前需要先清空缓存 \"quoted\" \\ \t tab", scope="agent:coder", importance=0.55)])
    monkeypatch.setenv("DISTILL_DB", str(s.db))
    monkeypatch.setenv("DISTILL_STATE_DIR", str(s.state_dir))
    flags = [a for k, v in filters.items() for a in (f"--{k}", v)]
    out = tmp_path / "distill.json"
    assert main(["memories", "export", *flags, "--output", str(out)]) == 0
    ours = out.read_text(encoding="utf-8")
    exported_at = json.loads(ours)["exportedAt"]
    assert len(exported_at) == len("2026-11-30T15:28:00.123Z") and exported_at.endswith("Z")
    theirs, = run(PINNED, s.db, {"op": "export", "exportedAt": exported_at, **filters})
    assert ours == theirs
    capsys.readouterr()
    assert main(["memories", "export", *flags]) == 0
    printed = capsys.readouterr().out
    printed_at = json.loads(printed)["exportedAt"]
    assert printed.replace(printed_at, exported_at) == theirs + "\n"  # stdout: console.log's newline


def test_import_and_export_round_trip_in_both_directions(tmp_path, monkeypatch, capsys):
    emb = HashEmbedder()
    texts = [GATEWAY, UV, DEBIAN]
    # plugin -> distill: rows the plugin wrote, exported by it, imported by distill
    plugin_db = tmp_path / "plugin"
    rows = [{"id": f"00000000-0000-4000-8000-00000000000{i}", "text": t, "vector": emb.passages([t])[0].tolist(),
             "category": "fact", "scope": ("global", "agent:main", "custom:team")[i], "importance": 0.75,
             "timestamp": 1772359200000 + i, "metadata": json.dumps({"source": "manual", "n": i})}
            for i, t in enumerate(texts)]
    _, _, plugin_export = run(PINNED, plugin_db, {"op": "start", "dim": 384}, {"op": "add", "rows": rows},
                              {"op": "export"})
    s = settings_for(tmp_path / "d")
    store = MemoryStore.open(s, embedder=emb)
    report = store.import_(json.loads(plugin_export))
    assert (report.added, report.invalid) == (3, 0)
    back = {m["id"]: m for m in store.export()["memories"]}
    for r in rows:
        got = back[r["id"]]
        assert (got["text"], got["scope"], got["timestamp"], got["importance"]) == (
            r["text"], r["scope"], r["timestamp"], r["importance"])
        assert json.loads(got["metadata"])["source"] == "manual"  # the plugin's metadata is kept
    again = store.import_(json.loads(plugin_export))
    assert (again.added, again.duplicate) == (0, 3)

    # distill -> plugin: the plugin puts every entry in one scope (its default, or --scope);
    # `distill memories import` does the same only with --scope
    from distill.store.interchange import dumps

    doc = dumps(store.export())
    vectors = {t: emb.passages([t])[0].tolist() for t in texts}
    for target, flag in ((tmp_path / "p2", None), (tmp_path / "p3", "agent:qa")):
        start, result, listed = run(PINNED, target, {"op": "start", "dim": 384},
                                    {"op": "import", "document": doc, "vectors": vectors, "scope": flag},
                                    {"op": "list"})
        assert result == {"imported": 3, "skipped": 0}
        assert {m["scope"] for m in listed} == {flag or "global"}
        assert {m["id"] for m in listed} == {r["id"] for r in rows}
        forced = MemoryStore.open(settings_for(target / "d"), embedder=emb)
        forced.import_(json.loads(doc), scope=flag)
        assert {m.scope for m in forced.list()} == ({flag} if flag else {"global", "agent:main", "custom:team"})
