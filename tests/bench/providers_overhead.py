"""Client-side cost of one provider call, as a ratio to a bare httpx POST of the same request.

    /tmp/venv/bin/python tests/bench/providers_overhead.py [--calls 200]

Both sides talk to the same local fake server, so the server's own time cancels out and the
ratio shows what our provider layer (schema building, the SDK, retries wrapper, parsing)
adds per call. An LLM call takes seconds, so anything near 1–3x of a local POST is noise.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import httpx
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from distill.config import load_settings  # noqa: E402
from distill.providers import LLMRequest, get_provider  # noqa: E402
from tests.fakes import FakeGemini, FakeOpenAI  # noqa: E402


class Memory(BaseModel):
    text: str
    category: str
    keywords_zh: list[str]


class Memories(BaseModel):
    memories: list[Memory]


ANSWER = {"memories": [{"text": "Decision: use uv.", "category": "decision", "keywords_zh": ["依赖", "uv"]}]}
REQ = LLMRequest(system="Distill the transcript. " * 20, user="[t1] user: we use uv\n" * 100, response_model=Memories)


def per_call(fn, calls: int) -> float:
    fn()  # warm up: connection, imports
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def bench(fake, settings_kw: dict, url: str, body: dict, headers: dict, calls: int) -> tuple[float, float]:
    with httpx.Client(headers=headers) as raw:
        base = per_call(lambda: raw.post(url, json=body).json(), calls)
    p = get_provider(load_settings(state_dir="/tmp/distill-bench-state", **settings_kw))
    ours = per_call(lambda: p.complete(REQ), calls)
    p.close()
    return base, ours


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    calls = ap.parse_args().calls
    with FakeOpenAI(default=("json", ANSWER)) as o, FakeGemini(default=("json", ANSWER)) as g:
        body_o = {"model": "m", "messages": [{"role": "system", "content": REQ.system}, {"role": "user", "content": REQ.user}]}
        o_base, o_ours = bench(o, dict(llm="openai", llm_base_url=o.base_url, llm_model="m"),
                               f"{o.base_url}/chat/completions", body_o, {}, calls)
        body_g = {"contents": [{"role": "user", "parts": [{"text": REQ.user}]}],
                  "systemInstruction": {"parts": [{"text": REQ.system}]}}
        g_base, g_ours = bench(g, dict(llm="gemini", llm_base_url=g.base_url, llm_api_key="k", llm_model="m"),
                               f"{g.base_url}/v1/models/m:generateContent", body_g, {"x-goog-api-key": "k"}, calls)
    for name, base, ours in (("openai", o_base, o_ours), ("gemini", g_base, g_ours)):
        print(f"{name:7s} bare POST {base * 1000:6.2f} ms/call  provider {ours * 1000:6.2f} ms/call  ratio {ours / base:4.2f}x")


if __name__ == "__main__":
    main()
