"""Where each setting comes from: flags > DISTILL_* environment > config.toml > defaults."""

from __future__ import annotations

import json
import os

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
