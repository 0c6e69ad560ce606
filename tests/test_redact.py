"""Secrets never survive redact(); ordinary text does, untouched."""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import pytest

from distill.text.redact import redact

_rng = random.Random(20261129)
ALNUM = string.ascii_letters + string.digits


def rnd(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64(n: int) -> str:
    return rnd(n, ALNUM + "+/")


JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIx" + rnd(40, ALNUM + "_-") + "." + rnd(43, ALNUM + "_-")
PEM_BODY = "\n".join(b64(64) for _ in range(6))
AWS_ID = "AKIA" + rnd(16, string.ascii_uppercase + string.digits)
AWS_SECRET = rnd(18) + "/" + rnd(10) + "+" + rnd(10)

# (text containing the secret, the secret itself, the kind expected in the marker)
CORPUS: list[tuple[str, str, str]] = [
    (f"use {(s := 'sk-' + rnd(48))} for the old API", s, "openai_key"),
    (f"OPENAI key: {(s := 'sk-proj-' + rnd(64, ALNUM + '_-'))}", s, "openai_key"),
    (f"service account {(s := 'sk-svcacct-' + rnd(60, ALNUM + '_-'))}", s, "openai_key"),
    (f"openrouter {(s := 'sk-or-v1-' + rnd(64, '0123456789abcdef'))}", s, "openai_key"),
    (f"export ANTHROPIC_API_KEY={(s := 'sk-ant-api03-' + rnd(93, ALNUM + '_-') + 'AA')}", s, "anthropic_key"),
    (f"gemini key {(s := 'AIza' + rnd(35, ALNUM + '_-'))} works", s, "google_key"),
    (f"oauth access {(s := 'ya29.' + rnd(120, ALNUM + '_-'))}", s, "google_key"),
    (f"git clone https://{(s := 'ghp_' + rnd(36))}@github.com/o/r", s, "github_token"),
    (f"fine-grained {(s := 'github_pat_' + rnd(22) + '_' + rnd(59))}", s, "github_token"),
    (f"oauth app {(s := 'gho_' + rnd(36))}", s, "github_token"),
    (f"gitlab {(s := 'glpat-' + rnd(20, ALNUM + '_-'))}", s, "gitlab_token"),
    (f"slack bot {(s := 'xoxb-' + rnd(12, string.digits) + '-' + rnd(13, string.digits) + '-' + rnd(24))}", s, "slack_token"),
    (f"slack user {(s := 'xoxp-' + rnd(12, string.digits) + '-' + rnd(12, string.digits) + '-' + rnd(32))}", s, "slack_token"),
    (f"webhook {(s := 'https://hooks.slack.com/services/T' + rnd(10) + '/B' + rnd(10) + '/' + rnd(24))}", s, "slack_webhook"),
    (f"aws id {AWS_ID} secret {AWS_SECRET}", AWS_ID, "aws_access_key"),
    (f"aws id {AWS_ID}\nsecret {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "secret_assignment"),
    (f"stripe {(s := 'sk_live_' + rnd(24))}", s, "stripe_key"),
    (f"stripe restricted {(s := 'rk_test_' + rnd(24))}", s, "stripe_key"),
    (f"stripe webhook {(s := 'whsec_' + rnd(32))}", s, "stripe_key"),
    (f"curl -H 'Authorization: Bearer {(s := rnd(40, ALNUM + '._-'))}' https://api.x", s, "bearer_token"),
    (f"Authorization: Basic {(s := b64(28) + '==')}", s, "bearer_token"),
    (f"session cookie {JWT}", JWT, "jwt"),
    (f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----", PEM_BODY.split()[2], "private_key"),
    (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----", PEM_BODY.split()[0], "private_key"),
    ('{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + (s := b64(64)) + '\\n-----END PRIVATE KEY-----\\n"}', s, "private_key"),
    (f"DATABASE_URL=postgres://app:{(s := rnd(20))}@db.internal:5432/prod", s, "url_password"),
    (f"redis://:{(s := rnd(24))}@cache:6379/0", s, "url_password"),
    (f"mongodb+srv://admin:{(s := rnd(16))}@cluster0.mongodb.net", s, "url_password"),
    (f"API_KEY={(s := rnd(32))}", s, "secret_assignment"),
    (f"PASSWORD: {(s := rnd(12))}", s, "secret_assignment"),
    (f'{{"token": "{(s := rnd(30))}"}}', s, "secret_assignment"),
    (f"client_secret='{(s := rnd(30))}'", s, "secret_assignment"),
    (f"db.password = {(s := rnd(14))}", s, "secret_assignment"),
    (f"mysql -u root --password={(s := rnd(14))} db", s, "secret_assignment"),
    (f'{{\\"api_key\\": \\"{(s := rnd(30))}\\"}}', s, "secret_assignment"),
    (f"huggingface {(s := 'hf_' + rnd(34))}", s, "huggingface_token"),
    (f"npm token {(s := 'npm_' + rnd(36))}", s, "npm_token"),
    (f"telegram bot {(s := rnd(10, string.digits) + ':AA' + rnd(33, ALNUM + '_-'))}", s, "telegram_bot_token"),
    (f"sendgrid {(s := 'SG.' + rnd(22, ALNUM + '_-') + '.' + rnd(43, ALNUM + '_-'))}", s, "sendgrid_key"),
    (f"groq {(s := 'gsk_' + rnd(52))}", s, "groq_key"),
    (f"jina {(s := 'jina_' + rnd(60))}", s, "jina_key"),
    (f"replicate {(s := 'r8_' + rnd(37))}", s, "replicate_token"),
    (f"age {(s := 'AGE-SECRET-KEY-1' + rnd(58, string.ascii_uppercase + string.digits))}", s, "age_secret_key"),
]


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("text,secret,kind", CORPUS, ids=[f"{i}-{c[2]}" for i, c in enumerate(CORPUS)])
def test_secret_does_not_survive(text: str, secret: str, kind: str):
    out, counts = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts[kind] >= 1


@pytest.mark.parametrize("text,secret,kind", CORPUS, ids=[f"{i}-{c[2]}" for i, c in enumerate(CORPUS)])
def test_redact_is_idempotent(text: str, secret: str, kind: str):
    once, _ = redact(text)
    twice, counts = redact(once)
    assert twice == once
    assert not counts


def test_every_secret_in_one_long_text():
    text = "\n\n".join(t for t, _, _ in CORPUS)
    out, _ = redact(text)
    for _, secret, _ in CORPUS:
        assert secret not in out


ORDINARY = [
    "commit 3f9a1c2e7b4d8f0a6c5e2b1d9f8a7c6e5d4b3a21 fixed the cursor",
    "git log --oneline: a1b2c3d refactor tail; 9f8e7d6 add lock",
    "session id 0b6f2a1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b was resumed",
    "the token budget is 200000 tokens per run; max_tokens=4096",
    "token_count: 1834, totalTokens: 99",
    "author: Jane Doe <jane@example.com>",
    "see /home/user/.openclaw/agents/main/sessions/abc.jsonl and /etc/hosts",
    "https://github.com/win4r/memory-lancedb-pro/blob/main/README.md",
    "Basic authentication is disabled; use a bearer token instead",
    "set API_KEY=${OPENAI_API_KEY} in the unit file",
    "password: <your password here>",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "pip install sk-learn? no: scikit-learn. ssh-keygen -t ed25519",
    "用 API key 之前先检查 token 预算",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_untouched(text: str):
    out, counts = redact(text)
    assert out == text
    assert not counts


def test_secret_cut_by_clipping_is_still_redacted():
    from distill.text.noise import clip

    key = "sk-proj-" + rnd(80, ALNUM)
    pem = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----"
    for secret_text, probe in ((key, key[:20]), (pem, PEM_BODY.split()[0][:20]), (pem, PEM_BODY.split()[-1][-20:])):
        for pad in range(0, 400, 37):
            text = "x " * pad + secret_text + " y" * 300
            clipped, was = clip(text, 300)
            out, _ = redact(clipped)
            assert was
            assert probe not in out, (pad, out)


def test_tail_of_a_key_block_with_escaped_newlines_is_redacted():
    lines = [b64(64) for _ in range(5)]
    text = "…[clipped 900 chars]…\n" + "\\n".join(lines) + "\\n-----END PRIVATE KEY-----\\n\"}"
    out, counts = redact(text)
    assert counts["private_key"] == 1
    for line in lines:
        assert line not in out


def test_unicode_that_changes_length_when_lowercased_does_not_shift_redaction():
    secret = rnd(20)
    text = "İİİİ " * 10 + f"password={secret} and more"
    out, _ = redact(text)
    assert secret not in out
    assert out.startswith("İİİİ " * 10) and out.endswith(" and more")


def test_no_secret_reaches_a_batch_file(tmp_path):
    """End to end: transcripts full of secrets, a real `distill run`, the batch file's bytes."""
    import json
    import subprocess
    import sys

    agents = tmp_path / "agents"
    sessions = agents / "main" / "sessions"
    sessions.mkdir(parents=True)
    lines = [{"type": "session", "version": 3, "id": "s-secrets", "timestamp": "2026-11-29T10:00:00.000Z"}]
    for i, (text, _, _) in enumerate(CORPUS):
        role = ("user", "assistant")[i % 2]
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append({"type": "message", "id": f"m{i}", "parentId": None, "timestamp": "2026-11-29T10:00:01.000Z",
                      "message": {"role": role, "content": content}})
        lines.append({"type": "message", "id": f"t{i}", "parentId": None, "timestamp": "2026-11-29T10:00:02.000Z",
                      "message": {"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                                  "content": [{"type": "text", "text": f"Error: {text}"}], "isError": True}})
    (sessions / "s-secrets.jsonl").write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    state = tmp_path / "state"
    out = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(state), "--agents-dir", str(agents),
                          "run", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    batch_file = json.loads(out.stdout)["batchFile"]
    raw = open(batch_file, encoding="utf-8").read()
    assert raw.count("[REDACTED:") >= len(CORPUS)
    for _, secret, _ in CORPUS:
        assert secret not in raw
        assert json.dumps(secret)[1:-1] not in raw  # nor in its JSON-escaped form


@pytest.mark.timeout(60)  # a guard against quadratic blow-ups, not a speed target
def test_hostile_text_is_redacted_without_stalling():
    for unit in ("a://", "x://u:", "password=", "password=$", "token: <", "-----BEGIN PRIVATE KEY-----",
                 "-----END PRIVATE KEY-----", "eyJ", "Bearer ", "bearer", "AKIA", "sk-", "a_b-c.", "=", ":",
                 "--password ", "--password $", "ghp_", ":AA", "%3Fkey%3D", "x://u:p@", "/etc/passwd:",
                 "Authorization: Token ", "API key: ", "--user a:", "密码改成了", "1 ", "+8"):
        text = unit * (200_000 // len(unit))
        out, _ = redact(text)
        assert isinstance(out, str)


def test_a_value_found_once_is_removed_where_it_recurs_and_from_the_keywords():
    """Issue 8: a seeded default password reached the store as a keyword. The phrase gives
    the value away once; its other copies (here and in the keywords) have no context."""
    from collections import Counter

    from distill.store.models import MemoryDraft
    from distill.store.scrub import scrub_draft

    pw = "Wq" + rnd(8) + "!7"
    draft = MemoryDraft(text=f"Rule: the seeded default password is {pw}; change {pw} after the first login. "
                             f"Keywords (zh): 默认密码; {pw}",
                        metadata={"keywords": ["默认密码", pw], "entity_keywords": [pw, "first login"]})
    counts: Counter = Counter()
    out = scrub_draft(draft, counts)
    assert pw not in out.text and pw not in str(out.metadata)
    assert out.metadata["keywords"][0] == "默认密码" and out.metadata["entity_keywords"][1] == "first login"
    assert counts["password"] == 5


CJK_RUN = "部署缓存重试超时依赖数据库索引向量预算"  # one 19-character "word": the text is not short


def test_secrets_in_chinese_prose_are_redacted():
    """Non-ASCII text with a long word is first asked whether it holds any rule's anchor at
    all (on its ASCII characters); every kind of the leak corpus must still be found there."""
    from tests.data.secrets_corpus import corpus, leaked

    missed = []
    for kind, secret, sentence in corpus(per_kind=1):
        text = f"{CJK_RUN}，\n{sentence}\n{CJK_RUN}。"
        if leaked(secret, redact(text)[0]):
            missed.append(kind)
    assert not missed


def test_text_without_an_anchor_is_one_no_rule_would_change():
    """The pre-test may say "maybe" wrongly, never "no" wrongly: on random Chinese text with
    near-miss ASCII fragments, every text it waves through is one the rules leave alone."""
    from collections import Counter

    from distill.text.redact import _holds_an_anchor, _run_rules

    rng = random.Random(7)
    # secrets that one anchor gives away, and near misses around them
    shapes = ["token:Wq7!x9", "token=Wq7!x9", "--token Wq7!x9", "mysql -pWq7!x9", "curl -u bob:Wq7!x9",
              "password is Wq7!x9", "PWD is Wq7!x9", "密码是Wq7!x9", "口令：Wq7!x9", " Bearer ab~cd~ef~jk~mn~pq12", "li@corp.cn",
              "+86 138 0013 8000", "Telegram Li id:123456789", "heroku 01234567-89ab-4cde-8f01-23456789abcd",
              "x%3Ftoken%3DWq7x9k", "手机号13800138000", "密码改成了Wq7!x9"]
    fragments = ["s k", "sk", "AKI", "SIA", "eyj", "gh", "xo", "pas", "pw", "be arer", "bas ic", "http", "//", "-", "@",
                 ".", "_", "/", "1234567", "9 9", "abcdefghijk", "aws", "hf", "AC", "SK", "蜜码", "令", "口", "İ", "K",
                 "ß", "telegra", "herok", "id", "token", "key", "a b", "\n", " "]
    waved = 0
    for _ in range(6000):
        picks = [rng.choice(shapes)] if rng.random() < 0.5 else []
        picks += [rng.choice(fragments) if rng.random() < 0.3 else rng.choice(CJK_RUN) for _ in range(rng.randint(1, 12))]
        rng.shuffle(picks)
        text = CJK_RUN + "".join(picks)
        ascii_part = text.encode("ascii", "ignore").decode()
        if _holds_an_anchor(text, ascii_part):
            continue
        waved += 1
        counts: Counter = Counter()
        assert _run_rules(text, False, frozenset(ascii_part), counts) == text and not counts, text
    assert waved > 500  # the property was exercised, not vacuous


def _no_rule_changes(text: str) -> bool:
    """Every rule run on ``text`` with no pre-test in front: each provider rule on its own
    (its pattern and checks), then the whole chain (assignments, personal data, phrases,
    detect-secrets)."""
    from collections import Counter

    from distill.text.redact import _RULES, _apply_rule, _only_short_words, _run_rules

    counts: Counter = Counter()
    if any(_apply_rule(rule, text, counts) != text for rule in _RULES) or counts:
        return False
    chars = frozenset(text.encode("ascii", "ignore").decode())
    return _run_rules(text, _only_short_words(text), chars, counts) == text and not counts


def _near_misses(rng: random.Random, n: int) -> list[str]:
    """Prose (ASCII, Chinese, mixed) with one or two secrets in their barest shapes (the least
    anchor each rule needs) or fragments of anchors spliced in."""
    from tests.data.secrets_corpus import corpus, ordinary

    whole = [s for _, _, s in corpus(per_kind=1)] + [t for t, _, _ in CORPUS] + ORDINARY + ordinary("tune")
    shapes = ["pwd is Wq7x9kLm", "PWD was Wq7x9kLm", "password is Wq7x9kLm", "the password Xk29fLq0abc expired",
              "PASSPHRASE is Wq7x9kLm", "Pass is Wq7x9kLm", "li@corp.cn", "call +86 138 0013 8000",
              "call 415 555 0134", "(415) 555 0134", "call +500 51234", "mysql -pWq7x9k", "curl -u bob:Wq7x9k",
              "密码是Wq7x9k", "口令是Wq7x9k", "密码 Wq7x9kLm12", "token:Wq7x9k", "api_key=Wq7x9k", "--token Wq7x9k",
              "Bearer abcdefgh12345678", "https://bob:Wq7x9k@host", "AKIA" + rnd(16, string.ascii_uppercase),
              "ghp_" + rnd(36), "hf_" + rnd(34), "ou_" + rnd(32, "0123456789abcdef"), JWT, "Ym9iOldxN3g5aw==", "Ym9iOldxN3g5a0xt",
              "口令是“部署缓存重试”", "密码是「部署缓存重试」",
              "Telegram Li id 123456789", "heroku 01234567-89ab-4cde-8f01-23456789abcd", "AC" + rnd(32, "0123456789abcdef"),
              "xoxb" + rnd(30), "PWD=Wq7x9k", "x%3Ftoken%3DWq7x9k", "%26key%3dWq7x9k", "API key: Wq7x9k",
              "密码改成了 Wq7x9k", "密码是：『Wq7x9k』", "phone=+14155550134", "手机号13800138000", "139 1234 5678",
              "0086 13612345678", "(+86) 137-1111-2222", "curl --user bob:Wq7x9k", "Authorization: Token Wq7x9k12",
              "password is: Wq7x9k", 'env["API_KEY"] = "Wq7x9k"', "\\napi_key=Wq7x9k", "https://u:p@ss@host"]
    fragments = ["s k", "sk", "sk-", "AKI", "SIA", "eyJ", "eyj", "gh", "xo", "pas", "pw", "be arer", "Basic", "http",
                 "//", "-", "@", ":", "=", ".", "_", "/", "+", "1234567", "9 9", "abcdefghijklmno", "abcdefghijklmnop",
                 "aws", "hf", "SK", "密", "口", "蜜码", "İ", "\u212a", "ß", "telegra", "herok", "token", "key", "\n",
                 "\t", "\u3000", "\u2028", "，", "。", "%3", "%3d", "%3F", "%26", "3D"]
    words = ("cursor inode flock batch commit pending offset lance vector scope agent memory the a to of and is "
             "for with on fix bug why how use keep drop run test file").split()
    out = []
    for _ in range(n):
        cjk = rng.random()
        picks = [rng.choice(CJK_RUN[:rng.randint(1, 6)]) if rng.random() < cjk else rng.choice(words)
                 for _ in range(rng.randint(2, 25))]
        for _ in range(rng.choice((0, 1, 1, 2))):
            x = rng.random()
            extra = rng.choice(whole) if x < 0.1 else rng.choice(shapes) if x < 0.6 else rng.choice(fragments)
            picks.insert(rng.randint(0, len(picks)), extra)
        out.append("".join(p + (" " if rng.random() < 0.7 else "") for p in picks))
    return out


def test_quick_pre_test_says_no_only_where_no_rule_would_change_anything():
    """``may_hold_secret`` may say "maybe" wrongly, never "no" wrongly: on the leak corpus,
    the ordinary lines and random near misses (ASCII, Chinese, mixed), every text it waves
    through is one that each rule, run without it, leaves alone."""
    from tests.data.secrets_corpus import corpus, ordinary

    from distill.text.redact import may_hold_secret

    rng = random.Random(12)
    texts = ([s for _, _, s in corpus()] + [t for t, _, _ in CORPUS] + ORDINARY + ordinary("tune")
             + ordinary("report") + _near_misses(rng, 8000))
    waved = [t for t in texts if not may_hold_secret(t)]
    for text in waved:
        assert _no_rule_changes(text), text
    assert not any(not may_hold_secret(s) for _, _, s in corpus())
    ascii_waved = sum(t.isascii() for t in waved)
    assert ascii_waved > 200 and len(waved) - ascii_waved > 200  # both quick paths were exercised


def test_quick_pre_test_waves_through_ordinary_prose():
    """The point of the pre-test: plain sentences in either language never reach the rules."""
    from distill.text.redact import may_hold_secret

    assert not may_hold_secret("Rename the cursor file, then rebuild the vector index before the next run")
    assert not may_hold_secret("部署缓存重试超时，依赖数据库索引向量预算。\n先检查批次。")
    assert may_hold_secret("the admin password is Wq7x9kLm")
    assert may_hold_secret("部署缓存 password 重试")


@pytest.mark.parametrize("text", ["PWD was Wq7x9kLm", "the Pwd is Wq7x9kLm", "PaSSword is Wq7x9kLm"])
def test_password_phrase_in_any_case_is_redacted_in_short_text(text: str):
    """The phrase rules read "pwd"/"pass" in any case; so must the test that lets short text
    skip them (it once asked only for "pwd", "pass", "Pass", "PASS": "PWD was …" leaked)."""
    out, counts = redact(text)
    assert "Wq7x9kLm" not in out and counts["password"] == 1


# The values an audit of real `distill run` batch files found (one id per cause; the leak
# corpus has a kind for each too): (text, the value that must not get out)
AUDIT_LEAKS = {
    "1-phone-glued-to-chinese": ("以后客服回访统一打我的手机号13800138000，不要再打座机。", "13800138000"),
    "1-phone-plus-glued-to-chinese": ("手机号+8613912345678，夜间也可以打", "13912345678"),
    "1-phone-after-equals": ("phone=+14155550134", "4155550134"),
    "1-phone-cn-spaced": ("我的手机 139 1234 5678 随时打", "1234 5678"),
    "1-phone-cn-dashed": ("手机 186-0000-1234", "0000-1234"),
    "1-phone-cn-bracketed-code": ("电话 (+86) 137-1111-2222", "1111-2222"),
    "1-phone-cn-00-prefix": ("电话 0086 13612345678", "13612345678"),
    "2-zh-password-fullwidth-colon": ("密码是：Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-colon": ("密码是: Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-changed": ("密码改成了 Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-already-changed": ("路由器密码已改成 Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-set-to": ("root 密码设置为 Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-set-into": ("密码设置成 Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "2-zh-password-corner-quotes": ("密码是『Qm7vT2xR9pL4』", "Qm7vT2xR9pL4"),
    "2-zh-password-title-quotes": ("密码是《Qm7vT2xR9pL4》", "Qm7vT2xR9pL4"),
    "3-curl-long-user-flag": ("curl --user admin:Qm7vT2xR9pL4 https://ci.acme.io/api", "Qm7vT2xR9pL4"),
    "5-odbc-PWD": ("UID=svc_rpt;PWD=Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "5-ado-Pwd": ("Data Source=db01;Initial Catalog=app;User Id=sa;Pwd=Qm7vT2xR9pL4;", "Qm7vT2xR9pL4"),
    "5-odbc-driver-Pwd": ("Driver={PostgreSQL Unicode};Server=db01;Uid=app;Pwd=Qm7vT2xR9pL4;", "Qm7vT2xR9pL4"),
    "6-password-is-colon": ("the staging admin password is: Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "7-environ-subscript": ('os.environ["OPENAI_API_KEY"] = "9f8e7d6c5b4a3f2e1d0c"', "9f8e7d6c5b4a3f2e1d0c"),
    "8-auth-scheme-token": ("Authorization: Token 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "8-auth-scheme-short-bearer": ("Authorization: Bearer 9f8e7d6c5b", "9f8e7d6c5b"),
    "8-auth-scheme-apikey": ("authorization: ApiKey 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "9-api-key-spaced": ("the API key: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "9-access-key-spaced": ("access key: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "9-secret-key-spaced": ("secret key: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "9-private-key-spaced": ("the private key: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "10-password-for-six-words": ("the password for the admin account on db1 is Qm7vT2xR9pL4", "Qm7vT2xR9pL4"),
    "11-escaped-newline-printf": ("printf 'DB_HOST=db01\\napi_key=9f8e7d6c5b4a3f2e1d0c'", "9f8e7d6c5b4a3f2e1d0c"),
    "11-escaped-newline-string": ('"host=db01\\nsecret_key=9f8e7d6c5b4a3f2e1d0c\\nport=5432"', "9f8e7d6c5b4a3f2e1d0c"),
    "12-url-password-with-at": ("postgres://admin:p@ssQm7vT2xR9pL4!@db.internal:5432/app", "Qm7vT2xR9pL4"),
    "13-url-encoded-query-token": ("redirect_uri=https%3A%2F%2Fapp.corp.io%2Fcb%3Faccess_token%3D9f8e7d6c5b4a3f2e1d0c",
                                   "9f8e7d6c5b4a3f2e1d0c"),
}


@pytest.mark.parametrize("text,secret", AUDIT_LEAKS.values(), ids=AUDIT_LEAKS.keys())
def test_audit_leak_is_redacted(text: str, secret: str):
    from distill.text.redact import may_hold_secret

    out, counts = redact(text)
    assert secret not in out, out
    assert counts and may_hold_secret(text)
    assert redact(out) == (out, Counter())


# What the rules used to change and must leave alone (the over-redactions of the same audit)
AUDIT_UNTOUCHED = {
    "a-setting-names-after-password": "set password_min_length=12 and PASSWORD_RESET_TIMEOUT=3600",
    "a-migration-name": "run password_v2_migration before the deploy",
    "a-expiry-setting": "PASSWORD_EXPIRY_DAYS=90",
    "b-path-ending-in-passwd": "cat: /etc/passwd: Permission denied",
    "b-home-path-ending-in-token": "open ~/.config/gh/token: no such file",
    "c-query-after-a-token": "https://app.acme.io/reset?token=[REDACTED:url_token]&user=5&lang=zh",
    "d-prose-after-secret": "the team secret: always rebase before merging",
    "5-shell-pwd": "export PWD=/home/u/work; echo PWD: ~/src",
    "5-dsn-next-key": "DSN: Driver={PostgreSQL Unicode};Server=db01;Port=5432",
    "9-yaml-key": "key: value",
    "9-primary-key": "primary key: id",
    "e-a-cli-option-as-value": "export NODE_OPTIONS=--max-old-space-size=4096 before the web build",
}


@pytest.mark.parametrize("text", AUDIT_UNTOUCHED.values(), ids=AUDIT_UNTOUCHED.keys())
def test_audit_over_redaction_is_left_alone(text: str):
    assert redact(text) == (text, Counter())


def test_query_parameters_after_a_token_survive():
    """Item c: the assignment rule took "abc123def456&user=5&lang=zh" for the token's value."""
    out, counts = redact("https://app.acme.io/reset?token=abc123def456&user=5&lang=zh")
    assert out == "https://app.acme.io/reset?token=[REDACTED:url_token]&user=5&lang=zh"
    assert counts == Counter({"url_token": 1})
    out, _ = redact("https://app.acme.io/cb?cookie=Qm7vT2xR9pL4&lang=zh")  # a name the URL rule does not know
    assert "Qm7vT2xR9pL4" not in out and out.endswith("&lang=zh")


def test_auth_scheme_without_a_credential_is_left_alone():
    for text in ("Authorization: Bearer token", "Authorization: Basic realm", "Authorization: Token header"):
        assert redact(text) == (text, Counter())


_LIMITS_TEXT = {
    "password-phrase": "the admin password is\nQm7vT2xR9pL4",
    "compose-env": "    environment:\n      POSTGRES_PASSWORD: Qm7vT2xR9pL4",
    "auth-header": "Authorization: Bearer Qm7vT2xR9pL4xR9pL4Qm7vT2",
}


@pytest.mark.parametrize("name,secret_text", _LIMITS_TEXT.items(), ids=_LIMITS_TEXT.keys())
def test_clipping_cannot_cut_a_name_from_its_value(name: str, secret_text: str):
    """Item 4: a turn longer than max_turn_chars is redacted before it is clipped; at every
    cut position the value is gone and no marker is cut in half."""
    from distill.model import TurnLimits
    from distill.sources.base import finish_text

    limits = TurnLimits()
    limit = limits.max_turn_chars
    value = secret_text.split()[-1]
    for tail in range(limit // 3 - 120, limit // 3 + 60, 3):  # the clip's tail starts at or near the value
        text = "x " * limit + secret_text + " y" * (tail // 2)
        counters: Counter = Counter()
        out = finish_text("user", text, limits, counters, trace=False)
        assert counters["clipped"] == 1
        assert value not in out and value[:8] not in out, (tail, out[limit // 2 : limit // 2 + 200])
        assert all(m.endswith("]") for m in re.findall(r"\[REDACTED:[a-z_]*\]?", out))  # no marker cut


def test_long_tool_error_is_redacted_before_the_trace_is_clipped():
    """Item 4 for failed tools: the trace clips its error line, which could cut a name from its value."""
    from distill.sources.toolfail import trace

    limit = 300
    for pad in range(150, 330, 5):
        output = "Error: " + "x " * (pad // 2) + "the admin password is\tQm7vT2xR9pL4 " + "y " * 200
        counters: Counter = Counter()
        out = trace("bash", output, limit, counters)
        assert "Qm7vT2xR9pL4" not in redact(out)[0], (pad, out)
    command = "bash " + "cd /srv/app && " * 4 + "curl --user admin:Qm7vT2xR9pL4 https://ci.acme.io/api"
    counters = Counter()
    out = trace(command, "Error: 401", limit, counters)
    assert "Qm7vT2" not in out and counters["redacted:password"] == 1


def test_pwd_is_a_password_name_unless_its_value_is_a_path():
    for text in ("PWD=/home/u", "PWD=~/src", "PWD='/srv/app dir'", "PWD=$HOME", "PWD=C:\\Users\\u", "PWD=./build"):
        assert redact(text) == (text, Counter()), text
    assert redact("mysql_pwd: Qm7vT2xR9pL4")[0] == "mysql_pwd: [REDACTED:secret_assignment]"
