"""The LLM path's safety net (issue 21): whatever a model answers, the junk shapes real
transcripts produced are not stored. A real httpx client against the fake OpenAI server,
the real pipeline and store; the model answers exactly those shapes."""

from __future__ import annotations

import pytest

from distill.pipeline import run_distill
from tests.fakes import FakeOpenAI
from tests.pipeline_helpers import settings, stored, write_session

SESSION = [
    ("user", "here is the audit we pasted\n| Area | Rule | When |\n|---|---|---|\n"
             "| **Consolidate** | Always write to `organizational-docs`, never OneDrive | Any file creation |\n"
             "| **Monitor** | Never leave `setInterval(loadAll)` running | monitor page |"),  # t1
    ("toolResult", "<tool_use_error>File has not been read yet. Read it first before writing to it."
                   "</tool_use_error>"),  # t2
    ("toolResult", "error TS2307: Cannot find module '@/utils' or its corresponding type declarations."),  # t3
    ("toolResult", "Error: Cannot find module 'vite-plugin-svgr' imported from vite.config.ts"),  # t4
    ("assistant", "I set the alias `@` to ./src in vite.config.ts, and the build passes now."),  # t5
    ("toolResult", "2026-05-04 02:49:02,081 1 INFO prod odoo: [SUMMARY] Queue processing complete: "
                   "processed=1, failed=0"),  # t6
    ("toolResult", "ImportError: libpq.so.5: cannot open shared object file: No such file or directory"),  # t7
    ("assistant", "Fixed: the ImportError came from the missing system package; apt-get install libpq5 solved it."),
]


def pitfall(text: str, entities: list[str], evidence: list[str]) -> dict:
    return {"text": text, "category": "pitfall", "importance": 0.8, "scope": "global",
            "keywords": [*entities, "构建失败", "踩坑"], "entity_keywords": entities, "evidence": evidence}


GOOD = pitfall("Pitfall: importing psycopg2 fails with ImportError libpq.so.5 when the system package is missing. "
               "Fix: apt-get install libpq5.", ["libpq5", "ImportError", "libpq.so.5"], ["t7", "t8"])
FIX = "Fix: set the alias `@` to ./src in vite.config.ts."
JUNK = {
    "harness_error": pitfall("Pitfall: the edit fails with <tool_use_error>File has not been read yet</tool_use_error>. "
                             "Fix: set the alias `@` in vite.config.ts first.", ["vite.config.ts"], ["t2", "t5"]),
    "heading_fix": pitfall("Pitfall: the build fails with TS2307 Cannot find module '@/utils'. Fix: ## **Quick fix:**",
                           ["TS2307", "@/utils"], ["t3", "t5"]),
    "status_fix": pitfall("Pitfall: the build fails with TS2307 for '@/utils' in vite.config.ts. Fix: Fixed and deployed.",
                          ["TS2307", "vite.config.ts"], ["t3", "t5"]),
    "info_line": pitfall("Pitfall: [SUMMARY] Queue processing complete: processed=1, failed=0. Fix: rerun the queue "
                         "with `processed=1` in vite.config.ts.", ["processed=1"], ["t6", "t5"]),
    "pasted_rule": {"text": "Rule: always write files to organizational-docs and never to OneDrive.",
                    "category": "rule", "importance": 0.8, "scope": "global",
                    "keywords": ["organizational-docs", "OneDrive", "文件存放", "规则"],
                    "entity_keywords": ["organizational-docs", "OneDrive"], "evidence": ["t1"]},
}
# one fix text, two different errors: one memory at most
TWO_ERRORS = [pitfall(f"Pitfall: the build fails with TS2307 Cannot find module '@/utils'. {FIX}",
                      ["TS2307", "@/utils", "vite.config.ts"], ["t3", "t5"]),
              pitfall(f"Pitfall: vite fails with Cannot find module 'vite-plugin-svgr'. {FIX}",
                      ["vite-plugin-svgr", "vite.config.ts"], ["t4", "t5"])]


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "DISTILL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_validator_drops_the_junk_shapes_whatever_the_model_answers(tmp_path):
    write_session(tmp_path, "main", "s1", SESSION)
    answer = {"memories": [*JUNK.values(), *TWO_ERRORS, GOOD]}
    with FakeOpenAI([("json", answer)]) as fake:
        s = settings(tmp_path, llm="openai", llm_base_url=fake.base_url, llm_model="m", llm_api_key="k",
                     retry_attempts=1, llm_timeout=5.0, max_global=20, max_per_agent=20)
        summary = run_distill(s)
    texts = sorted(r.text.split("\nKeywords")[0] for r in stored(s))
    assert texts == sorted([GOOD["text"], TWO_ERRORS[0]["text"]])
    c = summary.counters
    assert (c["dropped_harness_error"], c["dropped_not_a_fix"], c["dropped_not_an_error"], c["dropped_pasted"],
            c["dropped_fix_reused"]) == (1, 2, 1, 1, 1)
