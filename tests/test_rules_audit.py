"""Defects a blind audit found in the rules extractor (12 transcripts written, and their
expected memories, before distill ran on them). The turns are the audit's own, as the tails
wrote them into its batch."""

from distill.distiller.rules import sentences

from tests.test_rules_quality import distill

REVERSED = ("等一下，我跟运维聊完了。改主意了：我们决定不用 Redis 了，改用 PostgreSQL 的 SELECT ... FOR UPDATE "
            "SKIP LOCKED 做队列，因为不想为了队列再多维护一个 Redis 服务。")


def test_an_ellipsis_inside_a_sentence_does_not_end_it(tmp_path):
    (mem,) = distill([("person", REVERSED)], tmp_path)
    assert "SELECT ... FOR UPDATE SKIP LOCKED 做队列，因为不想为了队列再多维护一个 Redis 服务。" in mem.text
    assert sentences("it hung... and then died. Fine.") == ["it hung... and then died.", "Fine."]
    assert sentences("call run(...) first. Then stop.") == ["call run(...) first.", "Then stop."]
    # an ellipsis that ends a sentence still does
    assert sentences("I waited... Then it worked.") == ["I waited...", "Then it worked."]


def test_a_chinese_semicolon_does_not_cut_the_fix_from_its_cause(tmp_path):
    (mem,) = distill([
        ("person", "db 连不上了，billing-api 一直 502，帮我看看"),
        ("tool", '[tool exec failed: exec: psql: error: connection to server at "db.internal" (10.0.3.4), port 5432 '
                 'failed: FATAL:  password authentication failed for user "billing"]'),
        ("person", "密码上周轮换过了，新密码是 [REDACTED:password]，有问题找运维张伟 [REDACTED:phone] 或者 [REDACTED:email]"),
        ("assistant", "我更新一下 .env 里的 DATABASE_URL。"),
        ("assistant", "修复了：password authentication failed 是因为密码轮换后 .env 里的 DATABASE_URL 还是旧密码；"
                      "更新 DATABASE_URL 并重启 billing-api 后 psql 连接成功，502 也消失了。"),
    ], tmp_path)
    assert "更新 DATABASE_URL 并重启 billing-api" in mem.text
    assert "REDACTED" not in mem.text


def test_a_preference_after_small_talk_naming_a_data_format_is_kept(tmp_path):
    said = ("nice, thanks. oh and I prefer the CSV exports with semicolons as separators instead of commas, "
            "our accountants open them in German Excel.")
    (mem,) = distill([("person", said)], tmp_path)
    assert mem.text.startswith('Preference (the user, verbatim): "oh and I prefer the CSV exports with semicolons')
    assert "CSV" in mem.metadata["entity_keywords"] and "nice, thanks" not in mem.text
    # the verb is not the application; small talk stays out
    assert distill([("person", "I always excel at forgetting my umbrella, lol.")], tmp_path) == []


TRACEBACK = ("Traceback (most recent call last):\n  File \"/app/billing/export.py\", line 88, in write_rows\n"
             "    out.write(line)\nUnicodeEncodeError: 'ascii' codec can't encode character '\\xe9' in position 14: "
             "ordinal not in range(128)")
NPM = "npm ERR! Missing script: \"test\"\n\nnpm ERR! To see a list of scripts, run:\nnpm ERR!   npm run\n"


def test_a_failed_tools_trace_names_the_exception_not_a_generic_first_line(tmp_path):
    from tests.test_attribution import read

    oc = read(tmp_path / "oc", {"id": "s1", "format": "openclaw", "turns": [
        ["user", "`python -m billing.export --month 2026-11` crashes in the container."],
        ["tool_error", "exec", TRACEBACK]]})
    assert [m["text"] for m in oc if m["role"] == "tool"] == [
        "[tool exec failed: exec: UnicodeEncodeError: 'ascii' codec can't encode character '\\xe9' in position 14: "
        "ordinal not in range(128)]"]
    cx = read(tmp_path / "cx", {"id": "s2", "format": "codex", "turns": [
        ["user", "can you run the tests quickly"],
        ["tool_error", "shell", "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n" + NPM]]})
    assert [m["text"] for m in cx if m["role"] == "tool"] == ['[tool exec failed: shell: npm ERR! Missing script: "test"]']


def test_a_traceback_cut_before_its_exception_and_a_chain_of_them():
    from distill.sources.toolfail import first_error_line

    assert first_error_line("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n") == \
        "Traceback (most recent call last):"
    chain = ("Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'month'\n\n"
             "During handling of the above exception, another exception occurred:\n\n"
             "Traceback (most recent call last):\n  File \"a.py\", line 5\nbilling.errors.ExportFailed: no month\n")
    assert first_error_line(chain) == "billing.errors.ExportFailed: no month"
    assert first_error_line("Error:\n  connection refused by db.internal:5432\n") == \
        "connection refused by db.internal:5432"
    assert first_error_line("build failed\n") == "build failed"


def keywords(mem) -> list[str]:
    return mem.text.rsplit("Keywords (zh): ", 1)[1].split("; ")


def test_keywords_are_whole_commands_and_code_never_the_text_between_two_code_spans(tmp_path):
    (rule,) = distill([("person", "/remember always run pnpm lint --fix before pushing; CI on the frontend repo "
                                  "fails on lint warnings")], tmp_path)
    assert "pnpm lint --fix" in keywords(rule) and "--fix" not in keywords(rule) and "pnpm" not in keywords(rule)
    (pitfall,) = distill([
        ("tool", "[tool exec failed: exec: git@github.com: Permission denied (publickey).]"),
        ("assistant", "The default key is not authorised for acme/infra; the deploy key is ~/.ssh/infra_deploy."),
        ("assistant", "Fix: cloning acme/infra needs the deploy key — `GIT_SSH_COMMAND='ssh -i ~/.ssh/infra_deploy -o "
                      "IdentitiesOnly=yes' git clone ...` works where the default key gets `Permission denied "
                      "(publickey)`. terraform/ is 412 KiB."),
    ], tmp_path)
    assert not any("works where" in k for k in keywords(pitfall))
    assert {"GIT_SSH_COMMAND", "git clone"} <= set(keywords(pitfall))


def test_a_sentence_with_a_word_starting_with_e_is_not_an_error(tmp_path):
    """The audit's T4 session (the traceback traced as the tails trace it now): "encoding"
    read as an errno name made the assistant's plan the pitfall's symptom."""
    mems = distill([
        ("person", "The billing export job is failing since yesterday, can you look? "
                   "`python -m billing.export --month 2026-11` crashes in the container."),
        ("assistant", "Reproducing it."),
        ("tool", "[tool exec failed: exec: UnicodeEncodeError: 'ascii' codec can't encode character '\\xe9' in "
                 "position 14: ordinal not in range(128)]"),
        ("assistant", "A customer name with an accent (Café Müller) hits an ASCII stdout. The container's locale is "
                      "POSIX. Let me look at the image before changing anything."),
        ("person", "ok. the docker build has been super slow too btw, no idea why"),
        ("assistant", "Rebuilding to see."),
        ("tool", '[tool exec failed: exec: #7 ERROR: failed to solve: failed to compute cache key: failed to '
                 'calculate checksum of ref: "/requirements.lock": not found]'),
        ("assistant", "That build error is separate: .dockerignore excludes `*.lock`, so requirements.lock never "
                      "reaches the build context and the cache is busted every time. I'll leave it for now and come "
                      "back to the export."),
        ("person", "sure, export first"),
        ("assistant", "Running the export test."),
        ("tool", "[tool exec failed: exec: FAILED tests/test_export.py::test_accented_names - UnicodeEncodeError: "
                 "'ascii' codec can't encode character '\\xe9']"),
        ("assistant", "Adding `ENV PYTHONIOENCODING=utf-8` and `LANG=C.UTF-8` to the Dockerfile and opening the CSV "
                      "with encoding='utf-8'."),
        ("assistant", "Fixed: the UnicodeEncodeError came from the POSIX locale in the container; setting `ENV "
                      "PYTHONIOENCODING=utf-8` and `LANG=C.UTF-8` in the Dockerfile solved it, and `python -m "
                      "billing.export --month 2026-11` now writes the file. tests/test_export.py passes."),
    ], tmp_path)
    (pitfall,) = [m for m in mems if m.text.startswith("Pitfall:")]
    assert pitfall.text.startswith("Pitfall: exec: ") and "UnicodeEncodeError" in pitfall.text.split(" Fix: ")[0]
    assert "Adding" not in pitfall.text and "requirements.lock" not in pitfall.text


def test_a_decision_reversed_later_in_the_session_is_not_kept_beside_its_reversal(tmp_path):
    mems = distill([
        ("person", "任务队列这块我们决定用 Redis + RQ，因为团队里大家都熟悉。"),
        ("assistant", "好的，我先把 RQ 的 worker 骨架搭起来。"),
        ("assistant", "RQ worker 骨架已经在 jobs/worker.py 里了。"),
        ("person", REVERSED),
        ("assistant", "明白，撤掉 rq 和 redis，改成基于 PostgreSQL SKIP LOCKED 的队列表 jobs_queue。"),
    ], tmp_path)
    assert [m.text.split("\n")[0] for m in mems if m.category == "decision"] == [
        'Decision (the user, verbatim): "改主意了：我们决定不用 Redis 了，改用 PostgreSQL 的 SELECT ... FOR UPDATE SKIP '
        'LOCKED 做队列，因为不想为了队列再多维护一个 Redis 服务。"']
    # two decisions about different things both stand
    both = distill([("person", "We decided to deploy with `make release` only."),
                    ("person", "We decided to keep Postgres 16; scratch that idea of moving to MySQL.")], tmp_path)
    assert len([m for m in both if m.category == "decision"]) == 2
