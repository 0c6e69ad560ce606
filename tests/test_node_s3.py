"""memory-lancedb-pro pointed at the same bucket: the plugin's pinned LanceDB Node client (0.26.2)
and a current one read, list and search a table distill wrote on the S3 server (moto on
127.0.0.1), with the endpoint and credentials from the same AWS_* environment."""

from __future__ import annotations

import pytest

from distill.config import load_settings
from distill.store import MemoryStore
from tests.node_client import CLIENTS, PINNED, run
from tests.s3_server import s3_server, s3_uri  # noqa: F401  (fixtures)
from tests.store_helpers import HashEmbedder
from tests.test_node_interop import UV, drafts


@pytest.mark.parametrize("client", CLIENTS)
def test_the_plugins_clients_read_a_table_distill_wrote_on_s3(tmp_path, s3_uri, client):  # noqa: F811
    emb = HashEmbedder()
    store = MemoryStore.open(load_settings(db=s3_uri, state_dir=str(tmp_path / "state")), embedder=emb)
    ids = [o.id for o in store.add(drafts())]
    start, count, listed, nearest, bm25 = run(
        client, s3_uri, {"op": "start", "dim": 384}, {"op": "count"}, {"op": "list"},
        {"op": "vector", "vector": emb.query(UV).tolist(), "scope": "global"},
        {"op": "fts", "query": "gateway migrations", "scope": "global"})
    assert start["created_fts"] == (client == PINNED)  # as on a local directory (test_node_interop)
    assert count == 3 and {m["id"] for m in listed} == set(ids)
    assert nearest[0] == ids[1] and bm25[0] == ids[0]
    # and distill still reads and writes the table after the plugin's client replaced the FTS index
    assert len(store.search("gateway migrations", mode="fts")) >= 1
