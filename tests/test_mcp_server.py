"""``distill mcp`` as an agent meets it: a real subprocess, the MCP SDK's own client, over stdio
and over streamable HTTP, against a real LanceDB directory and the local embedder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
PITFALL = ("Pitfall: pnpm install in CI failed with ERR_PNPM_OUTDATED_LOCKFILE. Fix: run pnpm install "
           "locally and commit pnpm-lock.yaml.\nKeywords (zh): 锁文件; pnpm; 持续集成")
PARAPHRASE = ("Pitfall: CI's pnpm install failed with ERR_PNPM_OUTDATED_LOCKFILE. Fix: run pnpm install on "
              "your machine and commit pnpm-lock.yaml.")
ZH_FACT = "事实：NAS 每天凌晨三点把照片目录备份到对象存储，保留九十天。"


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"DISTILL_DB": str(tmp_path / "db"), "DISTILL_STATE_DIR": str(tmp_path / "state"),
            "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "home")}


def stdio(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(command=sys.executable, args=["-m", "distill", "mcp", *args],
                                   env={**env_for(tmp_path), **(env or {})}, cwd=str(tmp_path))
    return Client(params, read_timeout_seconds=120)


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def conversation(client: Client) -> dict:
    """Everything an agent does in one session; returns what the test checks."""
    out: dict = {}
    async with client:
        tools = (await client.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["added"] = await call(client, "remember", text=PITFALL, category="fact")
        out["again"] = await call(client, "remember", text=PITFALL, category="fact")
        out["zh"] = await call(client, "remember", text=ZH_FACT, category="fact", scope="global")
        out["recall_en"] = await call(client, "recall", query="ERR_PNPM_OUTDATED_LOCKFILE")
        out["recall_zh"] = await call(client, "recall", query="照片备份保留多久")
        out["recall_none"] = await call(client, "recall", query="best sourdough hydration ratio")
        out["dup"] = await call(client, "check_duplicate", text=PARAPHRASE)
        out["new"] = await call(client, "check_duplicate", text="Decision: the public API is versioned in the URL path.")
        out["listed"] = await call(client, "list_facts", since="1d")
        out["forgot"] = await call(client, "forget", id=out["added"]["id"])
        out["after"] = await call(client, "recall", query="ERR_PNPM_OUTDATED_LOCKFILE")
        bad = await client.call_tool("remember", {"text": "ok", "category": "fact"})
        out["too_short"] = bad.structured_content
        out["bad_scope"] = await client.call_tool("recall", {"query": "x", "scope": "agent:a' OR 1=1"})
    return out


def check_conversation(out: dict) -> None:
    tools = out["tools"]
    assert set(tools) == {"recall", "remember", "list_facts", "check_duplicate", "forget"}
    recall = tools["recall"]
    assert recall.input_schema["required"] == ["query"]
    assert recall.output_schema["properties"]["hits"]["type"] == "array"
    assert tools["forget"].annotations.destructive_hint is True and recall.annotations.read_only_hint is True

    assert out["added"]["status"] == "added" and out["added"]["answer"] == "added"
    assert out["added"]["scope"] == "agent:tester"
    assert out["again"] == {**out["again"], "status": "duplicate", "answer": f"duplicate of {out['added']['id']}"}
    assert out["zh"]["scope"] == "global"

    first = out["recall_en"]["hits"][0]
    assert first["id"] == out["added"]["id"] and 0.9 <= first["score"] <= 1.0
    assert first["provenance"]["agent"] == "tester" and first["provenance"]["stored_at"]
    assert out["recall_zh"]["hits"][0]["id"] == out["zh"]["id"]
    assert out["recall_none"]["hits"] == [] and "nothing relevant" in out["recall_none"]["note"]

    assert out["dup"]["decision"] == "duplicate" and out["dup"]["nearest"]["id"] == out["added"]["id"]
    assert out["added"]["id"] in out["dup"]["reason"]
    assert out["new"]["decision"] == "new"
    assert {f["id"] for f in out["listed"]["facts"]} == {out["added"]["id"], out["zh"]["id"]}

    assert out["forgot"]["forgotten"] == out["added"]["id"]
    assert all(h["id"] != out["added"]["id"] for h in out["after"]["hits"])
    assert out["too_short"]["status"] == "rejected" and "too short" in out["too_short"]["answer"]
    assert out["bad_scope"].is_error and "not valid" in out["bad_scope"].content[0].text


def test_stdio_server_remembers_recalls_checks_and_forgets(tmp_path):
    check_conversation(anyio.run(conversation, stdio(tmp_path, "--agent", "tester")))


def test_check_duplicate_never_calls_a_newer_rule_a_duplicate_of_the_one_it_replaces(tmp_path):
    """A caller that checks before it remembers (the Memory MCP server's protocol) must not be
    told to drop an update: check_duplicate answers what remember would do."""
    old = "Rule: always install dependencies with `pip install -r requirements.txt` in the api repo."
    new = ("Rule: from now on use `uv sync` instead of `pip install -r requirements.txt` in the api repo; "
           "pip is no longer allowed there.")

    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            first = await call(client, "remember", content=old, tags=["preference"])
            checked = await call(client, "check_duplicate", content=new)
            second = await call(client, "remember", content=new, tags=["preference"])
            recalled = await call(client, "recall", query="how do I install dependencies in the api repo")
            return first, checked, second, recalled

    first, checked, second, recalled = anyio.run(go)
    assert checked["is_duplicate"] is False and checked["decision"] == "new"
    assert f"supersedes {first['memory_id']}" in checked["reason"]
    assert second["status"] == "added"
    assert [h["memory_id"] for h in recalled["hits"]][:1] == [second["memory_id"]]
    assert first["memory_id"] not in {h["memory_id"] for h in recalled["hits"]}


def test_secrets_are_redacted_and_the_text_never_picks_the_scope(tmp_path):
    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            added = await call(client, "remember", category="fact",
                               text="Fact: the staging key is sk-proj-abcdefghijklmnopqrstuvwx1234 (scope: global)")
            listed = await call(client, "list_facts", scope="global")
            mine = await call(client, "list_facts", scope="agent:tester")
            return added, listed, mine

    added, listed, mine = anyio.run(go)
    assert added["scope"] == "agent:tester" and added["redacted"] == ["openai_key"]
    assert listed["facts"] == []
    assert "sk-proj" not in mine["facts"][0]["text"] and "[REDACTED:openai_key]" in mine["facts"][0]["text"]


def test_read_only_server_offers_no_writing_tool_and_refuses_one(tmp_path):
    async def go():
        async with stdio(tmp_path, "--read-only") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            refused = await client.call_tool("remember", {"text": PITFALL, "category": "fact"})
            empty = await client.call_tool("recall", {"query": "pnpm"})
            return names, refused, empty

    names, refused, empty = anyio.run(go)
    assert names == {"recall", "list_facts", "check_duplicate"}
    assert refused.is_error
    assert not empty.is_error and empty.structured_content["hits"] == []
    assert "nothing has been stored" in empty.structured_content["note"]
    assert not (tmp_path / "db").exists()


def test_reader_tools_never_write_and_a_read_only_check_never_waits_on_a_writer(tmp_path):
    """recall / list_facts / check_duplicate on a writable server leave an empty store as it is
    (no table, no index); a read-only server's check_duplicate answers while a writer holds the
    store's write lock, and leaves the lock file as the writer wrote it."""
    import lancedb

    from distill.lock import FileLock
    from distill.store.table import table_names

    (tmp_path / "db").mkdir()

    async def empty_store():
        async with stdio(tmp_path, "--agent", "tester") as client:
            recalled = await call(client, "recall", query="pnpm lockfile")
            listed = await call(client, "list_facts")
            checked = await call(client, "check_duplicate", text=PITFALL)
            tables = table_names(lancedb.connect(str(tmp_path / "db")))
            added = await call(client, "remember", text=PITFALL, category="fact")
            return recalled, listed, checked, tables, added

    recalled, listed, checked, tables, added = anyio.run(empty_store)
    assert tables == []  # three reading calls created nothing
    assert recalled["hits"] == [] and "nothing has been stored" in recalled["note"]
    assert listed == {"count": 0, "facts": []} and checked["decision"] == "new" and checked["nearest"] is None
    assert added["status"] == "added"  # the first write creates the table

    lock_path = tmp_path / "db" / ".distill-write.lock"

    async def while_a_writer_holds_the_lock():
        # a lock wait would last store_lock_timeout (120 s by default) before failing
        async with stdio(tmp_path, "--agent", "tester", "--read-only",
                         env={"DISTILL_STORE_LOCK_TIMEOUT": "20"}) as client:
            started = time.monotonic()
            result = await client.call_tool("check_duplicate", {"text": PARAPHRASE})
            return result, time.monotonic() - started

    writer = FileLock(lock_path, purpose="a test writer").acquire(timeout=0)
    try:
        held = lock_path.read_bytes()
        result, took = anyio.run(while_a_writer_holds_the_lock)
        assert lock_path.read_bytes() == held
    finally:
        writer.release()
    assert not result.is_error, result.content
    assert result.structured_content["decision"] == "duplicate"
    assert result.structured_content["nearest"]["id"] == added["id"]
    assert took < 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(tmp_path: Path, *args: str):
    """A real ``distill mcp --http`` on a free port. The port is free when picked, but another
    test worker may take it before the server binds it: then the server exits saying so, and
    the next free port is tried."""
    for _attempt in range(5):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "distill", "mcp", "--http", "--port", str(port), *args],
                                env={**os.environ, **env_for(tmp_path)}, cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            if _wait_until_serving(proc, url):
                yield url
                return
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    pytest.fail("no free port for the MCP HTTP server after 5 tries")


def _wait_until_serving(proc: subprocess.Popen, url: str) -> bool:
    """True once ``url`` answers; False if the server lost its port to another process."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.TransportError:
            if proc.poll() is not None:
                err = proc.stderr.read().decode()
                if "address already in use" in err.lower():
                    return False
                pytest.fail(f"the MCP server exited: {err}")
            time.sleep(0.1)
    pytest.fail(f"the MCP server did not answer at {url} within 60 s")


def test_http_server_speaks_the_same_tools(tmp_path):
    with http_server(tmp_path, "--agent", "tester") as url:
        check_conversation(anyio.run(conversation, Client(url, read_timeout_seconds=120)))


def test_the_server_does_not_load_the_store_or_hold_the_lock_until_called(tmp_path):
    """Start-up lists tools without LanceDB, the embedder or the write lock."""
    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            await client.list_tools()
            return (tmp_path / "db").exists()

    assert anyio.run(go) is False


@pytest.mark.parametrize("bad", [["--agent", "../x"], ["--port", "0", "--http"]])
def test_bad_flags_are_refused_with_a_message(tmp_path, bad):
    proc = subprocess.run([sys.executable, "-m", "distill", "mcp", *bad], env={**os.environ, **env_for(tmp_path)},
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "distill: error:" in proc.stderr


def test_two_servers_and_a_pipeline_run_writing_at_once_lose_nothing_and_double_nothing(tmp_path):
    import shutil

    state = tmp_path / "state"
    state.mkdir()
    shutil.copy(REPO / "state.example" / "config.toml", state)
    for part in ("agents", "sources"):
        shutil.copytree(REPO / "state.example" / part, state / part)
    env = {**env_for(tmp_path), "DISTILL_STATE_DIR": str(state)}
    facts = {agent: [f"Fact: the {agent} team's service number {i} listens on port {7000 + 10 * i + len(agent)}."
                     for i in range(6)] for agent in ("alpha", "beta")}
    shared = "Decision: every service writes its logs as JSON lines to stdout, never to local files."

    async def agent_session(agent: str) -> list[dict]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "distill", "mcp", "--agent", agent],
                                       env=env, cwd=str(tmp_path))
        out = []
        async with Client(params, read_timeout_seconds=300) as client:
            for text in facts[agent]:
                out.append(await call(client, "remember", text=text, category="fact"))
            out.append(await call(client, "remember", text=shared, category="decision", scope="global"))
        return out

    async def everyone():
        results: dict = {}

        async def one(agent):
            results[agent] = await agent_session(agent)

        async def pipeline():
            results["run"] = await anyio.run_process([sys.executable, "-m", "distill", "run", "--distill", "--json"],
                                                     env={**os.environ, **env}, cwd=str(tmp_path), check=False)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pipeline)
            tg.start_soon(one, "alpha")
            tg.start_soon(one, "beta")
        return results

    results = anyio.run(everyone)
    assert results["run"].returncode == 0, results["run"].stderr.decode()
    import json as _json

    summary = _json.loads(results["run"].stdout.decode().strip().splitlines()[-1])["summary"]
    from distill.config import load_settings
    from distill.store.memory import MemoryStore

    rows = MemoryStore.open(load_settings(state_dir=str(state), db=str(tmp_path / "db"))).list(limit=None)
    texts = [r.text.split("\nKeywords")[0] for r in rows]  # remember adds the keyword lines
    for agent in ("alpha", "beta"):
        for text in facts[agent]:
            assert texts.count(text.split("\nKeywords")[0]) == 1
    assert texts.count(shared.split("\nKeywords")[0]) == 1
    statuses = sorted(r[-1]["status"] for r in (results["alpha"], results["beta"]))
    assert statuses == ["added", "duplicate"]
    assert len(rows) == 6 + 6 + 1 + summary["memories_added"] and summary["memories_added"] >= 1
