"""The memory table on an object store: the real S3 protocol (moto's server on 127.0.0.1),
the real LanceDB object store, the real pipeline and CLI."""

from __future__ import annotations

import json

import lancedb

from distill.store import MemoryDraft, MemoryStore
from distill.store import converge as conv
from distill.store.table import table_names
from tests.pipeline_helpers import EN, ZH, write_session
from tests.s3_server import SECRET, s3_server, s3_uri  # noqa: F401  (fixtures)
from tests.store_helpers import HashEmbedder
from tests.tail_helpers import run_main


def _flags(root, uri, host="host-a"):
    return ["--state-dir", str(root / "state"), "--agents-dir", str(root / "agents"), "--db", uri], {"DISTILL_HOST": host}


def test_pipeline_and_memories_commands_on_s3(tmp_path, s3_uri):
    write_session(tmp_path, "main", "s-en", EN)
    write_session(tmp_path, "ops", "s-zh", ZH)
    flags, env = _flags(tmp_path, s3_uri)

    def distill(*args):
        out = run_main([*flags, *args], env=env)
        assert out.returncode == 0, out.stderr
        for stream in (out.stdout, out.stderr):
            assert SECRET not in stream
        return out

    run = json.loads(distill("run", "--json").stdout)
    batch_file = run["batchFile"]
    distill("distill", "--batch-file", batch_file, "--commit")
    for f in (tmp_path / "state").rglob("*"):  # batch files, cursor, last run, logs
        assert not f.is_file() or SECRET.encode() not in f.read_bytes(), f
    listed = json.loads(distill("memories", "list", "--json").stdout)
    texts = "\n".join(m["text"] for m in listed["memories"]) if isinstance(listed, dict) else \
        "\n".join(m["text"] for m in listed)
    assert "uv instead of pip" in texts and "Debian 12" in texts
    # nothing was written next to the state dir or in the working directory: the rows are in the bucket
    assert not (tmp_path / "s3:").exists()
    table = lancedb.connect(s3_uri).open_table("memories")
    rows = table.to_arrow().to_pylist()
    assert len(rows) == 3
    hosts = {s.get("host") for r in rows for s in json.loads(r["metadata"])["sources"]}
    assert hosts == {"host-a"}

    # replaying the same input (a second host reading a copy of the same transcripts) adds nothing
    again = json.loads(distill("run", "--json").stdout)
    assert again.get("batchFile") is None
    hits = distill("memories", "search", "libpq", "--json").stdout
    assert "libpq5" in hits
    stats = json.loads(distill("memories", "stats", "--json").stdout)
    assert stats["total"] == 3 and stats["db"] == s3_uri
    assert "3 memories" in distill("memories", "stats").stdout
    exported = json.loads(distill("memories", "export").stdout)
    assert len(exported["memories"]) == 3
    distill("memories", "compact")
    converged = json.loads(distill("memories", "converge", "--json").stdout)
    assert converged["merged"] == 0 and converged["copies"] == 0
    status = distill("status").stdout
    assert "shared table" in status and "host-a" in status
    doctor = distill("memories", "doctor", "--json").stdout
    assert json.loads(doctor)["rows"] == 3


def test_a_bad_endpoint_is_an_error_without_the_secret(tmp_path, s3_uri, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    flags, env = _flags(tmp_path, s3_uri)
    out = run_main([*flags, "memories", "stats"], env={**env, "DISTILL_STORAGE_OPTIONS": json.dumps(
        {"aws_secret_access_key": SECRET, "timeout": "2s", "connect_timeout": "1s"})})
    assert out.returncode != 0
    assert "cannot open the object store at " + s3_uri in out.stderr and "AWS_ENDPOINT_URL" in out.stderr
    assert SECRET not in out.stdout + out.stderr
    status = run_main([*flags, "status"], env={**env, "DISTILL_STORAGE_OPTIONS": json.dumps(
        {"aws_secret_access_key": SECRET, "timeout": "2s", "connect_timeout": "1s"})})
    assert status.returncode == 0, status.stderr  # this host's cursors are still shown
    assert f"shared table memories in {s3_uri}: cannot read it" in status.stdout
    assert SECRET not in status.stdout + status.stderr


def _store(uri, tmp_path, host):
    from distill.config import load_settings

    s = load_settings(db=uri, state_dir=str(tmp_path / host), host=host)
    return MemoryStore.open(s, embedder=HashEmbedder())


def _draft(text, host, n):
    return MemoryDraft(text=text, scope="global", category="fact",
                       metadata={"provenance": {"agent": "main", "file": f"{host}.jsonl", "ranges": [[n, n + 1]]}})


def test_two_hosts_adding_at_the_same_moment_converge(tmp_path, s3_uri):
    """Both hosts read the table before either commits: the same memory gets the same id (one
    row, both sources), and a near duplicate is folded into the older row by the next pass."""
    a, b = _store(s3_uri, tmp_path, "host-a"), _store(s3_uri, tmp_path, "host-b")
    same = "Decision: the gateway runs behind nginx on port 8443.\nKeywords (zh): 网关; 端口"
    a.index.refresh(a.table)
    b.index.refresh(b.table)
    a_outcome = a._decide_and_write([_draft(same, "a", 1)], a._passages([same]), [None], [None], False)
    # b decides against the version it read before a's commit: "added", and writes the same id
    b_outcome = b._decide_and_write([_draft(same, "b", 1)], b._passages([same]), [None], [None], False)
    assert a_outcome[0].status == b_outcome[0].status == "added" and a_outcome[0].id == b_outcome[0].id
    rows = a.table.to_arrow().to_pylist()
    assert len(rows) == 1
    sources = json.loads(rows[0]["metadata"])["sources"]
    assert {s["host"] for s in sources} == {"host-a", "host-b"}

    # two copies of one id (inserts that committed in the same instant) become one
    row = dict(rows[0], metadata=json.dumps({**json.loads(rows[0]["metadata"]), "sources": [
        {"key": "k-other", "seen_at": 1, "host": "host-c"}]}))
    a.table.add([row])
    report = conv.run(a, window_minutes=None)
    assert report.copies == 1
    rows = a.table.to_arrow().to_pylist()
    assert len(rows) == 1
    assert {s["host"] for s in json.loads(rows[0]["metadata"])["sources"]} == {"host-a", "host-b", "host-c"}


def test_a_near_duplicate_from_another_host_is_folded_after_the_write_or_by_the_pass(tmp_path, s3_uri):
    from tests.test_store_s3_hosts import NearEmbedder, text_of

    a, b = _store(s3_uri, tmp_path, "host-a"), _store(s3_uri, tmp_path, "host-b")
    a._embedder = b._embedder = NearEmbedder()
    a.index.refresh(a.table)
    b.index.refresh(b.table)
    kept = a._decide_and_write([_draft(text_of(1), "a", 1)], a._passages([text_of(1)]), [None], [None], False)[0]
    # b read the table before a's commit: its dedup saw nothing, and its write notices a's commit
    b._decide_and_write([_draft(text_of(1, near=True), "b", 1)], b._passages([text_of(1, near=True)]),
                        [None], [None], False)
    rows = a.table.to_arrow().to_pylist()
    assert [r["id"] for r in rows] == [kept.id] and rows[0]["text"] == text_of(1)
    assert {s["host"] for s in json.loads(rows[0]["metadata"])["sources"]} == {"host-a", "host-b"}

    # a host that died between its commit and that check: the next pass (housekeeping, or the command) folds it
    import time as _time

    older = rows[0]
    newer = dict(older, id="0000feed-0000-4000-8000-000000000000", text=text_of(1, near=True),
                 timestamp=int(_time.time() * 1000) + 1,
                 metadata=json.dumps({"sources": [{"key": "k-c", "seen_at": 5, "host": "host-c"}], "seen_count": 1}))
    a.table.add([newer])
    assert a.table.count_rows() == 2
    flags, env = _flags(tmp_path, s3_uri)
    out = run_main([*flags, "memories", "converge", "--json"], env=env)  # reads the stored vectors, embeds nothing
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["merged"] == 1
    rows = a.table.to_arrow().to_pylist()
    assert [r["id"] for r in rows] == [kept.id]
    assert {s["host"] for s in json.loads(rows[0]["metadata"])["sources"]} == {"host-a", "host-b", "host-c"}


def test_a_uri_db_stays_a_uri_from_every_layer(tmp_path, monkeypatch):
    from pathlib import Path

    from distill.config import load_settings

    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('db = "s3://team-memory/distill/"\nstorage_options = {region = "auto"}\n')
    s = load_settings(state_dir=str(state))
    assert s.db == "s3://team-memory/distill" and s.storage_options == {"region": "auto"}  # not resolved as a path
    assert s.store_lock_path == state / "store-write.lock"  # this host's writers; nothing created beside the URI
    assert load_settings(state_dir=str(state), db=Path("s3://b/p")).db == "s3://b/p"  # a flag parsed as a Path
    monkeypatch.setenv("DISTILL_DB", "gs://bucket/x")
    assert load_settings(state_dir=str(state)).db == "gs://bucket/x"
    assert load_settings(state_dir=str(state), db=str(tmp_path / "local")).db == tmp_path / "local"
    assert load_settings(state_dir=str(state), db=f"file://{tmp_path}/local").db == tmp_path / "local"


def test_reembed_and_compaction_on_s3(tmp_path, s3_uri):
    store = _store(s3_uri, tmp_path, "host-a")
    store.add([_draft(f"Fact {n}: backups of host-{n} run at {n}:00.", "a", n) for n in range(5)])
    report = store.reembed(store.settings, embedder=HashEmbedder(dim=64, name="test:h64"))
    assert report.rows == 5 and report.new_dim == 64
    db = lancedb.connect(s3_uri)
    assert report.backup_table in table_names(db) and store.dim == 64
    store.compact()  # converge + optimize with the grace period: nothing lost
    assert db.open_table("memories").count_rows() == 5
