"""``distill memories …`` as a user runs it: real command, real LanceDB directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from distill.cli import main
from distill.cli.render import format_size

EXPORT = {"memories": [
    {"id": "11111111-aaaa-4aaa-8aaa-000000000001", "text": "部署服务之前必须先运行数据库迁移脚本。\nKeywords (zh): 部署; 数据库迁移",
     "category": "fact", "scope": "agent:main", "importance": 0.9, "timestamp": 1772359200000},
    {"id": "22222222-bbbb-4bbb-8bbb-000000000002", "text": "Use uv instead of pip for Python dependencies.\nKeywords (zh): uv",
     "category": "preference", "scope": "global", "importance": 0.8, "timestamp": 1772445600000},
    {"text": "x"},
]}


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DISTILL_DB", str(tmp_path / "db"))
    (tmp_path / "export.json").write_text(json.dumps(EXPORT), encoding="utf-8")

    def run(*argv: str, as_json: bool = True):
        code = main(["memories", *argv, *(["--json"] if as_json else [])])
        out = capsys.readouterr()
        return code, (json.loads(out.out) if as_json and out.out.strip() else out.out), out.err

    run.dir = tmp_path
    return run


def test_import_list_search_stats_forget_export(cli):
    path = str(cli.dir / "export.json")
    code, dry, _ = cli("import", path, "--dry-run")
    assert code == 0 and dry["dry_run"] and dry["added"] == 2 and dry["invalid"] == 1
    code, rep, _ = cli("import", path)
    assert (rep["added"], rep["duplicate"], rep["invalid"]) == (2, 0, 1)
    code, rep, _ = cli("import", path)
    assert (rep["added"], rep["duplicate"]) == (0, 2)

    code, listed, _ = cli("list")
    assert [m["id"][:8] for m in listed["memories"]] == ["22222222", "11111111"]  # newest first
    code, listed, _ = cli("list", "--scope", "agent:main")
    assert [m["scope"] for m in listed["memories"]] == ["agent:main"]
    code, listed, _ = cli("list", "--since", "2026-03-02")
    assert [m["id"][:8] for m in listed["memories"]] == ["22222222"]

    code, found, _ = cli("search", "迁移", "--mode", "fts")
    assert [m["id"][:8] for m in found["memories"]] == ["11111111"]
    code, found, _ = cli("search", "which tool installs python packages", "--mode", "vector", "--limit", "1")
    assert found["memories"][0]["id"].startswith("22222222")

    code, stats, _ = cli("stats")
    assert stats["total"] == 2 and stats["by_scope"] == {"agent:main": 1, "global": 1}
    assert stats["by_category"] == {"fact": 1, "preference": 1} and stats["size_bytes"] > 0
    code, text, _ = cli("stats", as_json=False)
    assert f"{format_size(stats['size_bytes'])} on disk" in text and "  agent:main: 1" in text
    code, text, _ = cli("list", as_json=False)
    assert text.splitlines()[0] == "[22222222] [preference:global] Use uv instead of pip for Python dependencies. (2026-03-02)"

    out_file = cli.dir / "out.json"
    code, res, _ = cli("export", "--scope", "global", "--output", str(out_file))
    doc = json.loads(out_file.read_text())
    assert res["count"] == 1 and [m["id"][:8] for m in doc["memories"]] == ["22222222"]

    code, gone, _ = cli("forget", "22222222")
    assert code == 0 and gone["forgotten"]["id"].startswith("22222222")
    code, stats, _ = cli("stats")
    assert stats["total"] == 1


def test_errors_are_clear_and_nonzero(cli):
    code, err, stderr = cli("forget", "1234")
    assert code != 0 and "at least 8" in err["error"] and "at least 8" in stderr
    (cli.dir / "bad.json").write_text("{not json", encoding="utf-8")
    code, err, _ = cli("import", str(cli.dir / "bad.json"))
    assert code != 0 and "not valid JSON" in err["error"]
    code, err, _ = cli("import", str(cli.dir / "missing.json"))
    assert code != 0 and "cannot read" in err["error"]
    code, err, _ = cli("list", "--since", "last tuesday")
    assert code != 0 and "--since" in err["error"]


def test_human_output_of_a_real_process(tmp_path):
    env = dict(os.environ, DISTILL_STATE_DIR=str(tmp_path / "state"), DISTILL_DB=str(tmp_path / "db"))
    (tmp_path / "e.json").write_text(json.dumps(EXPORT), encoding="utf-8")
    distill = [sys.executable, "-m", "distill"]
    imp = subprocess.run([*distill, "memories", "import", str(tmp_path / "e.json")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert imp.returncode == 0, imp.stderr
    assert "2 added, 0 duplicate, 1 invalid" in imp.stdout
    lst = subprocess.run([*distill, "memories", "list"], env=env, capture_output=True, text=True, timeout=120)
    assert lst.stdout.splitlines()[0].startswith("[22222222] [preference:global] Use uv instead of pip")
    assert "WARN" not in lst.stderr


def test_search_scores_people_read_show_and_list_full_give_provenance(cli, capsys):
    from distill.config import load_settings
    from distill.store.memory import MemoryStore
    from distill.store.models import MemoryDraft

    store = MemoryStore.open(load_settings())
    text = "Pitfall: CI failed with ERR_PNPM_OUTDATED_LOCKFILE. Fix: run pnpm install and commit pnpm-lock.yaml."

    def draft(session: str, start: int) -> MemoryDraft:
        f = f"/home/ana/.openclaw/agents/main/sessions/{session}.jsonl"
        return MemoryDraft(text=text, category="fact", scope="agent:main", metadata={"provenance": {
            "agent": "main", "sessions": [session], "files": [f], "ranges": [{"file": f, "start": start, "end": start + 900}],
            "entryIds": [f"e-{session}"]}})

    row_id = store.add([draft("s-one", 0)])[0].id
    assert store.add([draft("s-two", 4096)])[0].status == "duplicate"

    code, shown, _ = cli("show", row_id[:8])
    assert code == 0 and shown["provenance"]["seen_count"] == 2
    assert shown["provenance"]["sessions"] == ["s-one", "s-two"]
    code, out, _ = cli("show", row_id[:8], as_json=False)
    assert "seen 2x" in out and "entry ids: e-s-one, e-s-two" in out
    assert "s-two.jsonl bytes [4096, 4996)" in out and text in out

    code, out, _ = cli("list", "--full", as_json=False)
    assert text in out and "s-one.jsonl bytes [0, 900)" in out

    code, out, _ = cli("search", "ERR_PNPM_OUTDATED_LOCKFILE", as_json=False)
    score = out.split()[0]
    assert score.endswith("%") and 90 <= int(score[:-1]) <= 100 and row_id[:8] in out
    code, out, _ = cli("search", "best sourdough hydration ratio", as_json=False)
    assert out.startswith("nothing relevant to 'best sourdough hydration ratio'")


def test_import_dry_run_writes_nothing_not_a_table_not_the_lock(cli):
    """A dry run takes the decisions and writes nothing: on a missing store no folder, table or
    index; on an existing one the same table version and the lock file as it was."""
    import lancedb

    path = str(cli.dir / "export.json")
    code, dry, _ = cli("import", path, "--dry-run")
    assert code == 0 and dry["dry_run"] and (dry["added"], dry["duplicate"], dry["invalid"]) == (2, 0, 1)
    assert not (cli.dir / "db").exists()

    assert cli("import", path)[0] == 0
    table = lancedb.connect(str(cli.dir / "db")).open_table("memories")
    version, indices = table.version, [i.index_uuid for i in table.list_indices()]
    lock = cli.dir / "db" / ".distill-write.lock"
    lock.write_text("pid 424242\n")  # as another writer left it
    code, dry, _ = cli("import", path, "--dry-run")
    assert code == 0 and (dry["added"], dry["duplicate"]) == (0, 2)
    table.checkout_latest()
    assert table.version == version and [i.index_uuid for i in table.list_indices()] == indices
    assert lock.read_text() == "pid 424242\n"


@pytest.mark.parametrize("scope", ["bogus", "agent:../../x", "agent:"])
def test_an_invalid_scope_is_a_usage_error_with_json(cli, scope):
    for argv in (["list"], ["search", "uv", "--mode", "fts"], ["export"], ["import", str(cli.dir / "export.json")]):
        code, err, stderr = cli(*argv, "--scope", scope)
        assert code == 2, argv
        assert err["kind"] == "ConfigError" and "--scope" in err["error"] and repr(scope) in err["error"]
        assert "Traceback" not in stderr and stderr.startswith("distill: error: --scope")
    assert not (cli.dir / "db").exists()


def test_check_scope_follows_the_one_agent_id_rule():
    from distill.settings.core import AGENT_ID_RULE
    from distill.store.models import check_scope

    assert check_scope("agent:coder.v2_x-1") == "agent:coder.v2_x-1"
    assert check_scope("custom:team/a") == "custom:team/a"  # the plugin's own scopes keep their rule
    for bad in ("agent:../../x", "agent:a/b", "agent:" + "a" * 65):
        with pytest.raises(ValueError, match=re.escape(AGENT_ID_RULE)):
            check_scope(bad)


def test_export_to_a_folder_or_an_unwritable_path_is_a_clear_error_and_leaves_no_temp_file(cli):
    assert cli("import", str(cli.dir / "export.json"))[0] == 0
    folder = cli.dir / "exports"
    folder.mkdir()
    code, err, stderr = cli("export", "--output", str(folder))
    assert code == 2 and str(folder) in err["error"] and "folder" in err["error"] and "Traceback" not in stderr
    assert [p.name for p in cli.dir.iterdir() if p.name.endswith(".tmp")] == [] and list(folder.iterdir()) == []
    code, err, stderr = cli("export", "--output", "/proc/distill-export.json")
    assert code == 2 and "/proc/distill-export.json" in err["error"] and "Traceback" not in stderr


def test_atomic_write_removes_its_temp_file_when_the_rename_fails(tmp_path):
    from distill.atomic import write_bytes

    (tmp_path / "target").mkdir()
    with pytest.raises(IsADirectoryError):
        write_bytes(tmp_path / "target", b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


@pytest.mark.parametrize("argv", [["list", "--limit", "0"], ["list", "--limit", "-1"],
                                  ["search", "uv", "--limit", "0"], ["search", "uv", "--limit", "-5"]])
def test_a_non_positive_limit_is_a_usage_error(cli, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(["memories", *argv])
    assert exc.value.code == 2
    assert "--limit" in capsys.readouterr().err
