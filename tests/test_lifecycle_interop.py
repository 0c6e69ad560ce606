"""The lifecycle shared with memory-lancedb-pro, checked with the real LanceDB Node client the
plugin pins (0.26.2): a row distill supersedes is inactive for the plugin's ``isMemoryActiveAt``,
a row the plugin invalidates is left out of distill's recall, and reading never writes.

How the plugin reads a row is ``tests/node/plugin_lifecycle.mjs``, a committed re-statement of
its ``parseSmartMetadata`` (lifecycle keys) and ``isMemoryActiveAt``. Where the plugin's own
``src/smart-metadata.ts`` is at hand (``DISTILL_PLUGIN_SRC``, a checkout of memory-lancedb-pro,
or the search tool's snapshot of it), ``test_the_restatement_is_the_plugins_own_rule`` runs the
plugin's functions themselves from a temporary file (never committed) on the same cases, and
distill's Python port too, and they must agree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import lancedb
import pytest

from distill.cli import main
from distill.store import MemoryDraft, MemoryStore
from distill.store.lifecycle import lifecycle_of
from node_client import NODE_DIR, PINNED, require_node, run
from store_helpers import HashEmbedder, settings_for

PIP = "Rule: install dependencies in the api repo with pip install -r requirements.txt."
UV = "Rule: from now on install dependencies in the api repo with uv sync instead of pip."
DOCKER = "Pitfall: docker compose up fails on the api repo without the .env file. Fix: copy .env.example."
MIRROR = Path("/work/.mirror/win4r+memory-lancedb-pro/repo")


def version(s) -> int:
    return lancedb.connect(str(s.db)).open_table("memories").version


def drafts(*texts):
    return [MemoryDraft(text=t, category="preference", scope="global") for t in texts]


def test_a_row_distill_supersedes_is_inactive_for_the_plugin(tmp_path):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    pip, docker = (o.id for o in store.add(drafts(PIP, DOCKER)))
    uv = store.add(drafts(UV), replaces=pip[:8])[0]
    assert uv.status == "added" and uv.relation == "supersedes" and uv.related == pip

    active, = run(PINNED, s.db, {"op": "active"})
    assert active[pip]["active"] is False and active[pip]["superseded_by"] == uv.id
    assert active[uv.id]["active"] is True and active[uv.id]["supersedes"] == pip
    assert active[docker]["active"] is True
    # the keys, as stored, are the plugin's: integers in ms, string ids, {type, targetId} relations
    md = {r.id: r.metadata for r in store.list(include_history=True)}
    assert isinstance(md[pip]["invalidated_at"], int) and md[pip]["fact_key"] == md[uv.id]["fact_key"]
    assert {"type": "superseded_by", "targetId": uv.id} in md[pip]["relations"]
    assert {"type": "supersedes", "targetId": pip} in md[uv.id]["relations"]

    store.restore(pip)
    active, = run(PINNED, s.db, {"op": "active"})
    assert active[pip]["active"] is True


def test_a_row_the_plugin_invalidates_is_left_out_of_distills_recall(tmp_path, monkeypatch, capsys):
    s = settings_for(tmp_path)
    store = MemoryStore.open(s, embedder=HashEmbedder())
    pip, uv = (o.id for o in store.add(drafts(PIP, UV)))
    run(PINNED, s.db, {"op": "supersede", "old": pip, "by": uv})
    monkeypatch.setenv("DISTILL_DB", str(s.db))
    monkeypatch.setenv("DISTILL_STATE_DIR", str(s.state_dir))
    before = version(s)

    def ids(*argv) -> list[str]:
        assert main([*argv, "--json"]) == 0
        return [m["id"] for m in json.loads(capsys.readouterr().out)["memories"]]

    assert ids("memories", "search", "install dependencies api repo pip", "--mode", "fts") == [uv]
    assert set(ids("memories", "search", "install dependencies api repo pip", "--mode", "fts",
                   "--include-history")) == {pip, uv}
    assert ids("memories", "list") == [uv]
    assert set(ids("memories", "list", "--include-history")) == {pip, uv}
    assert [m["id"] for m in json.loads(_out(capsys, "memories", "export"))["memories"]] == [uv]
    assert ids("memories", "history", pip[:8]) == [pip, uv]
    assert main(["memories", "show", pip[:8]]) == 0
    shown = capsys.readouterr().out
    assert f"superseded by {uv}" in shown and "history (oldest first" in shown and uv[:8] in shown
    assert version(s) == before  # read-only commands wrote nothing


def _out(capsys, *argv) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


# ---------------------------------------------------------------- the plugin's own rule
CASES = [
    ({}, 1_700_000_000_000),
    ({"invalidated_at": 1_600_000_000_000}, 1_500_000_000_000),
    ({"invalidated_at": 1_400_000_000_000}, 1_500_000_000_000),  # before valid_from: ignored
    ({"invalidated_at": "1600000000000", "valid_from": "1500000000000"}, 1_700_000_000_000),
    ({"invalidated_at": 4_000_000_000_000}, 1_500_000_000_000),  # in the future: still active
    ({"valid_from": 4_000_000_000_000}, 1_500_000_000_000),  # not yet valid
    ({"invalidated_at": 0, "valid_from": -5}, 1_500_000_000_000),
    ({"invalidated_at": None, "state": "archived", "tier": "core", "access_count": "7"}, 1_500_000_000_000),
    ({"invalidated_at": 1_600_000_000_000.7, "access_count": -3, "confidence": 3}, 1_500_000_000_000),
    ({"state": "weird", "tier": 5, "last_accessed_at": "x", "superseded_by": "  "}, 1_500_000_000_000),
]
AT = 1_650_000_000_000


def _node_eval(module: Path) -> list[dict]:
    node = require_node()
    script = (f"import {{ parseLifecycle, isMemoryActiveAt }} from {json.dumps(module.as_uri())};\n"
              f"const cases = {json.dumps(CASES)};\n"
              "console.log(JSON.stringify(cases.map(([md, ts]) => { const m = parseLifecycle(JSON.stringify(md), "
              f"{{ timestamp: ts }}); return {{ ...m, active: isMemoryActiveAt(m, {AT}) }}; }})));\n")
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", delete=False, dir=NODE_DIR) as f:
        f.write(script)
    try:
        out = subprocess.run([node, f.name], capture_output=True, text=True, timeout=60, check=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)


def _python(md: dict, ts: int) -> dict:
    life = lifecycle_of(md, ts)
    return {"valid_from": life.valid_from, "invalidated_at": life.invalidated_at, "state": life.state,
            "tier": life.tier, "confidence": life.confidence, "access_count": life.access_count,
            "last_accessed_at": life.last_accessed_at, "supersedes": life.supersedes,
            "superseded_by": life.superseded_by, "active": life.active_at(AT)}


def _comparable(rows: list[dict]) -> list[dict]:
    keys = ("valid_from", "invalidated_at", "state", "tier", "confidence", "access_count", "last_accessed_at",
            "supersedes", "superseded_by", "active")
    return [{k: r.get(k) for k in keys} for r in rows]


def test_distills_port_reads_every_case_as_the_committed_restatement_does():
    assert _comparable(_node_eval(NODE_DIR / "plugin_lifecycle.mjs")) == _comparable(
        [_python(md, ts) for md, ts in CASES])


def plugin_source() -> str | None:
    """The plugin's src/smart-metadata.ts, from DISTILL_PLUGIN_SRC (a checkout), else the snapshot."""
    where = os.environ.get("DISTILL_PLUGIN_SRC")
    if where and Path(where, "src", "smart-metadata.ts").is_file():
        return Path(where, "src", "smart-metadata.ts").read_text(encoding="utf-8")
    if MIRROR.exists():
        shown = subprocess.run(["git", "-C", str(MIRROR), "show", "HEAD:src/smart-metadata.ts"],
                               capture_output=True, text=True)
        if shown.returncode == 0:
            return shown.stdout
    return None


def _function(source: str, name: str) -> str:
    start = source.index(f"function {name}(")
    depth, i = 0, source.index("{", source.index(")", start))
    for j in range(i, len(source)):
        depth += {"{": 1, "}": -1}.get(source[j], 0)
        if depth == 0:
            return source[start:j + 1]
    raise ValueError(name)


def _untyped(fn: str) -> str:
    """Drop the TypeScript annotations of these small functions (their bodies carry none but casts)."""
    fn = re.sub(r"Pick<[^>]*>", "any", fn)
    head, body = fn.split("{", 1)
    head = re.sub(r"\)\s*:\s*[^{]+$", ") ", head)
    head = re.sub(r"(\w+)\??\s*:\s*[^,()=]+?(\s*[,)=])", r"\1\2", head)
    return head + "{" + re.sub(r"\s+as\s+[A-Za-z]+", "", body)


def test_the_restatement_is_the_plugins_own_rule():
    source = plugin_source()
    if source is None:
        pytest.skip("no copy of memory-lancedb-pro's src/smart-metadata.ts here (set DISTILL_PLUGIN_SRC to a "
                    "checkout): the committed re-statement alone was checked")
    names = ["clamp01", "clampCount", "normalizeTimestamp", "normalizeOptionalTimestamp", "normalizeTier",
             "normalizeState", "normalizeOptionalString", "isMemoryActiveAt"]
    fns = "\n\n".join(_untyped(_function(source, n)) for n in names)
    # parseSmartMetadata's lines for these keys, as they read in the plugin's source
    body = _function(source, "parseSmartMetadata")
    for line in ("const validFrom = normalizeTimestamp(parsed.valid_from, timestamp);",
                 "const invalidatedAt = normalizeOptionalTimestamp(parsed.invalidated_at);",
                 "invalidatedAt && invalidatedAt >= validFrom ? invalidatedAt : undefined",
                 "access_count: clampCount(parsed.access_count, 0),",
                 "confidence: clamp01(parsed.confidence, 0.7),",
                 "last_accessed_at: clampCount(parsed.last_accessed_at, timestamp),",
                 "tier: normalizeTier(parsed.tier),",
                 "supersedes: normalizeOptionalString(parsed.supersedes),"):
        assert line in body, f"the plugin's parseSmartMetadata changed: {line!r} is gone; re-read it"
    module = fns.replace("function isMemoryActiveAt", "export function isMemoryActiveAt") + """
export function parseLifecycle(raw, entry) {
  let parsed = {};
  try { const o = JSON.parse(raw); if (o && typeof o === "object") parsed = o; } catch {}
  const timestamp = entry.timestamp;
  const validFrom = normalizeTimestamp(parsed.valid_from, timestamp);
  const invalidatedAt = normalizeOptionalTimestamp(parsed.invalidated_at);
  return { valid_from: validFrom, invalidated_at: invalidatedAt && invalidatedAt >= validFrom ? invalidatedAt : undefined,
    state: normalizeState(parsed.state ?? "confirmed"), tier: normalizeTier(parsed.tier),
    confidence: clamp01(parsed.confidence, 0.7), access_count: clampCount(parsed.access_count, 0),
    last_accessed_at: clampCount(parsed.last_accessed_at, timestamp),
    supersedes: normalizeOptionalString(parsed.supersedes), superseded_by: normalizeOptionalString(parsed.superseded_by) };
}
"""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "plugin_smart_metadata.mjs")
        path.write_text(module, encoding="utf-8")
        plugins = _node_eval(path)
    assert _comparable(plugins) == _comparable([_python(md, ts) for md, ts in CASES])
    assert _comparable(plugins) == _comparable(_node_eval(NODE_DIR / "plugin_lifecycle.mjs"))
