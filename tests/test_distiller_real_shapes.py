"""The junk the rules distiller made of real transcripts (issue 21), one cause per session,
each a short synthetic transcript in the real shape, read and stored by the real
``distill run --distill`` (one process for all of them): what is stored and what is not.

The shapes come from the labelled output on public trees of real sessions (see
``tests/bench/real_quality.py``); the words are made up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quality_set import claude_code_lines, openclaw_lines

ROOT = Path(__file__).resolve().parents[1]

CC = "claude-code"
SESSIONS: dict[str, tuple[str, list]] = {
    # Claude Code's harness refuses an edit: nothing about the user's software
    "harness": (CC, [
        ("user", "rename the partner field label in views/partner.xml"),
        ("Edit", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"),
        ("Edit", "<tool_use_error>No changes to make: old_string and new_string are exactly the same."
                 "</tool_use_error>"),
        ("Edit", "<tool_use_error>String to replace not found in file.\nString: <field name=\"partner_label\" "
                 "string=\"Partner\"/></tool_use_error>"),
        ("Bash", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
                 "file edit, the new_string was NOT written to the file)."),
        ("assistant", "Fixed: the label in `views/partner.xml` now uses the `partner_label` field instead of `name`."),
    ]),
    # the only "fix" after a real error is a heading, a status line, a table row, narration
    "heading_fix": (CC, [
        ("user", "upgrade the module please"),
        ("Bash", "odoo.tools.convert.ParseError: while parsing /mnt/extra-addons/crm_extra/views/lead_views.xml:12"),
        ("assistant", "Fixed and deployed. The view in lead_views.xml loads."),
        ("assistant", "## **Quick fix:**"),
        ("assistant", "| `lead_views.xml` | fixed | 40px |"),
        ("assistant", "Let me try a different approach and place the tab first in lead_views.xml."),
    ]),
    # one fix, two errors before it: it is the fix of the error it names, and of that one only
    "one_fix_two_errors": (CC, [
        ("user", "run the migrations"),
        ("Bash", "SQLSTATE[42S02]: Base table or view not found: 1146 Table 'shop.order_lines' doesn't exist"),
        ("Bash", "Error: Cannot find module 'tailwindcss/plugin' imported from vite.config.js"),
        ("assistant", "Fixed by adding `protected $table = 'order_line';` to the OrderLine model so it reads the "
                      "order_line table."),
    ]),
    # an INFO summary line that says failed=0 is no error, whatever follows it
    "info_line": (CC, [
        ("user", "is the queue done?"),
        ("Bash", "2026-05-04 02:49:02,081 1 INFO prod odoo: [library][SUMMARY] Queue processing complete: "
                 "processed=1, failed=0, files_created=0"),
        ("assistant", "I changed the queue cron in `library_cron.xml` to run every 5 minutes instead of hourly."),
    ]),
    # a source line that contains "error", and a feature bullet in the assistant's summary: no errors
    "not_errors": (CC, [
        ("user", "why does the wiki page 404?"),
        ("Read", "if (idx === -1) return res.status(404).json({ error: 'Wiki page not found' });"),
        ("assistant", "Fixed by returning the wiki page list instead of a 404 in `wiki.js` when `idx` is -1."),
        ("assistant", "Summary:\n- **Abbreviations**: `EMAR`, `AE` now shown\n- Sidebar on EVERY page"),
        ("assistant", "The module has been upgraded to version 18.0.1.8.0 with `-u wiki`."),
    ]),
    # a real pitfall, to show the rest is not silence: a program's error and the change that named it
    "real_pitfall": (CC, [
        ("user", "install the contacts module"),
        ("Bash", "odoo.tools.convert.ParseError: while parsing /mnt/extra-addons/contacts_req/views/"
                 "subcontractor_views.xml:3"),
        ("assistant", "Fixed! The `<` comparison operators in the decoration attributes of subcontractor_views.xml "
                      "have been XML-escaped to `&lt;`."),
    ]),
}
OPENCLAW: dict[str, list] = {
    # a markdown table and a bullet list the person pasted: not their rules
    "pasted_table": [
        ("user", "here is the audit\n\n| Area | Rule | When |\n|---|---|---|\n"
                 "| **Consolidate** | Always write to `organizational-docs`, never OneDrive | Any file creation |\n"
                 "| **Memory** | Never clear `setInterval(loadAll)` | monitor page |\n"
                 "- Always available - 24/7 strategic partner via `openclaw gateway`"),
        ("assistant", "Thanks, I read the audit."),
    ],
    # a task for today that says "always"; a standing rule said as one
    "task_and_rule": [
        ("user", "remove the activity type in `crm_task.py`, always will be todo, also tags, lets improve the assign "
                 "to field, 1st the name with last name"),
        ("assistant", "Done."),
        ("user", "when you create docker compose files, save in memory: always check that ports are not in use by "
                 "other containers with `docker ps`"),
        ("assistant", "Saved."),
    ],
    # a diary line with health details, and a complaint: neither is a rule
    "diary": [
        ("user", "dear diary: slept 4 hours, my doctor says my blood pressure is high, never skip `metformin` again"),
        ("assistant", "Take care."),
        ("user", "why did you leave `notes_old.md` behind again? never do that"),
        ("assistant", "Sorry, removed it."),
    ],
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict[str, list[dict]]:
    """Memories stored by one ``distill run --distill`` over all the sessions, by file name."""
    root = tmp_path_factory.mktemp("shapes")
    for sid, (_, turns) in SESSIONS.items():
        path = root / "claude" / "proj" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [t if t[0] in ("user", "assistant") else ("tool_error", *t) for t in turns]
        path.write_bytes(b"".join(claude_code_lines(lines, session=sid)))
    for sid, turns in OPENCLAW.items():
        path = root / "agents" / "main" / "sessions" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(openclaw_lines(turns)))
    state = root / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        f'agents_dir = "{root / "agents"}"\ndb = "{root / "db"}"\n'
        f'[[sources]]\npath = "{root / "claude"}"\nagent_id = "claude-code"\nformat = "claude-code"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}

    def distill(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(state), *args],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)

    run = distill("run", "--distill")
    assert run.returncode == 0, run.stderr
    assert "left out as unsure" in run.stdout  # the summary line counts what was not stored
    out = distill("memories", "export")
    assert out.returncode == 0, out.stderr
    by_session: dict[str, list[dict]] = {sid: [] for sid in [*SESSIONS, *OPENCLAW]}
    for row in json.loads(out.stdout)["memories"]:
        md = row["metadata"] if isinstance(row["metadata"], dict) else json.loads(row["metadata"])
        for sid in {Path(f).name.split(".")[0] for f in md["provenance"]["files"]}:
            by_session.setdefault(sid, []).append({"text": row["text"], "kind": md["kind"]})
    return by_session


def test_harness_errors_are_never_pitfalls(stored):
    assert stored["harness"] == []


def test_a_heading_status_line_table_row_or_narration_is_never_the_fix(stored):
    assert stored["heading_fix"] == []


def test_one_fix_serves_the_one_error_it_names(stored):
    (mem,) = stored["one_fix_two_errors"]
    assert mem["kind"] == "pitfall" and "order_lines" in mem["text"] and "tailwindcss" not in mem["text"]
    assert "protected $table" in mem["text"]


def test_an_info_line_with_failed_0_is_not_an_error(stored):
    assert stored["info_line"] == []


def test_a_source_line_with_error_in_it_or_a_feature_bullet_is_not_an_error(stored):
    assert stored["not_errors"] == []


def test_a_programs_error_with_the_change_that_named_it_is_kept_in_whole_sentences(stored):
    (mem,) = stored["real_pitfall"]
    body = mem["text"].split("\nKeywords")[0]
    assert mem["kind"] == "pitfall" and "ParseError" in body and "&lt;" in body
    assert body.endswith(".") and "Fixed!" not in body


def test_pasted_tables_and_bullets_are_not_the_persons_rules(stored):
    assert stored["pasted_table"] == []


def test_a_task_for_today_with_always_is_no_rule_but_a_standing_instruction_is(stored):
    (mem,) = stored["task_and_rule"]
    assert mem["kind"] == "rule" and "check that ports are not in use" in mem["text"]
    assert "activity type" not in mem["text"]


def test_diaries_health_details_and_complaints_are_not_rules(stored):
    assert stored["diary"] == []
