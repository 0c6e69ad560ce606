"""The store's own duplicate decision (``MemoryStore.check_duplicate``), on a real LanceDB
directory with the bundled local embedder: what ``add`` decides, and why."""

from __future__ import annotations

import lancedb

from distill.store import MemoryDraft
from test_store_memory import local_embedder, store  # noqa: F401, F811 — the same real store and embedder

VAULT = "Rule: never overwrite a vault node without asking the user first."
SPECULATE = "Rule: never speculate about causes; read the logs first."
INSTALL = "Note: installed ffmpeg with Homebrew for the video scripts."
ZH_PREF = "偏好：用户希望每周五下午收到项目周报。"


def rows(store) -> int:
    return lancedb.connect(str(store.settings.db)).open_table("memories").count_rows()


def test_an_empty_scope_has_nothing_to_compare_with(store):
    v = store.check_duplicate(VAULT)
    assert (v.decision, v.id) == ("distinct", None)
    assert "nothing stored" in v.reason


def test_the_real_wrong_merges_stay_two_memories_and_say_why(store):
    [speculate, pref] = store.add([MemoryDraft(text=SPECULATE, category="decision"),
                                   MemoryDraft(text=ZH_PREF, category="preference")])
    v = store.check_duplicate(VAULT)
    assert v.decision == "distinct" and v.id == speculate.id  # the nearest row, named
    assert v.reason
    assert store.add([MemoryDraft(text=VAULT, category="decision")])[0].status == "added"
    assert store.check_duplicate(INSTALL).decision == "distinct"
    assert store.add([MemoryDraft(text=INSTALL, category="fact")])[0].status == "added"
    assert rows(store) == 4


def test_check_duplicate_agrees_with_add_and_writes_nothing(store):
    [first] = store.add([MemoryDraft(text=INSTALL, category="fact")])
    paraphrase = "Note: ffmpeg was installed via Homebrew for the video scripts."
    v = store.check_duplicate(paraphrase)
    assert (v.decision, v.id) == ("duplicate", first.id) and v.reason.startswith("near:")
    assert rows(store) == 1
    out = store.add([MemoryDraft(text=paraphrase, category="fact")])[0]
    assert (out.status, out.id) == ("duplicate", first.id)
    exact = store.check_duplicate(INSTALL.upper())
    assert (exact.decision, exact.id, exact.reason) == ("duplicate", first.id, "exact")


def test_scopes_are_compared_apart(store):
    store.add([MemoryDraft(text=INSTALL, category="fact", scope="agent:a")])
    assert store.check_duplicate(INSTALL, scope="agent:b").id is None
    assert store.check_duplicate(INSTALL, scope="agent:a").decision == "duplicate"


def test_a_realistic_corpus_written_through_the_store_keeps_its_distinct_memories(store):
    """tests/relevance_corpus.py: ~290 memories that are all different (one template per
    tool, each fact once; checked by hand, none is a paraphrase of another). Written through
    ``add``, none may be merged into another: "nginx logs filled the disk …" went into
    "Docker logs filled the disk …" at cosine 0.977 (a lower-case tool name read as an
    ordinary word), and 47 Chinese memories into the English one of the same kind about the
    same tool ("事实：Docker 的配置由运维组统一管理…" into "Fact: the Docker dashboard is linked
    from the team wiki …", cosine 0.90–0.94) until the guard read the Chinese words through
    a dictionary."""
    from tests.relevance_corpus import corpus

    texts = list(corpus().values())
    outcomes = store.add([MemoryDraft(text=t) for t in texts])
    kept = {o.id: t for o, t in zip(outcomes, texts) if o.status == "added"}
    merged = [(t, kept[o.id]) for o, t in zip(outcomes, texts) if o.status == "duplicate"]
    assert merged == []  # 57, then 47 before; see docs/dedup.md
    assert rows(store) == len(texts)
