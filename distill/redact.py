"""Secret redaction: the last thing every turn goes through before it is written anywhere.

Secrets are replaced by ``[REDACTED:<kind>]`` so a reader still sees that a key was there
(which is often the point of a memory: "the key lived in .env") without the key itself.
Applying ``redact`` twice changes nothing.

Speed: Python's ``re`` scans fast only for patterns that start with a literal. So every rule
is found from a literal anchor (``str.find`` / ``in``, gigabytes per second) and a regular
expression only runs *at* an anchor (``match``) or, for provider keys, is a pattern that
starts with its literal prefix. Text with no anchor costs a few substring scans.

What is matched, and why this shape (kinds in brackets):
- provider keys with a recognisable prefix: OpenAI ``sk-…`` (openai_key), Anthropic
  ``sk-ant-…`` (anthropic_key), Google ``AIza…``/``ya29.``/``GOCSPX-`` (google_key),
  GitHub ``gh[pousr]_``/``github_pat_`` (github_token), GitLab ``glpat-``, Slack ``xox?-``
  and webhooks, AWS ``AKIA…`` ids and the 40-char secret next to one, Stripe, HuggingFace
  ``hf_``, npm, Telegram and Discord bot tokens, SendGrid, Groq, xAI, Perplexity,
  Replicate, Jina, DigitalOcean, Shopify, Age keys, Vault;
- JWTs, also cut by clipping (jwt); PEM private key blocks, also cut in half (private_key);
- ``Bearer``/``Basic`` credentials (bearer_token), passwords in URLs (url_password);
- ``NAME=value`` / ``NAME: value`` / ``"name": "value"`` / ``--name value`` where NAME ends
  in a secret-looking word (secret_assignment). Names must *end* in the word, so
  ``max_tokens=4000``, ``token_budget: 10`` or ``author: Jo`` are left alone.

Not matched on purpose: bare hex strings and UUIDs (git hashes, ids) — too common to touch.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

_R = "[REDACTED:"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _mark(kind: str) -> str:
    return f"{_R}{kind}]"


class _Rule:
    """A provider token: literal hints gate a literal-prefixed pattern; ``bounded`` means the
    token must not continue a longer word (checked on the character before it)."""

    __slots__ = ("kind", "hints", "pattern", "bounded")

    def __init__(self, kind: str, hints: tuple[str, ...], pattern: str, bounded: bool = False):
        self.kind, self.hints, self.pattern, self.bounded = kind, hints, re.compile(pattern), bounded


_END_KEY = r"-----END[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
_RULES: list[_Rule] = [
    _Rule("private_key", ("PRIVATE KEY",),
          r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?" + _END_KEY + r"|[\s\S]*?(?=…\[clipped)|[\s\S]*\Z)"),
    _Rule("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{16,}"),
    _Rule("openai_key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-|or-v1-|None-)?[A-Za-z0-9_-]{20,}", bounded=True),
    _Rule("google_key", ("AIza",), r"AIza[0-9A-Za-z_-]{30,}"),
    _Rule("google_key", ("ya29.",), r"ya29\.[0-9A-Za-z_-]{20,}"),
    _Rule("google_key", ("GOCSPX-",), r"GOCSPX-[0-9A-Za-z_-]{20,}"),
    _Rule("github_token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,}"),
    _Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,}"),
    _Rule("gitlab_token", ("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),
    _Rule("slack_token", ("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    _Rule("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    _Rule("aws_access_key", ("AKIA", "ASIA", "ABIA", "ACCA"), r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])",
          bounded=True),
    _Rule("stripe_key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_"),
          r"[srp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    _Rule("stripe_key", ("whsec_",), r"whsec_[A-Za-z0-9]{20,}"),
    _Rule("huggingface_token", ("hf_",), r"hf_[A-Za-z0-9]{30,}", bounded=True),
    _Rule("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36}", bounded=True),
    _Rule("telegram_bot_token", (":AA",), r"\d{8,10}:AA[A-Za-z0-9_-]{33}", bounded=True),
    _Rule("discord_token", ("discord", "Discord", "DISCORD"),
          r"[MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}", bounded=True),
    _Rule("sendgrid_key", ("SG.",), r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _Rule("groq_key", ("gsk_",), r"gsk_[A-Za-z0-9]{20,}"),
    _Rule("xai_key", ("xai-",), r"xai-[A-Za-z0-9]{20,}"),
    _Rule("perplexity_key", ("pplx-",), r"pplx-[A-Za-z0-9]{20,}"),
    _Rule("replicate_token", ("r8_",), r"r8_[A-Za-z0-9]{20,}", bounded=True),
    _Rule("jina_key", ("jina_",), r"jina_[A-Za-z0-9_-]{20,}"),
    _Rule("digitalocean_token", ("dop_v1_", "doo_v1_"), r"do[op]_v1_[a-f0-9]{64}"),
    _Rule("shopify_token", ("shpat_", "shpss_", "shpca_"), r"shp(?:at|ss|ca)_[a-fA-F0-9]{32}"),
    _Rule("age_secret_key", ("AGE-SECRET-KEY-",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    _Rule("vault_token", ("hvs.",), r"hvs\.[A-Za-z0-9_-]{24,}", bounded=True),
    # a whole JWT, or a long first segment left by clipping
    _Rule("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}", bounded=True),
]

# (hint, the characters it needs, rule index): a set test skips most substring scans
_HINTS = [(h, frozenset(h), i) for i, rule in enumerate(_RULES) for h in rule.hints]

_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_END_KEY_RE = re.compile(_END_KEY)
_AWS_ID_RE = re.compile(r"\[REDACTED:aws_access_key\]|(?:AKIA|ASIA)[0-9A-Z]{16}")
_AWS_SECRET = re.compile(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# at an anchor: "bearer"/"basic" + spaces + credential
_BEARER_AT = re.compile(r"(?i)(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{16,})")
# at an anchor: the part after "://" — user:password@
_URL_AT = re.compile(r"([^\s:/@\"'<>]{0,128}):([^\s@/\"'<>]{1,256})@")
# a name that ends in a secret word (checked on the name token only)
_SECRET_NAME = re.compile(
    r"(?i)[\"']?(?:[A-Za-z0-9]+[_.-])*(?:"
    r"api[_-]?keys?|apikey|secret(?:[_-]?key)?|client[_-]?secret|"
    r"(?:access|refresh|auth|bearer|id|session|api|bot|app|oauth|personal[_-]?access)?[_-]?token|"
    r"passw(?:or)?d|passphrase|private[_-]?key|access[_-]?key(?:[_-]?id)?|"
    r"credentials?|connection[_-]?string|dsn|cookie|signing[_-]?key|encryption[_-]?key|authorization"
    r")"
)
_NAME_ENDS = ("key", "keys", "keyid", "key_id", "key-id", "secret", "token", "password", "passwd", "passphrase",
              "credential", "credentials", "string", "dsn", "cookie", "authorization")
# at the separator after a secret name: separator, value
_SEP_VALUE = re.compile(
    r"(?P<sep>(?::=|=>|:|=)[ \t]*)"
    r"(?P<value>\\\"[^\"\\\n]{4,}\\\"|\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}{)(\]\\]{4,})"
)
# at "--": a secret-looking flag and its value
_CLI_FLAG_AT = re.compile(
    r"(?i)--(?:api[_-]?key|token|password|passwd|secret|auth[_-]?token|access[_-]?token|client[_-]?secret)"
    r"(?P<sep>=|[ \t]+)(?P<value>[^\s\"'-][^\s\"']{3,}|\"[^\"\n]{4,}\"|'[^'\n]{4,}')"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|null|none|true|false|undefined|"
    r"os\.environ.*|process\.env.*|env\(.*|your[_-].*|changeme|example|redacted|bearer|basic|token|\.\.\.|…)$"
)

# only words shorter than 16 characters (the words of str.split(): \s is the same whitespace)
_SHORT_WORDS = re.compile(r"\s*+(?:\S{1,15}+\s++)*+\S{0,15}+")
# ASCII text with its whitespace (as str.isspace() has it) made b" " and all else b"x"
_WORD_BYTES = bytes(32 if chr(i).isspace() else 120 for i in range(128)) + b"x" * 128


def _only_short_words(text: str) -> bool:
    """No word of 16 characters or more: the test every turn goes through, so it avoids
    splitting the text into words (a few times slower). ASCII text is tested as bytes."""
    if text.isascii():
        return b"x" * 16 not in text.encode("ascii").translate(_WORD_BYTES)
    return _SHORT_WORDS.fullmatch(text) is not None

Span = tuple[int, int, str | None]  # replace text[start:end] with this; None: leave it, skip past it


def redact(text: str) -> tuple[str, Counter]:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``; count them by kind."""
    counts: Counter = Counter()
    if not text:
        return text, counts
    has_sep = ":" in text or "=" in text or "--" in text
    if not has_sep and _only_short_words(text):
        return text, counts  # every secret shape needs a separator or a 16-char run
    chars = frozenset(text)
    hit = {i for h, need, i in _HINTS if need <= chars and h in text}
    for i in sorted(hit):
        text = _apply_rule(_RULES[i], text, counts)
    if "PRIVATE KEY" in text:
        text = _redact_key_tails(text, counts)
    if "AKIA" in text or "ASIA" in text or "aws_access_key]" in text:
        text = _redact_aws_secret(text, counts)
    lower = _ascii_lower(text)
    spans: list[Span] = []
    for anchor in ("bearer", "basic"):
        spans += _at_anchors(lower, anchor, lambda p: _bearer(text, p, counts))
    spans += _at_anchors(lower, "://", lambda p: _url_password(text, p, counts))
    if spans:
        text = _splice(text, spans)
        lower = _ascii_lower(text)
    if "=" not in text and ":" not in text and "--" not in text:
        return text, counts  # no NAME=value, NAME: value or --flag value possible
    spans = []
    for sep in (":", "="):
        spans += _at_anchors(text, sep, lambda p: _assignment(text, lower, p, counts))
    spans += _at_anchors(text, "--", lambda p: _cli_flag(text, p, counts))
    return _splice(text, spans), counts


def _ascii_lower(text: str) -> str:
    """Lowercase with the same length as ``text`` (``str.lower`` may grow, e.g. "İ"), so
    positions found in it are positions in ``text``."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _apply_rule(rule: _Rule, text: str, counts: Counter) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.start()
        if rule.bounded and s > 0 and text[s - 1] in _WORD:
            return m[0]  # the tail of a longer word, not a token
        if rule.kind == "jwt" and not _is_jwt(m[0]):
            return m[0]
        counts[rule.kind] += 1
        return _mark(rule.kind)

    return rule.pattern.sub(one, text)


def _is_jwt(s: str) -> bool:
    parts = s.split(".")
    if len(parts) == 3 and parts[1].startswith("eyJ") and all(len(p) >= 8 for p in parts):
        return True
    return len(parts[0]) >= 33  # a long base64 JSON object: a token cut by clipping


def _at_anchors(haystack: str, anchor: str, at: Callable[[int], Span | None]) -> list[Span]:
    """Spans found at each anchor; the search resumes after a span, so a long value is
    read once however many anchors it holds (linear, not quadratic, on hostile text)."""
    out, i = [], haystack.find(anchor)
    while i >= 0:
        span = at(i)
        nxt = i + len(anchor)
        if span is not None:
            if span[2] is not None:
                out.append(span)
            nxt = max(nxt, span[1])
        i = haystack.find(anchor, nxt)
    return out


def _splice(text: str, spans: list[Span]) -> str:
    if not spans:
        return text
    out, pos = [], 0
    for s, e, rep in sorted(spans):
        if s < pos:
            continue  # overlapping matches: the first wins
        out.append(text[pos:s])
        out.append(rep)
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _bearer(text: str, p: int, counts: Counter) -> Span | None:
    if p > 0 and text[p - 1].isalnum():
        return None
    m = _BEARER_AT.match(text, p)
    if m is None or m[3].startswith(_R) or not (any(c.isdigit() for c in m[3]) or len(m[3]) >= 30):
        return None  # "Basic authenticationflows" survives; credentials have digits or are long
    counts["bearer_token"] += 1
    return m.start(3), m.end(3), _mark("bearer_token")


def _url_password(text: str, p: int, counts: Counter) -> Span | None:
    """``p``: where "://" is. The scheme must be a word right before it."""
    if p == 0 or not text[p - 1].isalpha():
        return None
    m = _URL_AT.match(text, p + 3)
    if m is None or _R in m[0]:
        return None
    counts["url_password"] += 1
    return m.start(2), m.end(2), _mark("url_password")


def _assignment(text: str, lower: str, p: int, counts: Counter) -> Span | None:
    """``p``: where a ":" or "=" is. The name before it must end in a secret word, and a
    value must follow."""
    if text[p] == "=" and p > 0 and text[p - 1] == ":":
        return None  # ":=" is handled at its ":"
    if text.startswith("//", p + 1):
        return None  # a URL
    k = p
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    if k > 0 and text[k - 1] in "\"'":
        k -= 1
        if k > 0 and text[k - 1] == "\\":
            k -= 1
    name_end, s = k, k
    while s > 0 and text[s - 1] in _NAME_CHARS and name_end - s < 64:
        s -= 1
    if s == name_end or (s > 0 and text[s - 1] in _NAME_CHARS):
        return None  # no name, or an unusually long one
    if not lower.endswith(_NAME_ENDS, s, name_end) or not _SECRET_NAME.fullmatch(text, s, name_end):
        return None
    return _assigned_value(_SEP_VALUE.match(text, p), counts)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _cli_flag(text: str, p: int, counts: Counter) -> Span | None:
    return _assigned_value(_CLI_FLAG_AT.match(text, p), counts)


def _assigned_value(m: re.Match | None, counts: Counter) -> Span | None:
    """The value of ``NAME=value`` or ``--flag value``: masked unless it is plainly not a secret."""
    if m is None:
        return None
    if _is_harmless_value(m["value"]):
        return m.start("value"), m.end("value"), None
    counts["secret_assignment"] += 1
    return m.start("value"), m.end("value"), _quoted(m["value"], _mark("secret_assignment"))


def _quoted(value: str, mark: str) -> str:
    if value.startswith('\\"'):
        return f'\\"{mark}\\"'
    if value[0] in "\"'":
        return f"{value[0]}{mark}{value[0]}"
    return mark


def _is_harmless_value(value: str) -> bool:
    """Leave alone what cannot be a secret: placeholders, small numbers, code, redactions."""
    raw = value.strip("\\\"'").strip()
    if not raw or _R in raw:
        return True
    if raw.isdigit() and len(raw) < 6:
        return True
    if "(" in raw or raw.startswith(("{", "[", "$", "<")):
        return True
    return bool(_PLACEHOLDER.match(raw))


def _redact_key_tails(text: str, counts: Counter) -> str:
    """The tail half of a key block whose head was clipped away: base64 lines, then END."""
    spans: list[Span] = []
    for m in _END_KEY_RE.finditer(text):
        i = m.start()
        while True:
            j = i
            while j > 0 and (text[j - 1].isspace() or text[j - 2 : j] == "\\n"):
                j -= 2 if text[j - 2 : j] == "\\n" else 1
            k = j
            while k > 0 and text[k - 1] in _B64 and text[k - 2 : k] != "\\n":
                k -= 1
            if j - k < 16:
                break
            i = k
        if i < m.start():
            spans.append((i, m.end(), _mark("private_key")))
            counts["private_key"] += 1
    return _splice(text, spans)


def _redact_aws_secret(text: str, counts: Counter) -> str:
    """A 40-char mixed-case key within a few lines after an AWS key id is its secret."""
    spans: list[Span] = []
    for m in _AWS_ID_RE.finditer(text):
        for s in _AWS_SECRET.finditer(text, m.end(), min(len(text), m.end() + 300)):
            spans.append((s.start(), s.end(), _mark("aws_secret_key")))
            counts["aws_secret_key"] += 1
    return _splice(text, spans)
