"""Tokens sent to the LLM per MB of raw transcript: distill vs memory-lancedb-pro's ``/new`` worker.

    PYTHONPATH=$PWD python tests/bench/tokens.py [--mb 1.0] [--seed 7] [--per-session 4]
        [--no-tools] [--narrate 0.0] [--chunk-tokens N]

Corpus (text-heavy): OpenClaw sessions written from the labelled transcripts
(``tests/data/quality/*.json``, about a third of them Chinese or mixed), ``--per-session`` of
them (drawn at random) per session, until ``--mb`` of JSONL. Each turn is tagged
``(#session.part)`` so no turn repeats (distill sends a repeat as a reference, which a corpus
of copies would flatter). After each transcript comes one successful tool call (a command,
then 1-4 KB of ordinary output), as in a working session; ``--no-tools`` leaves them out
(the corpus before they were added). Neither side sends a successful tool output, so they
change the tokens per MB, not the ratio. ``--narrate F``: a share F of those calls carries a
sentence of narration ("Let me check the logs.", "先跑一下测试看看。"), which the worker sends
and distill may leave out — an assumption about the agent, so 0 by default.
The worker pays its instructions once per session, so short sessions flatter distill: report
``--per-session 4`` and ``--per-session 200`` (long sessions) both.

distill: the real tails cut the corpus into batches; each batch is chunked with the default
settings (``--chunk-tokens`` to try another size) and every map call is counted as sent: system
prompt + user prompt + the response schema (structured output bills it as prompt).

The worker (examples/new-session-distill/worker/lesson-extract-worker.mjs, read with the
project's fetch tool; its code is not copied here): user/assistant text messages only (tool
calls and tool results are dropped, turns are never shortened), chunks of at most 12,000
characters of ``[U12] text`` lines with a 10-message overlap (at most 200 chunks per session,
never reached here), and one prompt per chunk whose fixed part is 1,169 characters (20 of
them CJK; 1,158-1,190 with the language line) around the messages joined by blank lines. Only
these counts are ported.

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

from distill.tails.ledger import commit_batch, create_batch, load_batch  # noqa: E402
from distill.distiller.chunking import chunk_batch, estimate_tokens  # noqa: E402
from distill.distiller.prompts import call_tokens  # noqa: E402
from tests.pipeline_helpers import settings, write_session  # noqa: E402

WORKER_FIXED_CHARS, WORKER_FIXED_CJK = 1169, 20
WORKER_MAX_CHARS, WORKER_OVERLAP = 12_000, 10


COMMANDS = ("pytest -q", "git status", "ls -la src", "cat pyproject.toml", "journalctl --user -u app -n 80",
            "npm run build", "rg -n TODO", "docker ps -a", "systemctl --user status app", "uv pip list")
# what an agent may say as it calls a tool (the worker sends it; distill may leave it out)
NARRATION = ("Let me check the logs.", "Now let me see what the tests say.", "先跑一下测试看看。",
             "我来看看配置文件。", "Checking the current state of the repo.", "I'll look at the build output.")
WORDS = ("ok passed collected file src test build warn info debug cache module lib the a of and to in "
         "done item line path size time user app service unit 12 34 0.5s 2026-11-20").split()


def tool_call(rng: random.Random, n: int, narrate: float) -> list[str]:
    """One successful tool call: the assistant's call (with a sentence of narration in a
    ``narrate`` share of them) and 1-4 KB of ordinary output."""
    call = {"type": "toolCall", "id": f"call{n}", "name": "exec", "arguments": {"command": rng.choice(COMMANDS)}}
    content = ([{"type": "text", "text": rng.choice(NARRATION)}] if rng.random() < narrate else []) + [call]
    out, size = [], rng.randint(1000, 4000)
    while sum(map(len, out)) < size:
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))))
    result = {"role": "toolResult", "toolCallId": f"call{n}", "toolName": "exec",
              "content": [{"type": "text", "text": "\n".join(out)}], "details": {"exitCode": 0}, "isError": False}
    return [_entry(n, {"role": "assistant", "content": content}), _entry(n + 1, result)]


def _entry(n: int, msg: dict) -> str:
    return json.dumps({"type": "message", "id": f"x{n:07d}", "parentId": None,
                       "timestamp": "2026-11-20T09:00:00.000Z", "message": msg}, ensure_ascii=False) + "\n"


def corpus(root: Path, mb: float, seed: int, per_session: int = 4, tools: bool = True,
           narrate: float = 0.0) -> list[Path]:
    sets = [json.loads(p.read_text()) for p in sorted((ROOT / "tests/data/quality").glob("*.json"))]
    rng = random.Random(seed)
    paths, size, n = [], 0, 0
    while size < mb * 1_000_000:
        n += 1
        p = write_session(root, f"agent{n % 5}", f"s{n:05d}", [])
        for j, s in enumerate(rng.choices(sets, k=per_session)):  # a tag keeps every turn unique
            write_session(root, f"agent{n % 5}", f"s{n:05d}", append=True,
                          turns=[("toolResult" if r == "tool" else r, f"{t} (#{n}.{j})") for r, t in s["turns"]])
            if tools:  # then one tool call of the kind a working session is full of
                with p.open("a", encoding="utf-8") as f:
                    f.writelines(tool_call(rng, n * 10_000 + 2 * j, narrate))
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


def distill_tokens(root: Path, chunk_tokens: int | None = None) -> tuple[int, int]:
    s = settings(root, **({"chunk_tokens": chunk_tokens} if chunk_tokens else {}))
    total = calls = 0
    while True:
        made = create_batch(s)
        if made.action != "created":
            break
        batch = load_batch(Path(made.batch_file))
        for chunk in chunk_batch(batch.agents, chunk_tokens=s.chunk_tokens, overlap_turns=s.chunk_overlap_turns):
            total += call_tokens(chunk)
            calls += 1
        commit_batch(s, Path(made.batch_file))
    return total, calls


def compare(mb: float = 1.0, seed: int = 7, per_session: int = 4, tools: bool = True, narrate: float = 0.0,
            chunk_tokens: int | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = corpus(root, mb, seed, per_session, tools, narrate)
        raw_mb = sum(p.stat().st_size for p in paths) / 1_000_000
        w, wcalls = worker_tokens(paths)
        d, dcalls = distill_tokens(root, chunk_tokens)
    return {"sessions": len(paths), "raw_mb": round(raw_mb, 3), "worker_tokens_per_mb": round(w / raw_mb),
            "worker_calls": wcalls, "distill_tokens_per_mb": round(d / raw_mb), "distill_calls": dcalls,
            "ratio": round(d / w, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-session", type=int, default=4, help="labelled transcripts joined into one session")
    ap.add_argument("--no-tools", action="store_true", help="no successful tool calls between the transcripts")
    ap.add_argument("--narrate", type=float, default=0.0, help="share of tool calls the assistant narrates")
    ap.add_argument("--chunk-tokens", type=int, help="distill's chunk size (default: the setting's default)")
    args = ap.parse_args()
    r = compare(args.mb, args.seed, args.per_session, not args.no_tools, args.narrate, args.chunk_tokens)
    print(f"corpus: {r['sessions']} sessions, {r['raw_mb']:.2f} MB of JSONL")
    print(f"worker (/new, ported count): {r['worker_tokens_per_mb']:,} tokens/MB in {r['worker_calls']} calls")
    print(f"distill:                     {r['distill_tokens_per_mb']:,} tokens/MB in {r['distill_calls']} calls")
    print(f"ratio distill / worker: {r['ratio']:.2f}")


if __name__ == "__main__":
    main()
