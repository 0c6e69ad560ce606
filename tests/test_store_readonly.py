"""Read-only commands never write: not a table, not an index, not a version."""

from __future__ import annotations

from pathlib import Path

import lancedb

from distill.cli import main
from distill.store import MemoryDraft, MemoryStore
from distill.store.table import table_names
from store_helpers import HashEmbedder, make_plugin_table, settings_for


def test_read_only_commands_on_a_missing_table_say_so_and_create_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DISTILL_DB", str(tmp_path / "db"))
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    for argv in (["list"], ["stats"], ["export"], ["doctor"], ["search", "x", "--mode", "fts"]):
        assert main(["memories", *argv]) == 2, argv
        assert "no table 'memories'" in capsys.readouterr().err
    assert table_names(lancedb.connect(str(tmp_path / "db"))) == []


def test_read_only_commands_do_not_create_a_missing_db_folder(tmp_path, monkeypatch, capsys):
    """list / show / stats / search / export / doctor on a --db that does not exist: the "no
    table" message and exit 2 as before, and no folder appears; a writing command creates it."""
    db = tmp_path / "db"
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    for argv in (["list"], ["show", "b35fca96"], ["stats"], ["export"], ["doctor"], ["migrate"],
                 ["search", "x", "--mode", "fts"], ["reembed", "--embedder", "local"]):
        assert main(["--db", str(db), "memories", *argv]) == 2, argv
        assert "no table 'memories'" in capsys.readouterr().err
        assert not db.exists(), argv
    assert not (tmp_path / "state").exists()
    s = settings_for(tmp_path)
    MemoryStore.open(s, embedder=HashEmbedder())
    assert s.db.is_dir()


def test_read_only_commands_do_not_create_the_default_db_folder(tmp_path):
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env["HOME"] = str(home)
    p = subprocess.run([sys.executable, "-m", "distill", "memories", "list"], capture_output=True, text=True,
                       env=env, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert p.returncode == 2 and "no table 'memories'" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert list(home.iterdir()) == []


def test_a_table_without_fts_index_gets_one_from_a_writer_only(tmp_path):
    s = settings_for(tmp_path)
    make_plugin_table(s.db, 384, [], fts=False)
    reader = MemoryStore.open(s, embedder=HashEmbedder(), read_only=True)
    version = reader.table.version
    assert reader.search("anything", mode="fts") == []  # no index: a scan, no error, no write
    assert reader.table.list_indices() == [] and reader.table.version == version
    writer = MemoryStore.open(s, embedder=HashEmbedder())
    writer.add([MemoryDraft(text="Fact: the staging database is reset every Monday.")])
    assert [i.index_type for i in writer.table.list_indices()] == ["FTS"]
    assert [h.text for h in reader.search("staging Monday", mode="fts")] == [
        "Fact: the staging database is reset every Monday."]
