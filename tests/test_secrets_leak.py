"""No fake secret of tests/data/secrets_corpus.py reaches a batch file, an LLM request or the
store (issue 10 item 7, issue 8 item 6): the real `distill run --distill` over OpenClaw, Claude
Code and Codex transcripts, each secret in user text, assistant text, a failed tool's output
or a tool call's arguments, with the OpenAI-compatible fake logging every request body."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from distill.text.redact import redact
from tests.data.secrets_corpus import corpus, leaked, ordinary
from tests.fakes import FakeOpenAI
from tests.sources_lines import (
    FIRST_LINES,
    cc_assistant,
    cc_user,
    cx_item,
    cx_output,
    oc_msg,
    oc_tool_result,
)
from tests.tail_helpers import cli

SECRETS = corpus()
FORMATS = ("openclaw", "claude-code", "codex")
PLACES = ("user", "assistant", "tool_output", "tool_args")
# false redactions allowed on ordinary text: the report half was written before the redactor's
# output on it was seen; 0 of 59 changed then. One line in 20 is the bound this test keeps, so
# that a rule that starts eating hashes, UUIDs or paths fails here.
MAX_FALSE_SHARE = 0.05


def _lines(fmt: str, place: str, i: int, text: str) -> list[bytes]:
    if fmt == "openclaw":
        return {
            "user": [oc_msg("user", [{"type": "text", "text": text}])],
            "assistant": [oc_msg("assistant", [{"type": "text", "text": text}])],
            "tool_output": [oc_msg("assistant", [{"type": "toolCall", "id": f"call_{i}", "name": "exec",
                                                  "arguments": {"command": "deploy.sh"}}]),
                            oc_tool_result("exec", "error: " + text, is_error=True)],
            "tool_args": [oc_msg("assistant", [{"type": "toolCall", "id": f"call_{i}", "name": "exec",
                                                "arguments": {"command": text}}])],
        }[place]
    if fmt == "claude-code":
        tool = {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Bash", "input": {"command": text}}
        return {
            "user": [cc_user(text)],
            "assistant": [cc_assistant(f"msg_{i}", [{"type": "text", "text": text}])],
            "tool_output": [cc_assistant(f"msg_{i}", [{**tool, "input": {"command": "deploy.sh"}}]),
                            cc_user([{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
                                      "content": "Error: " + text, "is_error": True}])],
            "tool_args": [cc_assistant(f"msg_{i}", [tool])],
        }[place]
    call = {"name": "shell", "call_id": f"call_{i}"}
    return {
        "user": [cx_item("message", role="user", content=[{"type": "input_text", "text": text}])],
        "assistant": [cx_item("message", role="assistant", content=[{"type": "output_text", "text": text}])],
        "tool_output": [cx_item("function_call", arguments=json.dumps({"command": ["bash", "-lc", "deploy.sh"]}), **call),
                        cx_output(f"call_{i}", json.dumps({"output": "error: " + text,
                                                           "metadata": {"exit_code": 1, "duration_seconds": 0.2}}))],
        "tool_args": [cx_item("function_call", arguments=json.dumps({"command": ["bash", "-lc", text]}), **call)],
    }[place]


def _write_world(root: Path) -> dict[str, int]:
    """Every secret once, formats and places in rotation; returns how many went where."""
    files = {"openclaw": root / "agents" / "main" / "sessions" / "s1.jsonl",
             "claude-code": root / "cc" / "proj" / "c1.jsonl",
             "codex": root / "codex" / "2026" / "11" / "x1.jsonl"}
    out = {f: [FIRST_LINES[f]] for f in FORMATS}
    where: dict[str, int] = {}
    for i, (kind, _, sentence) in enumerate(SECRETS):
        fmt, place = FORMATS[i % 3], PLACES[(i // 3) % 4]
        text = f"Deploy note {i} ({kind}): {sentence}\nWe fixed the failing cron job by restarting the worker."
        out[fmt] += _lines(fmt, place, i, text)
        where[f"{fmt}/{place}"] = where.get(f"{fmt}/{place}", 0) + 1
    for fmt, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(out[fmt]))
    state = root / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        f'[[sources]]\npath = "{root / "cc"}"\nagent_id = "claude-code"\nformat = "claude-code"\n'
        f'[[sources]]\npath = "{root / "codex"}"\nagent_id = "codex"\nformat = "codex"\n')
    return where


def _echoing_answer() -> dict:
    """A model that repeats secrets it was never shown (or a poisoned one): the store must
    still not get them."""
    first = {}
    for kind, secret, _ in SECRETS:
        first.setdefault(kind, secret)
    text = (f"Pitfall: the failing cron job used the key {first['openai_key']}, which was revoked; "
            f"{first['email']} got the alert. Cause: the old password {first['password_phrase_zh']} expired. "
            f"Fix: restarting the worker with a new key; tell {first['phone_intl']} and {first['feishu_user']}.")
    return {"memories": [{"text": text, "category": "pitfall", "importance": 0.8, "scope": "global",
                          "keywords": ["deploy", "key rotation", "密钥轮换", "部署失败"],
                          "entity_keywords": ["cron job"], "evidence": ["t1"]}]}


def _strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def test_corpus_is_big_and_varied():
    assert len(SECRETS) >= 150 and len({k for k, _, _ in SECRETS}) >= 30


@pytest.mark.parametrize("kind,secret,text", SECRETS, ids=[f"{i}-{k}" for i, (k, _, _) in enumerate(SECRETS)])
def test_redact_removes_every_fake_secret(kind, secret, text):
    out, counts = redact(text)
    assert not leaked(secret, out), out
    assert sum(counts.values()) >= 1
    assert redact(out) == (out, type(counts)())  # idempotent


@pytest.mark.parametrize("half", ["tune", "report"])
def test_ordinary_text_is_rarely_touched(half):
    lines = ordinary(half)
    changed = [line for line in lines if redact(line)[0] != line]
    assert len(changed) <= MAX_FALSE_SHARE * len(lines), changed


def test_no_secret_reaches_a_batch_an_llm_request_or_the_store(tmp_path, monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "DISTILL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    where = _write_world(tmp_path)
    assert len(where) == 12 and min(where.values()) >= 10
    with FakeOpenAI([], default=("json", _echoing_answer())) as fake:
        env = {"DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url, "DISTILL_LLM_MODEL": "m",
               "DISTILL_LLM_API_KEY": "k", "DISTILL_DB": str(tmp_path / "db"),
               "DISTILL_MAX_MESSAGES_PER_AGENT": "100000", "XDG_CACHE_HOME": str(tmp_path / "cache")}
        p = cli(tmp_path / "state", "--agents-dir", str(tmp_path / "agents"), "run", "--distill", "--json",
                env=env, timeout=300)
        requests = list(fake.requests)
    out = orjson.loads(p.stdout)
    assert requests, p.stdout
    batches = [f for f in (tmp_path / "state" / "batches").rglob("*.json")]
    assert batches
    batch_text = "\n".join(f.read_text(encoding="utf-8") for f in batches)
    request_text = "\n".join(r.raw.decode("utf-8", "replace") + "\n".join(_strings(r.body)) for r in requests)

    from distill.config import load_settings
    from distill.store import MemoryStore

    rows = MemoryStore.open(load_settings(db=tmp_path / "db", state_dir=tmp_path / "state")).list(limit=10_000)
    store_text = "\n".join(json.dumps(r if isinstance(r, dict) else r.model_dump(mode="json"), ensure_ascii=False,
                                      default=str) for r in rows)
    assert rows and "[REDACTED:" in store_text  # the echoed secrets were stored, redacted

    leaks = {where: [k for k, s, _ in SECRETS if leaked(s, text)]
             for where, text in (("batch", batch_text), ("llm", request_text), ("store", store_text))}
    assert leaks == {"batch": [], "llm": [], "store": []}
    # and the secrets were there to leak: what was read and sent holds their redaction marks
    assert batch_text.count("[REDACTED:") >= 100, out
    assert request_text.count("[REDACTED:") >= 100


def test_detect_secrets_patterns_ship_with_distill_so_a_run_does_not_import_it(tmp_path):
    """Importing detect-secrets costs 0.2-0.8 s a process: the installed version's patterns ship
    in distill/data, give the same redaction as the package's own plugins, and nothing is
    written outside the state directory (no cache file in the home folder)."""
    import subprocess
    import sys

    from distill.text import redact

    shipped = orjson.loads(redact.DS_SHIPPED.read_bytes())
    assert shipped["version"] == redact.detect_secrets_version(), (
        "detect-secrets was upgraded: regenerate distill/data/detect_secrets_patterns.json from "
        "distill.text.redact._ds_export() and check the new plugins")
    assert shipped["plugins"] == orjson.loads(orjson.dumps(redact._ds_export()))

    probe = ("import sys; from distill.text.redact import redact; "
             "print(redact('mailchimp ' + '0123456789abcdef' * 2 + '-us6 and ' + 'S' + 'K' + 'ab12' * 8)[0]); "
             "print('detect_secrets' in sys.modules)")
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env=env, cwd=Path(__file__).resolve().parents[1]).stdout.split("\n")
    assert out[0] == "mailchimp [REDACTED:mailchimp_access_key] and [REDACTED:twilio_api_key]"
    assert out[1] == "False"
    assert not any(tmp_path.iterdir())
