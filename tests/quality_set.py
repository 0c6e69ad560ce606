"""The labelled transcripts (``tests/data/quality``) written to disk in their own format and
read back by the real tails, so that what is scored is what ``distill run`` would hand the
distiller: envelopes, notices and injected blocks included.

Used by ``tests/bench/quality.py`` and by the attribution tests.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from sources_lines import FIRST_LINES, cc_assistant, cc_user, cx, cx_item, jl, oc_msg, oc_tool_result

QUALITY_DIR = Path(__file__).resolve().parent / "data" / "quality"
_ids = itertools.count(1)


def load_items(split: str | None = None) -> list[dict]:
    """Every labelled transcript (``split``: only ``tune``, ``heldout`` or ``heldout2``; an
    item in a folder is reported under the folder's name)."""
    items = []
    for p in sorted([*QUALITY_DIR.glob("*.json"), *QUALITY_DIR.glob("*/*.json")]):
        item = json.loads(p.read_text(encoding="utf-8"))
        item["split"] = p.parent.name if p.parent != QUALITY_DIR else item.get("split", "tune")
        item.setdefault("never", [])
        if split is None or item["split"] == split:
            items.append(item)
    return items


def openclaw_lines(turns: list) -> list[bytes]:
    out = [FIRST_LINES["openclaw"]]
    for kind, *rest in turns:
        if kind == "tool_error":
            out.append(oc_tool_result(rest[0], rest[1], is_error=True))
        else:
            out.append(oc_msg(kind, [{"type": "text", "text": rest[0]}]))
    return out


def claude_code_lines(turns: list, *, session: str, sidechain: bool = False) -> list[bytes]:
    out = []
    for kind, *rest in turns:
        if kind == "user":
            out.append(cc_user(rest[0], session=session, isSidechain=sidechain))
        elif kind == "assistant":
            out.append(cc_assistant(f"msg_{next(_ids)}", [{"type": "text", "text": rest[0]}],
                                    session=session, isSidechain=sidechain))
        else:
            tid = f"toolu_{next(_ids)}"
            out.append(cc_assistant(f"msg_{next(_ids)}", [{"type": "tool_use", "id": tid, "name": rest[0],
                                                           "input": {}}], session=session, isSidechain=sidechain))
            out.append(cc_user([{"type": "tool_result", "tool_use_id": tid, "content": rest[1], "is_error": True}],
                               session=session, isSidechain=sidechain))
    return out


def codex_lines(turns: list, *, session: str) -> list[bytes]:
    out = [cx("session_meta", {"id": session, "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/w",
                               "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None})]
    for kind, *rest in turns:
        if kind in ("user", "assistant"):
            block = "input_text" if kind == "user" else "output_text"
            out.append(cx_item("message", role=kind, content=[{"type": block, "text": rest[0]}]))
        else:
            cid = f"call_{next(_ids)}"
            out.append(cx_item("function_call", name=rest[0], arguments="{}", call_id=cid))
            out.append(cx_item("function_call_output", call_id=cid, output=rest[1]))
    return out


def write_item(root: Path, item: dict) -> dict:
    """Write ``item`` under ``root`` as its format's transcript; returns the settings
    overrides (agents_dir / sources) that make ``distill run`` read it."""
    fmt, agent, sid = item["format"], item.get("agent", "main"), item["id"]
    over: dict = {"agents_dir": root / "agents"}
    if fmt == "openclaw":
        path = root / "agents" / agent / "sessions" / f"{sid}.jsonl"
        lines = openclaw_lines(item["turns"])
    elif fmt == "claude-code":
        name = f"agent-{sid}.jsonl" if item.get("sidechain") else f"{sid}.jsonl"
        path = root / "claude" / "proj" / name
        lines = claude_code_lines(item["turns"], session=sid, sidechain=bool(item.get("sidechain")))
        over["sources"] = [{"path": str(root / "claude"), "agent_id": agent, "format": "claude-code"}]
    elif fmt == "codex":
        path = root / "codex" / "2026" / "11" / "29" / f"rollout-{sid}.jsonl"
        lines = codex_lines(item["turns"], session=sid)
        over["sources"] = [{"path": str(root / "codex"), "agent_id": agent, "format": "codex"}]
    else:
        raise ValueError(f"{item['id']}: unknown format {fmt!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return over


__all__ = ["QUALITY_DIR", "jl", "load_items", "write_item"]
