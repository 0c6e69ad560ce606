"""Where a memory came from survives memory-lancedb-pro's metadata patch (it keeps the last
20 ``sources``): distill keeps the newest 20 there and the older ones in ``sources_older``."""

from __future__ import annotations

import json

from distill.store import MemoryDraft, MemoryStore
from distill.store.provenance import PLUGIN_MAX_SOURCES
from store_helpers import HashEmbedder, settings_for

TEXT = "Pitfall: the gateway returns 502 after deploys. Fix: run the migrations first."


def seen_in(n: int) -> MemoryDraft:
    return MemoryDraft(text=TEXT, metadata={"provenance": {"agent": "main", "file": f"s{n}.jsonl", "ranges": [[0, 9]]}})


def plugin_patch(metadata: str) -> str:
    """What the plugin's stringifySmartMetadata does to a row it touches after a recall."""
    md = json.loads(metadata)
    md["access_count"] = md.get("access_count", 0) + 1
    if isinstance(md.get("sources"), list) and len(md["sources"]) > PLUGIN_MAX_SOURCES:
        md["sources"] = md["sources"][-PLUGIN_MAX_SOURCES:]
    return json.dumps(md)


def test_every_source_survives_the_plugins_trim_and_replays_stay_no_ops(tmp_path):
    store = MemoryStore.open(settings_for(tmp_path), embedder=HashEmbedder())
    row_id = store.add([seen_in(0)])[0].id
    for n in range(1, 30):
        assert store.add([seen_in(n)])[0].status == "duplicate"

    raw = store.table.search().where(f"id = '{row_id}'").select(["metadata"]).to_list()[0]["metadata"]
    assert plugin_patch(raw) != raw  # the plugin did touch it...
    store.table.update(where=f"id = '{row_id}'", values={"metadata": plugin_patch(raw)})
    md = store.list()[0].metadata
    files = [s["file"] for s in md["sources_older"] + md["sources"]]
    assert files == [f"s{n}.jsonl" for n in range(30)]  # ...and cut nothing
    assert [s["file"] for s in md["sources"]] == [f"s{n}.jsonl" for n in range(10, 30)]
    assert md["seen_count"] == 30 and md["access_count"] == 1

    version = store.table.version
    assert store.add([seen_in(3)])[0].status == "duplicate"  # an old source replayed: nothing written
    assert store.table.version == version
