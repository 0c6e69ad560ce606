"""Tokens sent to the LLM per MB of raw transcript: distill vs memory-lancedb-pro's ``/new`` worker.

    PYTHONPATH=$PWD python tests/bench/tokens.py [--mb 1.0] [--seed 7]

Corpus (text-heavy): OpenClaw sessions written from the labelled transcripts
(``tests/data/quality/*.json``), ``--per-session`` of them (drawn at random) per session,
until ``--mb`` of JSONL, each turn tagged ``(#session.part)`` so no turn repeats (distill
sends a repeat as a reference, which a corpus of copies would flatter); tool results stay in
(the worker skips them, distill shortens them).
The worker pays its instructions once per session, so short sessions flatter distill: report
``--per-session 4`` and ``--per-session 200`` (long sessions) both.

distill: the real tails cut the corpus into batches; each batch is chunked with the default
settings and every map call is counted as sent: system prompt + user prompt + the response
schema (structured output bills it as prompt).

The worker (examples/new-session-distill/worker/lesson-extract-worker.mjs, read with the
project's fetch tool; its code is not copied here): user/assistant text messages only,
chunks of at most 12,000 characters of ``[U12] text`` lines with a 10-message overlap, and one
prompt per chunk whose fixed part is 1,169 characters (20 of them CJK) around the messages
joined by blank lines. Only these counts are ported.

Both sides are counted with the same estimate (:func:`distill.distiller.chunking.estimate_tokens`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from distill.batch import commit_batch, create_batch, load_batch  # noqa: E402
from distill.distiller.chunking import chunk_batch, estimate_tokens  # noqa: E402
from distill.distiller.prompts import call_tokens  # noqa: E402
from tests.pipeline_helpers import settings, write_session  # noqa: E402

WORKER_FIXED_CHARS, WORKER_FIXED_CJK = 1169, 20
WORKER_MAX_CHARS, WORKER_OVERLAP = 12_000, 10


def corpus(root: Path, mb: float, seed: int, per_session: int = 4) -> list[Path]:
    sets = [json.loads(p.read_text()) for p in sorted((ROOT / "tests/data/quality").glob("*.json"))]
    rng = random.Random(seed)
    paths, size, n = [], 0, 0
    while size < mb * 1_000_000:
        turns = []
        n += 1
        for j, s in enumerate(rng.choices(sets, k=per_session)):  # a tag keeps every turn unique
            turns += [("toolResult" if r == "tool" else r, f"{t} (#{n}.{j})") for r, t in s["turns"]]
        p = write_session(root, f"agent{n % 5}", f"s{n:05d}", turns)
        paths.append(p)
        size += p.stat().st_size
    return paths


def worker_tokens(paths: list[Path]) -> tuple[int, int]:
    fixed = int(WORKER_FIXED_CJK * 1.5 + (WORKER_FIXED_CHARS - WORKER_FIXED_CJK) * 0.25 + 0.999)
    total = calls = 0
    for p in paths:
        msgs = []
        for line in p.read_text().splitlines():
            obj = json.loads(line)
            m = obj.get("message") or {}
            if obj.get("type") != "message" or m.get("role") not in ("user", "assistant"):
                continue
            text = "\n".join(c["text"] for c in m.get("content", []) if c.get("type") == "text").strip()
            if text:
                msgs.append((len(msgs) + 1, m["role"], text))
        chunks, chunk, size = [], [], 0
        for mid, role, text in msgs:
            line = f"[{'U' if role == 'user' else 'A'}{mid}] {text}\n"
            if size + len(line) > WORKER_MAX_CHARS and chunk:
                chunks.append(chunk)
                chunk = chunk[-WORKER_OVERLAP:]
                size = sum(len(f"[U{m}] {t}\n") for m, _, t in chunk)
            chunk.append((mid, role, text))
            size += len(line)
        if chunk:
            chunks.append(chunk)
        for c in chunks:
            body = "\n\n".join(f"[{'U' if r == 'user' else 'A'}{m}] {t}" for m, r, t in c)
            total += fixed + estimate_tokens(body)
            calls += 1
    return total, calls


def distill_tokens(root: Path) -> tuple[int, int]:
    s = settings(root)
    total = calls = 0
    while True:
        made = create_batch(s)
        if made.action != "created":
            break
        batch = load_batch(Path(made.batchFile))
        for chunk in chunk_batch(batch.agents, chunk_tokens=s.chunk_tokens, overlap_turns=s.chunk_overlap_turns):
            total += call_tokens(chunk)
            calls += 1
        commit_batch(s, Path(made.batchFile))
    return total, calls


def compare(mb: float = 1.0, seed: int = 7, per_session: int = 4) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = corpus(root, mb, seed, per_session)
        raw_mb = sum(p.stat().st_size for p in paths) / 1_000_000
        w, wcalls = worker_tokens(paths)
        d, dcalls = distill_tokens(root)
    return {"sessions": len(paths), "raw_mb": round(raw_mb, 3), "worker_tokens_per_mb": round(w / raw_mb),
            "worker_calls": wcalls, "distill_tokens_per_mb": round(d / raw_mb), "distill_calls": dcalls,
            "ratio": round(d / w, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-session", type=int, default=4, help="labelled transcripts joined into one session")
    args = ap.parse_args()
    r = compare(args.mb, args.seed, args.per_session)
    print(f"corpus: {r['sessions']} sessions, {r['raw_mb']:.2f} MB of JSONL")
    print(f"worker (/new, ported count): {r['worker_tokens_per_mb']:,} tokens/MB in {r['worker_calls']} calls")
    print(f"distill:                     {r['distill_tokens_per_mb']:,} tokens/MB in {r['distill_calls']} calls")
    print(f"ratio distill / worker: {r['ratio']:.2f}")


if __name__ == "__main__":
    main()
