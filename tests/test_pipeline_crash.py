"""SIGKILL `distill run --distill` at several moments, then let it finish: the store ends up
exactly as after a run that never crashed (nothing lost, nothing doubled) and the cursor at
the end of every file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

from tests.pipeline_helpers import EN, ZH, cursor_state, settings, stored, write_session
from tests.tail_helpers import run_main

MIXED = [
    ("user", "记住：所有 cron 任务的时间都按 Asia/Shanghai 时区写。"),
    ("tool", "[tool exec failed: httpx.ReadTimeout: timed out after 10s]"),
    ("assistant", "Fixed by setting DISTILL_LLM_TIMEOUT=60 in the service environment."),
]


def lay_out(root):
    paths = [write_session(root, "main", "s-en", EN), write_session(root, "ops", "s-zh", ZH),
             write_session(root, "dev", "s-mixed", MIXED)]
    return paths, settings(root)


def flags(s) -> list[str]:
    return ["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "--db", str(s.db)]


def cli(s, *args):
    """The command line of a real process, for the runs that are killed."""
    return [sys.executable, "-m", "distill", *flags(s), *args]


def test_sigkill_anywhere_then_rerun_equals_clean_run(tmp_path):
    clean_paths, clean = lay_out(tmp_path / "clean")
    assert run_main([*flags(clean), "run", "--distill"]).returncode == 0  # the reference: no process to kill
    want = sorted(r.text for r in stored(clean))
    assert len(want) >= 4

    paths, s = lay_out(tmp_path / "crash")
    for delay in (0.3, 1.5, 3.0, 5.0):  # import, batch, embedding, store write / commit
        proc = subprocess.Popen(cli(s, "run", "--distill"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        texts = [r.text for r in stored(s)]
        assert all(n == 1 for n in Counter(texts).values()), "a memory was stored twice"
        assert set(texts) <= set(want)
        offsets = [cursor_state(s).get(str(p), (0, {}))[0] for p in paths]
        assert all(o in (0, p.stat().st_size) for o, p in zip(offsets, paths))
        if any(offsets):  # one batch covers every file: committed means all its memories are stored
            assert sorted(texts) == want
    done = run_main([*flags(s), "run", "--distill"])  # what the killed runs left, read by a clean one
    assert done.returncode == 0, done.stderr
    assert sorted(r.text for r in stored(s)) == want
    assert all(cursor_state(s)[str(p)] == (p.stat().st_size, {}) for p in paths)


def test_sigkill_with_a_chunk_set_aside_then_retry_equals_clean_run(tmp_path):
    """The same with an LLM (a fake server in this process) that fails one agent's chunk for
    good: at every kill no memory is doubled, no file's cursor is past a memory not stored,
    and the held file never passes its first held turn; `distill retry` then finishes it."""
    import json as _json

    from tests.fakes import FakeOpenAI
    from tests.fakes.openai_server import sent_text
    from tests.test_pipeline_chunks import MAIN_MEMORY, OPS, OPS_MEMORY

    dev_memory = {"text": "Rule: every cron schedule is written in the Asia/Shanghai time zone.",
                  "category": "rule", "importance": 0.8, "scope": "global",
                  "keywords": ["cron", "Asia/Shanghai", "时区", "规则"],
                  "entity_keywords": ["cron", "Asia/Shanghai"], "evidence": ["t1"]}
    healthy = {"uv instead of pip": MAIN_MEMORY, "Asia/Shanghai": dev_memory, "db-stage-2": OPS_MEMORY}
    broken = {"db-stage-2"}

    def answer(rec):
        _, user = sent_text(rec)
        for needle, memory in healthy.items():
            if needle in user:
                if needle in broken:
                    return ("sleep", 1.5, ("raw", "no JSON today"))
                return ("sleep", 1.5, ("json", {"memories": [memory]}))
        return ("json", {"memories": []})

    paths = [write_session(tmp_path, "main", "s-en", EN), write_session(tmp_path, "ops", "s-ops", OPS),
             write_session(tmp_path, "dev", "s-mixed", MIXED)]
    s = settings(tmp_path)
    first = lambda m: m["text"]  # noqa: E731
    with FakeOpenAI([], default=answer) as fake:
        env = {"PATH": "/usr/bin:/bin", "DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url,
               "DISTILL_LLM_MODEL": "m", "DISTILL_RETRY_ATTEMPTS": "1", "DISTILL_LLM_CONCURRENCY": "1"}
        by_path = {str(paths[0]): MAIN_MEMORY, str(paths[2]): dev_memory}
        for delay in (0.5, 2.0, 3.5, 5.0, 7.0):
            proc = subprocess.Popen(cli(s, "run", "--distill"), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=env)
            time.sleep(delay)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            texts = [r.text.split("\n")[0] for r in stored(s)]
            assert all(n == 1 for n in Counter(texts).values()), "a memory was stored twice"
            assert OPS_MEMORY["text"] not in texts
            state = cursor_state(s)
            for p in paths:
                offset = state.get(str(p), (0, {}))[0]
                if str(p) in by_path and offset == p.stat().st_size:
                    assert first(by_path[str(p)]) in texts, "a cursor passed a memory not stored"
            first_turn = len(paths[1].read_bytes().split(b"\n", 1)[0]) + 1  # after the session header
            assert state.get(str(paths[1]), (0, {}))[0] <= first_turn, "the held file passed its held turn"
        done = run_main([*flags(s), "run", "--distill", "--json"], env=env, clear_env=True)
        assert done.returncode == 0, done.stderr
        status = run_main([*flags(s), "status", "--json"], env=env, clear_env=True)
        assert [c["agentId"] for c in _json.loads(status.stdout)["setAside"]] == ["ops"]
        broken.clear()
        retried = run_main([*flags(s), "retry"], env=env, clear_env=True)
        assert retried.returncode == 0, retried.stderr
    texts = sorted(r.text.split("\n")[0] for r in stored(s))
    assert texts == sorted(m["text"] for m in healthy.values())
    assert all(cursor_state(s)[str(p)] == (p.stat().st_size, {}) for p in paths)
