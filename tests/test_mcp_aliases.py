"""The Memory MCP server's callers keep working against ``distill mcp``: each tool called with
its spellings (shared/seeds 000: content, tags, agent, top_k, agent_filter, tag, threshold,
memory_id) and with distill's own, through the official MCP client and a real server process."""

from __future__ import annotations

import anyio

from test_mcp_server import call, stdio

RULE = "Rule: memory-mcp timestamps must be in milliseconds, the same as OpenClaw's."
ZH = "决定：周报在每周五下午五点前发到团队邮件组。"


async def both_ways(client) -> dict:
    out: dict = {}
    out["theirs"] = await call(client, "remember", content=RULE, tags=["bug", "lancedb"],
                               agent="agent:claude-code", importance=0.8)
    out["ours"] = await call(client, "remember", text=ZH, category="decision", scope="agent")
    out["recall_theirs"] = await call(client, "recall", query="timestamp milliseconds", top_k=1)
    out["recall_ours"] = await call(client, "recall", query="timestamp milliseconds", limit=1)
    out["recall_filtered"] = await call(client, "recall", query="timestamp milliseconds", agent_filter="tester")
    out["by_tag"] = await call(client, "list_facts", tag="lancedb")
    out["by_category_tag"] = await call(client, "list_facts", tag="decision")
    out["by_agent"] = await call(client, "list_facts", agent="agent:tester")
    out["dup_theirs"] = await call(client, "check_duplicate", content=RULE, threshold=0.9)
    out["dup_ours"] = await call(client, "check_duplicate", text="Decision: the public API is versioned in the URL.")
    out["both_spellings"] = await client.call_tool("recall", {"query": "x", "limit": 2, "top_k": 3})
    out["forget_theirs"] = await call(client, "forget", memory_id=out["theirs"]["memory_id"])
    out["forget_ours"] = await call(client, "forget", id=out["ours"]["id"])
    out["left"] = await call(client, "list_facts")
    return out


def test_each_tool_answers_the_memory_mcp_spelling_and_distills_own(tmp_path):
    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            return await both_ways(client)

    out = anyio.run(go)
    theirs, ours = out["theirs"], out["ours"]
    assert theirs["ok"] is True and theirs["memory_id"] == theirs["id"] and theirs["status"] == "added"
    assert theirs["scope"] == "agent:tester"  # the caller's agent names the writer, never the scope
    assert ours["ok"] is True and ours["memory_id"] == ours["id"]

    hit = out["recall_theirs"]["hits"][0]
    assert len(out["recall_theirs"]["hits"]) == 1 and out["recall_ours"]["hits"][0]["id"] == hit["id"]
    assert hit["memory_id"] == theirs["id"] and hit["content"].startswith(RULE)
    assert hit["tags"] == ["bug", "lancedb"] and hit["agent"] == "claude-code" and 0 < hit["score"] <= 1
    assert [h["id"] for h in out["recall_filtered"]["hits"]] == [theirs["id"]]

    assert [f["memory_id"] for f in out["by_tag"]["facts"]] == [theirs["id"]]
    assert [f["id"] for f in out["by_category_tag"]["facts"]] == [ours["id"]]
    assert {f["id"] for f in out["by_agent"]["facts"]} == {theirs["id"], ours["id"]}

    assert out["dup_theirs"]["is_duplicate"] is True and out["dup_theirs"]["decision"] == "duplicate"
    assert out["dup_theirs"]["similar"][0]["memory_id"] == theirs["id"]
    assert out["dup_ours"]["is_duplicate"] is False and out["dup_ours"]["decision"] == "new"

    assert out["both_spellings"].is_error and "pass one" in out["both_spellings"].content[0].text
    assert out["forget_theirs"] == {**out["forget_theirs"], "ok": True, "memory_id": theirs["id"]}
    assert out["forget_ours"]["forgotten"] == ours["id"]
    assert out["left"]["facts"] == []


def test_memories_stored_through_mcp_get_keywords_in_the_other_language(tmp_path):
    async def go():
        async with stdio(tmp_path, "--agent", "tester") as client:
            await call(client, "remember", content="Pitfall: docker compose up fails because port 5432 is already "
                                                   "allocated by a local PostgreSQL. Fix: stop the local service.")
            await call(client, "remember", content=ZH)
            zh_q = await call(client, "recall", query="端口被占用怎么办", top_k=3)
            en_q = await call(client, "recall", query="when is the weekly report due", top_k=3)
            return zh_q, en_q

    zh_q, en_q = anyio.run(go)
    assert zh_q["hits"] and zh_q["hits"][0]["content"].startswith("Pitfall: docker compose")
    assert "端口占用" in zh_q["hits"][0]["content"].splitlines()[-1]
    assert en_q["hits"] and en_q["hits"][0]["content"].startswith("决定：周报")
    assert "Keywords (en): " in en_q["hits"][0]["content"]
