"""``distill backfill``: history skipped by ``init``, through the real pipeline and store."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distill.backfill import progress_printer, run_backfill
from distill.config import load_settings
from distill.tails.cursor import Cursor
from distill.lock import FileLock
from distill.pipeline import run_distill
from tests.fakes import FakeOpenAI
from tests.tail_helpers import header, msg, run_main

FACTS = [
    "记住：以后这个仓库一律用 uv 管理依赖，不要用 pip。",
    "We decided to deploy the billing service only on Debian 12 hosts, because Ubuntu images lack libssl 3.",
    "From now on always run pytest -x -q before committing.",
    "I prefer ruff over flake8 for linting in this repo.",
    "决定：数据库迁移统一用 alembic，不再手写 SQL。",
    "Remember: the staging API lives at https://staging.internal.example/api and needs the VPN.",
]


@pytest.fixture
def world(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DISTILL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DISTILL_AGENTS_DIR", str(tmp_path / "agents"))
    monkeypatch.setenv("DISTILL_DB", str(tmp_path / "db"))
    # caps bind per run; lifted so that split runs and one run can be compared memory for memory
    monkeypatch.setenv("DISTILL_MAX_PER_AGENT", "100")
    monkeypatch.setenv("DISTILL_MAX_GLOBAL", "100")
    return tmp_path


def write(root: Path, agent: str, name: str, texts: list[str], mtime: float | None = None) -> Path:
    p = root / "agents" / agent / "sessions" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "ab") as fh:
        if fh.tell() == 0:
            fh.write(header(name))
        for i, t in enumerate(texts):
            fh.write(msg(t, "user", i))
    if mtime is not None:
        os.utime(p, (mtime, mtime))
    return p


def texts(root: Path) -> list[str]:
    import lancedb

    db = lancedb.connect(str(root / "db"))
    if "memories" not in db.list_tables().tables:
        return []
    return sorted(db.open_table("memories").to_arrow()["text"].to_pylist())


def cli(*args: str, process: bool = False) -> subprocess.CompletedProcess:
    """``distill ARGS`` in this process, or in a real one where its exit status is the point."""
    if not process:
        return run_main(list(args))
    return subprocess.run([sys.executable, "-m", "distill", *args], capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())


def test_backfill_reads_the_history_init_skipped_and_the_run_reads_the_rest(world, tmp_path):
    a = write(world, "main", "a", FACTS[:3])
    b = write(world, "ops", "b", FACTS[3:5])
    assert cli("init").returncode == 0
    write(world, "main", "a", FACTS[5:])  # after init: the main run's share
    r = cli("backfill")
    assert r.returncode == 0, r.stderr
    backfilled = texts(world)
    assert f"{len(backfilled)} memories added" in r.stdout and f"memories {len(backfilled)}" in r.stderr
    assert any("uv" in t for t in backfilled) and not any("staging" in t for t in backfilled)
    bcur = Cursor.load(world / "state" / "backfill-cursor.json").files
    limits = json.loads((world / "state" / "backfill.json").read_text())["limits"]
    assert {e["path"]: e["offset"] for e in bcur.values()} == {
        str(a): limits[next(k for k, e in bcur.items() if e["path"] == str(a))], str(b): b.stat().st_size}
    assert cli("run", "--distill").returncode == 0
    after = texts(world)
    assert any("staging" in t for t in after)
    # the same as distilling everything in one go: nothing lost, nothing twice
    ref = tmp_path / "ref"
    for f in (a, b):
        dst = ref / "agents" / f.parent.parent.name / "sessions" / f.name
        dst.parent.mkdir(parents=True)
        dst.write_bytes(f.read_bytes())
    run_distill(load_settings(state_dir=ref / "state", agents_dir=ref / "agents", db=ref / "db"))
    assert after == texts(ref)
    again = cli("backfill")
    assert again.returncode == 0 and "nothing to backfill" in again.stdout
    assert texts(world) == after


def test_dry_run_estimates_and_spends_nothing(world):
    write(world, "main", "a", FACTS[:3])
    write(world, "ops", "b", FACTS[3:] * 30)
    assert cli("init").returncode == 0
    with FakeOpenAI(default=("json", {"memories": []})) as fake:
        env = {"DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url, "DISTILL_LLM_MODEL": "m",
               "DISTILL_CHUNK_TOKENS": "800"}
        r = subprocess.run([sys.executable, "-m", "distill", "--json", "backfill", "--dry-run"], capture_output=True,
                           text=True, timeout=120, env={**os.environ, **env})
        assert fake.requests == []
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["action"] == "dry-run" and out["files"] == 2
    est = out["estimate"]
    assert est["turns"] == 3 + 3 * 30 and est["chunks"] >= 2 and est["llm_calls"] == est["chunks"]
    assert est["tokens"] > 800 and est["output_tokens_max"] == est["chunks"] * 2064
    assert not (world / "state" / "backfill-cursor.json").exists()
    assert not list((world / "state").glob("batches/*.json")) and texts(world) == []
    human = cli("backfill", "--dry-run").stdout
    assert "would read 2 files" in human and "nothing was spent" in human


def test_filters_by_agent_and_dates(world):
    day = 86400
    old = time.time() - 40 * day
    write(world, "main", "old", FACTS[:1], mtime=old)
    write(world, "main", "new", FACTS[1:2])
    write(world, "ops", "new", FACTS[2:3])
    assert cli("init").returncode == 0
    s = load_settings()

    def picked(**kw):
        return sorted((t.agent, Path(t.path).stem) for t in run_backfill(s, dry_run=True, **kw).todo)

    assert picked() == [("main", "new"), ("main", "old"), ("ops", "new")]
    assert picked(agent="ops") == [("ops", "new")]
    since = time.strftime("%Y-%m-%d", time.localtime(time.time() - 2 * day))
    assert picked(since=since) == [("main", "new"), ("ops", "new")]
    until = time.strftime("%Y-%m-%d", time.localtime(old))
    assert picked(until=until) == [("main", "old")]  # inclusive: the whole day
    r = cli("backfill", "--since", "last tuesday", "--dry-run", process=True)
    assert r.returncode == 2 and "YYYY-MM-DD" in r.stderr


def test_interrupted_backfill_resumes_without_loss_or_doubles(world, tmp_path):
    files = [write(world, "main", f"s{i}", [f"{t} (project {i})" for t in FACTS[:4]]) for i in range(3)]
    assert cli("init").returncode == 0
    env = {**os.environ, "DISTILL_MAX_MESSAGES_PER_AGENT": "3"}  # several small batches
    rng = random.Random(7)
    killed = 0
    for _ in range(2):
        p = subprocess.Popen([sys.executable, "-m", "distill", "backfill"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None \
                and not (world / "state" / "backfill-cursor.json").exists():
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
    assert killed
    r = subprocess.run([sys.executable, "-m", "distill", "backfill"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    got = texts(world)
    ref = tmp_path / "ref"
    for f in files:
        dst = ref / "agents" / "main" / "sessions" / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    run_distill(load_settings(state_dir=ref / "state", agents_dir=ref / "agents", db=ref / "db",
                              max_messages_per_agent=3))
    assert got == texts(ref) and len(got) == len(set(got))
    bcur = Cursor.load(world / "state" / "backfill-cursor.json").files
    assert sorted(e["offset"] for e in bcur.values()) == sorted(f.stat().st_size for f in files)


def test_one_backfill_at_a_time(world):
    write(world, "main", "a", FACTS[:1])
    s = load_settings()
    with FileLock(s.state_dir / "backfill.lock", purpose="distill backfill"):
        r = cli("backfill", process=True)
    assert r.returncode == 75 and f"pid {os.getpid()}" in r.stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_plain_lines_otherwise():
    tty, plain = _Tty(), io.StringIO()
    for stream in (tty, plain):
        show = progress_printer(stream)
        show(0, 4, 0, 4096, 0)
        show(1, 4, 1024, 4096, 0)
        show(4, 4, 4096, 4096, 3)
    assert tty.getvalue().count("\r[") == 3 and "[##############################] 100.0%" in tty.getvalue()
    assert tty.getvalue().endswith("\n") and "memories 3" in tty.getvalue()
    lines = plain.getvalue().splitlines()
    assert "\r" not in plain.getvalue() and lines[-1].startswith("backfill: 100.0% files 4/4")
    assert len(lines) == 2  # throttled: the middle update is not worth a line


def test_backfill_reads_archived_sessions_read_only_and_run_never_does(world):
    live = write(world, "main", "live", FACTS[2:3])
    reset = write(world, "main", "old", FACTS[:1])
    reset = reset.rename(reset.with_name("old.jsonl.reset.2026-11-01T10-00-00.000Z"))
    deleted = write(world, "ops", "gone", FACTS[1:2])
    deleted = deleted.rename(deleted.with_name("gone.jsonl.deleted.2026-11-02T10-00-00.000Z"))
    before = {p: (p.read_bytes(), p.stat().st_mtime) for p in (reset, deleted)}
    assert cli("init").returncode == 0
    run = cli("run", "--distill")
    assert run.returncode == 0 and texts(world) == []  # the hourly run: live file marked read, archives skipped
    skipped = cli("backfill", "--no-archives")
    assert skipped.returncode == 0, skipped.stderr
    assert not any("uv" in t or "Debian" in t for t in texts(world))
    r = cli("backfill")
    assert r.returncode == 0, r.stderr
    got = texts(world)
    assert any("uv" in t for t in got) and any("Debian 12" in t for t in got)
    assert {p: (p.read_bytes(), p.stat().st_mtime) for p in (reset, deleted)} == before  # read-only
    bcur = Cursor.load(world / "state" / "backfill-cursor.json").files
    assert {e["path"]: e["offset"] for e in bcur.values() if ".jsonl." in e["path"]} == {
        str(reset): reset.stat().st_size, str(deleted): deleted.stat().st_size}
    again = cli("backfill")
    assert again.returncode == 0 and "nothing to backfill" in again.stdout
    assert cli("run", "--distill").returncode == 0 and texts(world) == got
    main = {e["path"] for e in Cursor.load(world / "state" / "cursor.json").files.values()}
    assert main == {str(live)}  # the main cursor never took on an archive


@pytest.mark.parametrize("per_agent", [2000, 2])
def test_dry_run_reads_what_the_real_backfill_then_reads(tmp_path, monkeypatch, per_agent):
    """On the shipped example transcripts (OpenClaw, Claude Code, Codex; noise, tool output,
    secrets, a distiller's own agent), the dry run's files, bytes and turns are what the real
    backfill then reads — also when the per-agent message cap cuts it into many batches."""
    import shutil

    for key in list(os.environ):
        if key.startswith("DISTILL_"):
            monkeypatch.delenv(key)
    root = tmp_path / "example"
    shutil.copytree(Path(__file__).resolve().parent.parent / "state.example", root)
    s = load_settings(state_dir=root, db=tmp_path / "db")
    s = s.replace(max_messages_per_agent=per_agent)
    assert cli("--state-dir", str(root), "--db", str(tmp_path / "db"), "init").returncode == 0

    dry = run_backfill(s, dry_run=True)
    assert dry.files == len(dry.todo) >= 4 and dry.estimate.turns >= 20
    assert not (root / "backfill-cursor.json").exists() and not (root / "backfill-cursor.seen").exists()

    real = run_backfill(s)
    assert real.summary.turns == dry.estimate.turns
    assert real.summary.counters["chunks"] == dry.estimate.chunks
    if per_agent == 2:
        assert real.summary.counters["batches_committed"] > 1
    after = Cursor.load(root / "backfill-cursor.json").files
    read = {t.key: after[t.key]["offset"] - t.start for t in dry.todo}
    assert sum(read.values()) == dry.bytes and sum(1 for b in read.values() if b) == dry.files


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes()) for p in sorted(folder.rglob("*"))}


def test_dry_run_writes_nothing_and_loses_no_history(world, tmp_path):
    """Audit: `backfill --dry-run` saved backfill.json with the main cursor's offset of the
    moment; a later `init` then moved the main cursor past turns 2 and 3, and the real
    backfill stopped at the old limit, so neither cursor ever read them."""
    fresh = cli("--json", "backfill", "--dry-run")  # on a state that does not exist yet
    assert fresh.returncode == 0, fresh.stderr
    assert not (world / "state").exists(), _tree(world / "state")

    a = write(world, "main", "a", FACTS[:1])
    assert cli("run", "--distill").returncode == 0  # turn 1 committed by the main cursor
    committed = a.stat().st_size
    write(world, "main", "a", FACTS[1:3])  # turns 2 and 3: not read by anyone yet
    before = _tree(world / "state")
    dry = cli("--json", "backfill", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert _tree(world / "state") == before  # no plan, no lock file, nothing
    plan = json.loads(dry.stdout)
    assert [(t["path"], t["start"], t["stop"]) for t in plan["todo"]] == [(str(a), 0, committed)]

    assert cli("init").returncode == 0
    r = cli("--json", "backfill")
    assert r.returncode == 0, r.stderr
    limits = json.loads((world / "state" / "backfill.json").read_text())["limits"]
    assert list(limits.values()) == [a.stat().st_size]  # the plan at the real run, not the dry run's
    ref = tmp_path / "ref"
    dst = ref / "agents" / "main" / "sessions" / a.name
    dst.parent.mkdir(parents=True)
    dst.write_bytes(a.read_bytes())
    run_distill(load_settings(state_dir=ref / "state", agents_dir=ref / "agents", db=ref / "db"))
    assert texts(world) == texts(ref) and len(texts(ref)) == 3  # turns 2 and 3 were read


def test_dry_run_reports_the_plan_the_real_run_then_makes(world):
    a = write(world, "main", "a", FACTS[:2])
    assert cli("init").returncode == 0
    write(world, "main", "a", FACTS[2:3])
    arch = write(world, "main", "old", FACTS[3:4])
    arch.rename(arch.with_name("old.jsonl.reset.2026-11-01T00-00-00.000Z"))
    dry = json.loads(cli("--json", "backfill", "--dry-run").stdout)
    assert not (world / "state" / "backfill.json").exists()
    r = cli("--json", "backfill")
    assert r.returncode == 0, r.stderr
    limits = json.loads((world / "state" / "backfill.json").read_text())["limits"]
    assert {t["key"]: t["stop"] for t in dry["todo"]} == limits
    assert len(dry["todo"]) == 2 and a.stat().st_size > limits[next(t["key"] for t in dry["todo"]
                                                                   if t["path"] == str(a))]


def test_a_damaged_backfill_cursor_says_to_run_backfill_again(world):
    """Its advice is backfill's, not the main cursor's: `distill init` would mark the main tails
    read and lose backfill's history."""
    write(world, "main", "a", FACTS[:2])
    s = load_settings()
    s.state_dir.mkdir(parents=True, exist_ok=True)
    s.state.backfill_cursor.write_bytes(b"{garbage")
    for args in (("backfill", "--dry-run"), ("backfill",)):
        r = cli(*args)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert str(s.state.backfill_cursor) in r.stderr and "not valid JSON" in r.stderr
        assert "move it away and run `distill backfill` again" in r.stderr and "distill init" not in r.stderr
    s.state.cursor.write_bytes(b"{garbage")  # the main cursor keeps its own advice
    r = cli("run")
    assert r.returncode == 1 and "`distill init` (start from now)" in r.stderr
    assert s.state.backfill_cursor.read_bytes() == b"{garbage"


def test_an_unknown_agent_is_named_and_an_invalid_one_is_a_usage_error(world, monkeypatch):
    write(world, "main", "a", FACTS[:1])
    write(world, "ops", "b", FACTS[1:2])
    for bad in ("../x", "a/b", "", "x" * 65):
        r = cli("backfill", "--dry-run", "--agent", bad, process=bad == "../x")
        assert r.returncode == 2 and "is not an agent id" in r.stderr and "[A-Za-z0-9._-]" in r.stderr, r.stderr
    assert not (world / "state").exists(), "a refused command writes nothing"
    assert cli("init").returncode == 0
    r = cli("backfill", "--dry-run", "--agent", "nobody")
    assert r.returncode == 0 and "would read 0 files" in r.stdout
    assert "warning: --agent 'nobody' selects no file: no transcript of agent 'nobody'" in r.stdout
    assert "main, ops" in r.stdout
    out = json.loads(cli("--json", "backfill", "--dry-run", "--agent", "nobody").stdout)
    assert out["files"] == 0 and "nobody" in out["errors"][0]
    r = cli("backfill", "--agent", "memory-distiller")
    assert r.returncode == 0 and "distiller's own agent" in r.stdout
    monkeypatch.setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "main")
    r = cli("backfill", "--dry-run", "--agent", "ops")
    assert r.returncode == 0 and "allow-list" in r.stdout
    r = cli("backfill", "--dry-run", "--agent", "main")
    assert r.returncode == 0 and "warning:" not in r.stdout and "would read 1 file," in r.stdout


def test_history_the_main_run_read_from_byte_0_is_not_distilled_again(world):
    """No `init`: the hourly run read every file from its start. A backfill after it (the
    archive's history, say) must not pay to distil those turns a second time."""
    write(world, "main", "a", FACTS[:3])
    assert cli("run", "--distill").returncode == 0
    stored = texts(world)
    assert stored
    old = write(world, "main", "b", FACTS[3:5])
    old.rename(old.with_name("b.jsonl.reset.2026-11-30T10-00-00.000Z"))  # history the run never reads
    dry = json.loads(cli("--json", "backfill", "--dry-run").stdout)
    assert dry["estimate"]["turns"] == 2, dry  # the archive's two turns, none of the three already stored
    r = json.loads(cli("--json", "backfill").stdout)
    assert r["summary"]["turns"] == 2 and r["summary"]["counters"]["turns_already_read"] == 3, r
    assert len(texts(world)) > len(stored)
