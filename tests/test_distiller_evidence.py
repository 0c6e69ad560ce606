"""What the map prompt leaves out must not be what a memory rests on.

Every labelled transcript (all splits of ``tests/data/quality``) is cut into a batch as
``distill run`` would (the real tails for items with a ``format``), chunked with the default
settings and rendered as the LLM receives it. For every memory a careful person would keep:
each of its entities that the batch holds is still in the prompt, and at least one turn naming
one of them is sent whole. Only assistant turns may be left out; every person, tool and
system turn is sent.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from distill.config import load_settings
from distill.distiller.chunking import carries_nothing, chunk_batch
from distill.distiller.prompts import map_prompt

from tests.bench.quality import read_through_tails, to_batch
from tests.quality_set import load_items

ITEMS = [i for i in load_items() if i["expected"]]


def sent(item: dict, tmp: Path):
    batch = read_through_tails(item, tmp) if item.get("format") else to_batch(item)
    if batch is None:  # nothing in it survives the tails
        return [], [], ""
    s = load_settings(state_dir=tmp / "defaults")
    chunks = chunk_batch(batch.agents, chunk_tokens=s.chunk_tokens, overlap_turns=s.chunk_overlap_turns)
    return [m for a in batch.agents for m in a.messages], chunks, "\n".join(map_prompt(c) for c in chunks)


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
def test_what_a_kept_memory_rests_on_is_sent(item):
    with tempfile.TemporaryDirectory() as d:
        messages, chunks, prompt = sent(item, Path(d))
    low = prompt.casefold()
    for exp in item["expected"]:
        held = [e for e in exp["entities"] if any(e.casefold() in m.text.casefold() for m in messages)]
        assert all(e.casefold() in low for e in held), (exp["text"], held)
        naming = [m for m in messages if any(e.casefold() in m.text.casefold() for e in held)]
        if naming:
            assert any(not carries_nothing(m) and m.text.casefold() in low for m in naming), exp["text"]


def test_the_labelled_set_loses_only_assistant_acknowledgements_and_narration():
    """Across every transcript, kept memory or not: left-out turns are assistant turns, and few
    (a looser rule shows up here first)."""
    left_out, total = [], 0
    with tempfile.TemporaryDirectory() as d:
        for item in load_items():
            messages, chunks, prompt = sent(item, Path(d) / item["id"])
            total += len(messages)
            for c in chunks:
                said: list[str] = []
                for m in c.messages:
                    if carries_nothing(m, "\n".join(said)):
                        left_out.append(m)
                        continue
                    said.append(m.text)
                    assert m.text.removeprefix("[tool exec failed: ").rstrip("]")[:40] in prompt, item["id"]
    assert all((m.author or m.role) == "assistant" for m in left_out)
    assert 0 < len(left_out) < total / 4, (len(left_out), total)
