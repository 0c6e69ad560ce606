"""Which files are transcripts and whose: the walk, the daemon's one-file lookup (``classify``)
and the task check (``distill.roots``) agree, each on its own terms."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.errors import InvalidTask
from distill.roots import check_session_file, owner_of
from distill.settings.hook import HookConfig
from distill.tails.discover import classify, discover

EXAMPLE = Path(__file__).resolve().parent.parent / "state.example"


@pytest.fixture
def example(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DISTILL_"):
            monkeypatch.delenv(key)
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    return root


def test_classify_names_every_walked_file_as_the_walk_does(example):
    s = load_settings(state_dir=example)
    walked = list(discover(s, Counter()))
    assert {sf.agent for sf in walked} == {"main", "code-agent", "claude-code", "codex"}  # never the distiller
    for sf in walked:
        one = classify(s, sf.path)
        assert (one.path, one.agent, one.format, one.key) == (sf.path, sf.agent, sf.format, sf.key)
    distiller = next((example / "agents" / "memory-distiller" / "sessions").glob("*.jsonl"))
    assert classify(s, distiller) is None


def test_overlapping_roots_the_walk_takes_the_first_a_task_must_name_one_of_them(example):
    """A source root that also covers OpenClaw's folder: the walk and classify give the file
    to the first root (the OpenClaw agent); the task check accepts either owner, and a path
    with two owners has none for the watcher (it cannot tell whose it is)."""
    s = load_settings(state_dir=example)
    s = s.replace(sources=[*s.sources, type(s.sources[0])(path=example / "agents", agent_id="all-of-it",
                                                          format="auto", glob="**/*.jsonl")])
    f = next((example / "agents" / "main" / "sessions").glob("*.jsonl"))
    assert [sf.agent for sf in discover(s, Counter()) if sf.path == str(f)] == ["main"]
    assert classify(s, f).agent == "main"
    cfg = HookConfig.from_settings(s)
    assert check_session_file(cfg, "main", str(f))[0] == str(f)
    assert check_session_file(cfg, "all-of-it", str(f))[0] == str(f)
    with pytest.raises(InvalidTask, match="belongs to agent all-of-it or main"):
        check_session_file(cfg, "codex", str(f))
    assert owner_of(cfg, str(f)) is None
    only = cfg.sources[:-1]
    assert owner_of(HookConfig(cfg.state_dir, cfg.agents_dir, only, cfg.distiller_agent_id, ""), str(f)) == "main"


def test_a_root_reached_through_a_symlink(example, tmp_path):
    """classify keeps the path as given (the cursor knows files by the path the walk saw);
    the task check resolves symlinks on both sides, so a link to a root is still that root."""
    link = tmp_path / "agents-link"
    link.symlink_to(example / "agents")
    s = load_settings(state_dir=example, agents_dir=link)
    f = next((link / "main" / "sessions").glob("*.jsonl"))
    one = classify(s, f)
    assert one.path == str(f) and one.agent == "main"
    assert [sf.path for sf in discover(s, Counter()) if sf.agent == "main"] == [str(f)]
    cfg = HookConfig.from_settings(s)
    given, resolved = check_session_file(cfg, "main", str(f))
    assert given == str(f) and resolved == os.path.realpath(f) != given
    assert owner_of(cfg, str(f)) == owner_of(cfg, resolved) == "main"


def test_a_transcript_reached_twice_is_read_once(tmp_path):
    """A session hard-linked under two agents (or linked within one folder) is one file: the
    walk lists it at its first place only, so its turns are not read twice."""
    from tests.tail_helpers import fact, header, msg, run, session, settings_for, texts

    s = settings_for(tmp_path)
    first = session(tmp_path, agent="alpha", name="s1")
    first.write_bytes(header() + msg(fact(1)))
    os.link(first, session(tmp_path, agent="beta", name="s1"))
    os.link(first, first.with_name("s2.jsonl"))
    session(tmp_path, agent="beta", name="s3").write_bytes(header("s3") + msg(fact(2)))
    assert [(sf.agent, os.path.basename(sf.path)) for sf in discover(s, Counter())] == [
        ("alpha", "s1.jsonl"), ("beta", "s3.jsonl")]
    assert sorted(texts(run(s)[1])) == sorted([fact(1), fact(2)])
