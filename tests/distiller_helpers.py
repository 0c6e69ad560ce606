"""Shared builders for the distiller tests: batches from (role, text) lists."""

from __future__ import annotations

from distill.model import Batch, BatchAgent, BatchMessage, FileRange


def messages(turns: list[tuple[str, str]], *, agent: str = "main", session: str = "s1",
             file: str | None = None) -> list[BatchMessage]:
    file = file or f"/tmp/agents/{agent}/sessions/{session}.jsonl"
    out, pos = [], 0
    for i, (role, text) in enumerate(turns):
        size = len(text.encode()) + 40
        out.append(BatchMessage(id=f"{agent}-{session}:{pos}", ts=1_700_000_000_000 + i, role=role, text=text,
                                session_id=session, file=file, start=pos, end=pos + size, entry_id=f"e{i}"))
        pos += size
    return out


def batch_of(agents: dict[str, list[tuple[str, str]]], batch_id: str = "b1") -> Batch:
    bagents, ranges = [], []
    for agent, turns in agents.items():
        msgs = messages(turns, agent=agent)
        bagents.append(BatchAgent(agent_id=agent, messages=msgs))
        ranges.append(FileRange(path=msgs[0].file, dev=1, inode=hash(agent) & 0xFFFF, start=0,
                                end=msgs[-1].end, agent_id=agent))
    return Batch(batch_id=batch_id, created_at_ms=1, agents=bagents, ranges=ranges,
                 touched_files=[r.path for r in ranges])


# A model's answer for "pip install fails with externally-managed-environment … use uv venv" (turns t1, t2).
PEP668_PITFALL = {
    "text": "Pitfall: pip install fails on Debian 12 with externally-managed-environment (PEP 668). "
            "Fix: create a venv with uv venv and install there.",
    "category": "pitfall", "importance": 0.8, "scope": "global",
    "keywords": ["externally-managed-environment", "uv venv", "安装失败", "虚拟环境"],
    "entity_keywords": ["externally-managed-environment", "uv venv", "Debian 12"],
    "evidence": ["t1", "t2"],
}
