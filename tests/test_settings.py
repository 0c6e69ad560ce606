"""Where each setting comes from: flags > DISTILL_* environment > config.toml > defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.errors import ConfigError
from distill.settings.hook import load_hook_config


@pytest.fixture
def state(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_") or key == "OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS":
            monkeypatch.delenv(key)
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("DISTILL_STATE_DIR", str(d))
    return d


def test_each_layer_overrides_the_one_below(state, monkeypatch):
    (state / "config.toml").write_text('chunk_tokens = 111\nmax_global = 7\nllm_timeout = 9.5\nagents_dir = "ag"\n')
    assert load_settings().max_per_agent == 3  # default
    assert load_settings().agents_dir == state / "ag"  # relative to the config file's folder
    monkeypatch.setenv("distill_chunk_tokens", "222")  # any case
    monkeypatch.setenv("DISTILL_MAX_GLOBAL", "8")
    s = load_settings(max_global=9)
    assert (s.chunk_tokens, s.max_global, s.llm_timeout) == (222, 9, 9.5)


def test_allow_list_from_either_variable_the_distill_one_winning(state, monkeypatch):
    monkeypatch.setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "main,ops")
    s = load_settings()
    assert s.allowed_agents() == {"main", "ops"}
    assert s.agent_is_read("ops") and not s.agent_is_read("dev") and not s.agent_is_read("memory-distiller")
    monkeypatch.setenv("DISTILL_ALLOWED_AGENT_IDS", "all")
    assert load_settings().allowed_agents() is None
    assert load_hook_config().allowed() is None


def test_list_settings_from_the_environment_are_json(state, monkeypatch):
    monkeypatch.setenv("DISTILL_SOURCES", json.dumps([{"path": "/x/cc", "agent_id": "claude-code"}]))
    assert [(str(r.path), r.agent_id) for r in load_settings().sources] == [("/x/cc", "claude-code")]
    monkeypatch.setenv("DISTILL_SOURCES", "[{oops")
    with pytest.raises(ConfigError, match="DISTILL_SOURCES is not valid JSON"):
        load_settings()
    assert load_hook_config() is None  # the hook defers to the full model's message


def test_a_typo_in_config_or_flags_is_refused_by_name(state):
    (state / "config.toml").write_text("chunk_tokenz = 5\n")
    with pytest.raises(ConfigError, match="chunk_tokenz") as err:
        load_settings()
    assert str(state / "config.toml") in str(err.value)
    (state / "config.toml").write_text("")
    with pytest.raises(ConfigError, match="max_globl"):
        load_settings(max_globl=1)


@pytest.mark.parametrize("env, value, named", [
    ("DISTILL_CHUNK_TOKENS", "lots", "setting chunk_tokens: Expected `int`, got `str`"),
    ("DISTILL_EMBEDDER", "word2vec", "setting embedder: Invalid enum value 'word2vec'"),
    ("DISTILL_DISTILLER_AGENT_ID", "has space", "agent id 'has space' in distiller_agent_id is not valid"),
    ("DISTILL_SOURCES", '[{"path": "/x", "agent_id": "a/b"}]', "setting sources[0]: agent id 'a/b'"),
    ("DISTILL_SOURCES", '[{"path": 3, "agent_id": "cc"}]', "setting sources[0].path: expected Path, got int"),
    ("DISTILL_WORKER_POLL", "maybe", "setting worker_poll: Expected `bool`, got `str`"),
])
def test_a_bad_value_is_refused_naming_the_setting(state, monkeypatch, env, value, named):
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert named in str(err.value) and "invalid configuration" in str(err.value)


def test_values_are_converted_as_before(state, monkeypatch):
    """Environment strings become numbers, booleans (yes/no/on/off/1/0/true/false) and paths."""
    (state / "config.toml").write_text('worker_poll = true\ndb = "~/mem"\n[dedup.local]\ncosine = 0.95\n')
    monkeypatch.setenv("DISTILL_EMBED_DIMENSIONS", "512")
    monkeypatch.setenv("DISTILL_LLM_TIMEOUT", "2")
    monkeypatch.setenv("DISTILL_BACKFILL_ARCHIVES", "no")
    s = load_settings()
    assert (s.worker_poll, s.backfill_archives, s.embed_dimensions, s.llm_timeout) == (True, False, 512, 2.0)
    assert s.db == Path(os.path.expanduser("~/mem")) and s.dedup_thresholds().cosine == 0.95
    for word, value in [("on", True), ("Yes", True), ("1", True), ("off", False), ("FALSE", False)]:
        monkeypatch.setenv("DISTILL_WORKER_POLL", word)
        assert load_settings().worker_poll is value


def test_given_names_the_settings_a_layer_set(state, monkeypatch):
    """A configured embedder is kept for an existing table even where another would fit."""
    assert "embedder" not in load_settings().given
    monkeypatch.setenv("DISTILL_EMBEDDER", "local")
    s = load_settings(db=str(state / "db"))
    assert {"embedder", "db", "state_dir"} <= s.given
    variant = s.replace(read_archives=True)
    assert variant.read_archives and not s.read_archives and {"embedder", "read_archives"} <= variant.given


_OUT_OF_RANGE = """
max_line_bytes 0 at least 4096 bytes | max_line_bytes -1 at least 4096 bytes | max_messages_per_agent -1 at least 1
max_messages_per_agent 0 at least 1 | batch_retention_days -1 at least 0 | state_lock_wait nan finite number
state_lock_wait inf finite number | state_lock_wait -1 at least 0 | llm_timeout 0 greater than 0
retry_attempts 0 at least 1 | store_lock_timeout nan finite number | embed_dimensions 0 at least 1
worker_stall_seconds 0 greater than 0
"""


@pytest.mark.parametrize("name, value, words", [tuple(case.strip().split(" ", 2))
                                                 for case in _OUT_OF_RANGE.replace("\n", "|").split("|") if case.strip()])
def test_a_numeric_setting_out_of_range_is_refused_from_every_layer(state, monkeypatch, name, value, words):
    """One check for env, config.toml and flags: a value that would silently lose data or hang
    (max_line_bytes=0 skips every line as too long; a NaN lock wait never ends) is refused."""
    def refused(**flags):
        with pytest.raises(ConfigError) as err:
            load_settings(**flags)
        msg = str(err.value)
        assert name in msg and f"DISTILL_{name.upper()}" in msg and "out of range" in msg and words in msg, msg

    monkeypatch.setenv(f"DISTILL_{name.upper()}", value)
    refused()
    monkeypatch.delenv(f"DISTILL_{name.upper()}")
    toml_value = {"nan": "nan", "inf": "inf"}.get(value, value)
    (state / "config.toml").write_text(f"{name} = {toml_value}\n")
    refused()
    (state / "config.toml").write_text("")
    refused(**{name: float(value) if value in ("nan", "inf") or "." in value else int(value)})


def test_every_numeric_setting_has_a_range(state):
    import msgspec

    from distill.config import _RANGES, Settings

    numeric = {f.name for f in msgspec.structs.fields(Settings)
               if type(f.default) in (int, float) or f.name in ("embed_dimensions", "llm_max_output_tokens")}
    assert numeric == set(_RANGES)
    s = load_settings(max_line_bytes=4096, max_messages_per_agent=1, batch_retention_days=0, state_lock_wait=0,
                      max_global=0, token_budget_run=0, worker_full_pass_interval=0)
    assert (s.max_line_bytes, s.max_messages_per_agent, s.batch_retention_days) == (4096, 1, 0)


def test_a_dedup_threshold_outside_0_to_1_is_refused(state):
    (state / "config.toml").write_text("[dedup.local]\ncosine = 1.5\n")
    with pytest.raises(ConfigError, match=r"dedup\.local\.cosine = 1\.5 is out of range"):
        load_settings()


def test_cli_refuses_max_line_bytes_0_with_exit_2_and_reads_nothing(state, tmp_path, monkeypatch):
    from tail_helpers import fact, header, msg, run_main

    f = tmp_path / "agents" / "main" / "sessions" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(header() + msg(fact(1)))
    p = run_main(["--agents-dir", str(tmp_path / "agents"), "run"], env={"DISTILL_MAX_LINE_BYTES": "0"})
    assert p.returncode == 2 and "max_line_bytes" in p.stderr and "Traceback" not in p.stderr
    assert not (state / "cursor.json").exists()
