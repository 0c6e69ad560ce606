"""Chinese full-text recall on a table memory-lancedb-pro created (run by hand).

    python tests/bench/cjk_fts_recall.py [--k 5] [--rows 20000]

The table is made by LanceDB's Node client 0.26.2 the way the plugin makes it (its own
``simple``-tokenizer FTS index), from tests/bench/cjk_recall_set.json. Recall@k per query
half (A, B), for: the plugin's own BM25 search (Node), distill's ``--mode fts`` on that same
table, and distill on a table it created itself (ICU index) as the reference. With
``--rows N`` it also pads both tables with N filler rows and times the searches (p50).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]

from distill.config import load_settings  # noqa: E402
from distill.store import MemoryStore  # noqa: E402
from node_client import PINNED, run  # noqa: E402
from store_helpers import HashEmbedder  # noqa: E402


def recall(found: dict[str, list[str]], queries: list[dict], k: int) -> float:
    scores = [len(set(found[q["q"]][:k]) & set(q["relevant"])) / len(q["relevant"]) for q in queries]
    return sum(scores) / len(scores)


def filler(n: int) -> list[str]:
    words = ["服务", "配置", "接口", "请求", "版本", "文件", "用户", "任务", "系统", "节点", "集群", "脚本"]
    return [f"记录{i}：{words[i % 12]}的{words[(i * 7) % 12]}在第{i}次检查时正常。\nKeywords (zh): {words[i % 12]}"
            for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--rows", type=int, default=0, help="filler rows for the timing (0 = recall only)")
    args = ap.parse_args()
    data = json.loads((HERE / "cjk_recall_set.json").read_text(encoding="utf-8"))
    emb = HashEmbedder()
    texts = [m["text"] for m in data["memories"]] + filler(args.rows)
    ids = [m["id"] for m in data["memories"]] + [f"f{i:06d}" for i in range(args.rows)]
    work = Path(tempfile.mkdtemp(prefix="cjk-recall-"))
    try:
        plugin_db, own = work / "plugin", work / "own"
        rows = [{"id": i, "text": t, "vector": v.tolist(), "category": "fact", "scope": "global",
                 "importance": 0.7, "timestamp": 1772359200000 + n, "metadata": "{}"}
                for n, (i, t, v) in enumerate(zip(ids, texts, emb.passages(texts)))]
        steps = [{"op": "add", "rows": rows[s:s + 2000]} for s in range(0, len(rows), 2000)]
        run(PINNED, plugin_db, {"op": "start", "dim": 384}, *steps, timeout=600)
        run(PINNED, plugin_db, {"op": "start", "dim": 384})  # index built after the rows, as on a restart
        settings = load_settings(db=str(own), state_dir=str(work / "state"))
        store = MemoryStore.open(settings, embedder=emb)
        from distill.store import table as tbl

        tbl.connect(own).open_table("memories").add(tbl.rows_to_arrow(rows, store.table.schema))
        store.table.optimize()  # index the rows (a distill writer does this on compaction)
        shared = MemoryStore.open(load_settings(db=str(plugin_db), state_dir=str(work / "state")),
                                  embedder=emb, read_only=True)
        queries = data["queries_A"] + data["queries_B"]
        node = run(PINNED, plugin_db, *({"op": "fts", "query": q["q"], "limit": args.k} for q in queries))
        found = {
            "plugin's BM25 (Node 0.26.2)": {q["q"]: r for q, r in zip(queries, node)},
            "distill --mode fts, same table": {q["q"]: [h.id for h in shared.search(q["q"], mode="fts", limit=args.k)]
                                               for q in queries},
            "distill --mode fts, its ICU table": {q["q"]: [h.id for h in store.search(q["q"], mode="fts", limit=args.k)]
                                                  for q in queries},
        }
        print(f"recall@{args.k} ({len(data['queries_A'])} + {len(data['queries_B'])} queries, "
              f"{len(data['memories'])} memories{f' + {args.rows} filler rows' if args.rows else ''})")
        print(f"{'':40} {'half A':>8} {'half B':>8}")
        for name, f in found.items():
            print(f"{name:40} {recall(f, data['queries_A'], args.k):8.2f} {recall(f, data['queries_B'], args.k):8.2f}")
        if args.rows:
            for name, s in (("distill fts on plugin table (substring)", shared), ("distill fts on ICU table", store)):
                times = []
                for q in queries * 3:
                    t0 = time.perf_counter()
                    s.search(q["q"], mode="fts", limit=args.k)
                    times.append((time.perf_counter() - t0) * 1000)
                print(f"{name:40} p50 {statistics.median(times):6.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
