"""Caps scale with the conversation: a history of 50 sessions that each state one explicit
rule and fix one real error keeps all 100 memories with the default settings, through the
real ``distill run --distill``; and the one-line summary says what was dropped and why."""

from tests.pipeline_helpers import settings, stored, write_session
from tests.tail_helpers import run_main

TOOLS = ["ruff", "black", "mypy", "pytest", "eslint", "prettier", "cargo", "gofmt", "terraform", "helm"]
TARGETS = ["billing", "search", "gateway", "ledger", "mailer", "scheduler", "importer", "reports", "auth", "cache"]
WHEN = ["before every commit", "before opening a pull request", "after each rebase", "before tagging a release",
        "whenever the lockfile changes"]


def session(i: int) -> list[tuple[str, str]]:
    tool, target, when = TOOLS[i % 10], TARGETS[i // 5], WHEN[i % 5]
    conf = f"{target}/conf/{tool}-{i}.yaml"
    return [
        ("user", f"From now on always run {tool} on services/{target}{i} {when}."),
        ("assistant", "Understood."),
        ("toolResult", f"Error: ENOENT: no such file or directory, open '{conf}'"),
        ("assistant", f"{conf} was never created for {target}. Fixed by copying {target}/conf/{tool}-{i}.example.yaml "
                      f"to {conf}; the {target} job now starts."),
    ]


def run_distill_cli(s):
    """`distill run --distill` with the default settings: an environment of its own, rules extractor."""
    return run_main(["--state-dir", str(s.state_dir), "--agents-dir", str(s.agents_dir), "--db", str(s.db),
                     "run", "--distill"], env={"DISTILL_LLM": "rules", "PATH": ""}, clear_env=True)


def test_fifty_sessions_keep_all_hundred_memories(tmp_path):
    for i in range(50):
        write_session(tmp_path, "main", f"s{i:02d}", session(i))
    s = settings(tmp_path)
    out = run_distill_cli(s)
    assert out.returncode == 0, out.stderr
    rows = stored(s)
    assert len(rows) == 100, out.stdout
    assert "100 memories added" in out.stdout and "over the cap" not in out.stdout


def test_the_summary_line_counts_what_the_caps_dropped(tmp_path):
    write_session(tmp_path, "main", "one", [("user", f"From now on always run {t} on services/{g} before merging.")
                                           for t, g in zip(TOOLS[:5], TARGETS[5:])])
    s = settings(tmp_path)
    out = run_distill_cli(s)
    assert out.returncode == 0, out.stderr
    assert "3 memories added" in out.stdout and "2 over the cap" in out.stdout
