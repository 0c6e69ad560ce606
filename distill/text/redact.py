"""Secret and personal-data redaction: the last thing every turn goes through before it is
written anywhere, and again before any LLM call and store write. Three layers, in order:
our provider-token and assignment rules (below), personal data and phrase-shaped secrets
(e-mail, phone numbers checked by ``phonenumbers``, "password is …" / "密码是…", ``mysql -p``,
``curl -u``, URL tokens, base64 ``user:password``, chat ids), then Yelp's maintained
``detect-secrets`` plugins for what ours miss. docs/formats.md lists every kind.

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
  ``max_tokens=4000``, ``token_budget: 10`` or ``author: Jo`` are left alone; a bare ``PWD``
  counts unless its value is a path (the shell's), ``env["API_KEY"] = …`` and ``API key: …``
  (two words) count, a name ending a path (``/etc/passwd:``) or a URL query parameter (the
  URL-token rule's, cut at ``&``) does not. After an auth scheme (``Authorization: Token X``)
  the value is the credential; a prose word or the next key (``DSN: Driver={…}``) is none.

Not matched on purpose: bare hex strings and UUIDs (git hashes, ids) — too common to touch.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from . import LazyPattern

_R = "[REDACTED:"
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _mark(kind: str) -> str:
    return f"{_R}{kind}]"


class _Rule:
    """A provider token: literal hints gate a literal-prefixed pattern; ``bounded`` means the
    token must not continue a longer word (checked on the character before it)."""

    __slots__ = ("kind", "hints", "pattern", "bounded")

    def __init__(self, kind: str, hints: tuple[str, ...], pattern: str, bounded: bool = False):
        self.kind, self.hints, self.pattern, self.bounded = kind, hints, LazyPattern(pattern), bounded


_END_KEY = r"-----END[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
_RULES: list[_Rule] = [
    _Rule("private_key", ("PRIVATE KEY",),
          r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?" + _END_KEY + r"|[\s\S]*?(?=…\[clipped)|[\s\S]*\Z)"),
    _Rule("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{16,}"),
    _Rule("openai_key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-|or-v1-|None-)?[A-Za-z0-9_-]{16,}", bounded=True),
    _Rule("google_key", ("AIza",), r"AIza[0-9A-Za-z_-]{30,}"),
    _Rule("google_key", ("ya29.",), r"ya29\.[0-9A-Za-z_-]{20,}"),
    _Rule("google_key", ("GOCSPX-",), r"GOCSPX-[0-9A-Za-z_-]{20,}"),
    _Rule("github_token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,}"),
    _Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,}"),
    _Rule("gitlab_token", ("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),
    _Rule("slack_token", ("xox",), r"xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{20,}"),
    _Rule("slack_token", ("xapp-",), r"xapp-\d-[A-Z0-9]{6,}-\d{6,}-[A-Za-z0-9]{20,}"),
    _Rule("slack_webhook", ("hooks.slack.com",),
          r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"),
    _Rule("aws_access_key", ("AKIA", "ASIA", "ABIA", "ACCA"), r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])",
          bounded=True),
    _Rule("stripe_key", ("k_live_", "k_test_", "k_prod_"), r"[srp]k_(?:live|test|prod)_[A-Za-z0-9]{16,}"),
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
    _Rule("vault_token", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[A-Za-z0-9_-]{24,}", bounded=True),
    _Rule("pypi_token", ("pypi-",), r"pypi-[A-Za-z0-9_-]{50,}", bounded=True),
    _Rule("heroku_key", ("HRKU-",), r"HRKU-[A-Za-z0-9_-]{20,}", bounded=True),
    # registry and deploy tokens with a fixed prefix (gitleaks' rules for each)
    _Rule("clojars_token", ("CLOJARS_", "clojars_"), r"(?i:CLOJARS)_[A-Za-z0-9]{60}(?![A-Za-z0-9])", bounded=True),
    _Rule("rubygems_token", ("rubygems_",), r"rubygems_[a-f0-9]{48}(?![a-f0-9])", bounded=True),
    _Rule("nuget_key", ("oy2",), r"oy2[a-z0-9]{43}(?![a-z0-9])", bounded=True),
    _Rule("docker_token", ("dckr_pat_", "dckr_oat_"), r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}"),
    _Rule("gitlab_token", ("gldt-", "glrt-", "glft-", "glsoat-", "glffct-", "glimt-", "glcbt-", "glptt-", "glagent-",
                           "gloas-", "GR1348941"),
          r"(?:gl(?:dt|rt|ft|soat|ffct)-[0-9A-Za-z_-]{20,}|glimt-[0-9A-Za-z_-]{25,}|glcbt-[0-9A-Za-z]{1,5}_[0-9A-Za-z_-]{20,}"
          r"|glptt-[0-9a-f]{40}|glagent-[0-9A-Za-z_-]{50,}|gloas-[0-9A-Za-z_-]{64}|GR1348941[0-9A-Za-z_-]{20,})"),
    _Rule("artifactory_token", ("AKCp",), r"AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])", bounded=True),
    _Rule("doppler_token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct."), r"dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}"),
    _Rule("pulumi_token", ("pul-",), r"pul-[a-f0-9]{40}(?![a-f0-9])", bounded=True),
    _Rule("terraform_token", (".atlasv1.",), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}"),
    _Rule("flyio_token", ("fo1_", "FlyV1 "), r"fo1_[A-Za-z0-9_-]{43}|FlyV1 fm\d+_[A-Za-z0-9+/=,_-]{100,}"),
    _Rule("grafana_token", ("glc_", "glsa_"), r"glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
          bounded=True),
    _Rule("sentry_token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_-]{40,}"),
    _Rule("databricks_token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?(?![a-f0-9])", bounded=True),
    _Rule("linear_key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    _Rule("postman_key", ("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _Rule("newrelic_key", ("NRAK-", "NRJS-"), r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}"),
    _Rule("planetscale_token", ("pscale_",), r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}"),
    _Rule("prefect_key", ("pnu_",), r"pnu_[A-Za-z0-9]{36}", bounded=True),
    _Rule("readme_key", ("rdme_",), r"rdme_[a-z0-9]{70}"),
    _Rule("atlassian_token", ("ATATT3",), r"ATATT3[A-Za-z0-9_=-]{186}"),
    _Rule("dynatrace_token", ("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _Rule("shippo_token", ("shippo_",), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    # Feishu / Lark open ids of users (ou_), groups (oc_) and union ids (on_)
    _Rule("chat_id", ("ou_", "oc_", "on_"), r"o[ucn]_[0-9a-f]{32}(?![0-9A-Za-z])", bounded=True),
    # a whole JWT, or a long first segment left by clipping
    _Rule("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}", bounded=True),
]

# (hint, the characters it needs, rule index): a set test skips most substring scans
_HINTS = [(h, frozenset(h), i) for i, rule in enumerate(_RULES) for h in rule.hints]

_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_END_KEY_RE = LazyPattern(_END_KEY)
_AWS_ID_RE = LazyPattern(r"\[REDACTED:aws_access_key\]|(?:AKIA|ASIA)[0-9A-Z]{16}")
_AWS_SECRET = LazyPattern(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# at an anchor: "bearer"/"basic" + spaces + credential
_BEARER_AT = LazyPattern(r"(?i)(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{16,})")
# at an anchor: the part after "://" — user:password@
# (the password runs to the authority's last "@": "admin:p@ss!@db" has the password "p@ss!")
_URL_AT = LazyPattern(r"([^\s:/@\"'<>]{0,128}):([^\s/\"'<>]{1,256})@")
# a name that ends in a secret word (checked on the name token only)
_SECRET_NAME = LazyPattern(
    r"(?i)[\"']?(?:[A-Za-z0-9]+[_.-])*(?:"
    r"api[_-]?keys?|apikey|secret(?:[_-]?key)?|client[_-]?secret|"
    r"(?:access|refresh|auth|bearer|id|session|api|bot|app|oauth|personal[_-]?access)?[_-]?token|"
    r"passw(?:or)?d|passphrase|private[_-]?key|access[_-]?key(?:[_-]?id)?|"
    r"credentials?|connection[_-]?string|dsn|cookie|signing[_-]?key|encryption[_-]?key|authorization"
    r")|[\"']?[A-Za-z0-9_.-]*(?:passw(?:or)?d|passphrase|secret|token)|[\"']?(?:[A-Za-z0-9.-]*[_.-])?pwd"
)
# "the API key: X", "secret key = X": a key name written as two words ("key: value" alone is YAML)
_KEY_QUALIFIER = LazyPattern(r"(?i)(?<![A-Za-z0-9_])(?:api|access|secret|private|signing|encryption)[ \t]+\Z")
# an auth scheme taken as the value ("Authorization: Token X"): the credential after it is the value
_AUTH_SCHEMES = frozenset(("token", "bearer", "basic", "digest", "apikey", "api-key", "key", "jwt", "oauth", "sso-key"))
_SCHEME_CREDENTIAL = LazyPattern(r"[ \t]+(?P<value>[A-Za-z0-9._~+/=:-]{4,})")
# a bare value that is the next key of a connection string ("DSN: Driver={…}"), not a value
_NEXT_KEY = LazyPattern(r"[A-Za-z_][A-Za-z_.-]*=")
# a shell's working directory ("PWD=/home/u"), not a password
_PATH_VALUE = LazyPattern(r"[\"']?(?:[/~.\\]|[A-Za-z]:[\\/])")
_NAME_ENDS = ("key", "keys", "keyid", "key_id", "key-id", "secret", "token", "password", "passwd", "passphrase", "pwd",
              "credential", "credentials", "string", "dsn", "cookie", "authorization")
# at the separator after a secret name: separator, value
_SEP_VALUE = LazyPattern(
    r"(?P<sep>(?::=|=>|:|=)[ \t]*)"
    r"(?P<value>\\\"[^\"\\\n]{4,}\\\"|\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}{)(\]\\]{4,})"
)
# at "--": a secret-looking flag and its value
_CLI_FLAG_AT = LazyPattern(
    r"(?i)--(?:api[_-]?key|token|password|passwd|secret|auth[_-]?token|access[_-]?token|client[_-]?secret)"
    r"(?P<sep>=|[ \t]+)(?P<value>[^\s\"'-][^\s\"']{3,}|\"[^\"\n]{4,}\"|'[^'\n]{4,}')"
)
_PLACEHOLDER = LazyPattern(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|null|none|true|false|undefined|"
    r"os\.environ.*|process\.env.*|env\(.*|your[_-].*|changeme|example|redacted|bearer|basic|token|\.\.\.|…)$"
)

# only words shorter than 16 characters (the words of str.split(): \s is the same whitespace)
_SHORT_WORDS = LazyPattern(r"\s*+(?:\S{1,15}+\s++)*+\S{0,15}+")
# ASCII text with its whitespace (as str.isspace() has it) made b" " and all else b"x"
_WORD_BYTES = bytes(32 if chr(i).isspace() else 120 for i in range(128)) + b"x" * 128


def _only_short_words(text: str) -> bool:
    """No word of 16 characters or more: the test every turn goes through, so it avoids
    splitting the text into words (a few times slower). ASCII text is tested as bytes."""
    if text.isascii():
        return text.encode("ascii").translate(_WORD_BYTES).find(b"x" * 16) < 0
    return _SHORT_WORDS.fullmatch(text) is not None

Span = tuple[int, int, str | None]  # replace text[start:end] with this; None: leave it, skip past it


def redact(text: str) -> tuple[str, Counter]:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``; count them by kind."""
    clean, counts, _ = redact_values(text)
    return clean, counts


def redact_counting(text: str, counters: Counter) -> str:
    """:func:`redact` behind the pre-test, adding what it found to ``counters`` as
    ``redacted:<kind>`` (a run's parse counters)."""
    if not may_hold_secret(text):
        return text
    text, found = redact(text)
    for kind, n in found.items():
        counters[f"redacted:{kind}"] += n
    return text


def redact_values(text: str) -> tuple[str, Counter, dict[str, str]]:
    """:func:`redact`, and what it removed (value → kind). A value found once, where its
    context gave it away ("the password is X"), is removed wherever else it recurs — in this
    text here, and by :func:`forget_values` in the rest of the same record (a memory's
    keywords)."""
    clean, counts = _redact(text)
    if not counts:
        return clean, counts, {}
    values = removed_values(text, clean)
    return forget_values(clean, values, counts), counts, values


def forget_values(text: str, values: dict[str, str], counts: Counter) -> str:
    for value, kind in sorted(values.items(), key=lambda kv: -len(kv[0])):
        if value in text:
            counts[kind] += text.count(value)
            text = text.replace(value, _mark(kind))
    return text


_MARK_RE = LazyPattern(r"\[REDACTED:([A-Za-z0-9_]+)\]")


def removed_values(original: str, clean: str) -> dict[str, str]:
    """The pieces of ``original`` that became markers in ``clean`` (value → kind), found by
    walking the text between markers; only values that could not be ordinary words."""
    parts = _MARK_RE.split(clean)  # [text, kind, text, kind, …, text]
    if not original.startswith(parts[0]):
        return {}
    out: dict[str, str] = {}
    pos, last = len(parts[0]), len(parts) - 1
    for i in range(1, len(parts), 2):
        kind, lit = parts[i], parts[i + 1]
        if i + 1 == last:
            end = len(original) - len(lit)
        elif lit:
            end = original.find(lit, pos + 1)
        else:
            continue  # two markers side by side: their value ends at the next text
        if end < pos:
            return out
        value = original[pos:end]
        if len(value) >= 6 and _R not in value and not value.isalpha() and not value.isspace():
            out[value] = kind
        pos = end + len(lit)
    return out


def _redact(text: str) -> tuple[str, Counter]:
    counts: Counter = Counter()
    if not may_hold_secret(text):
        return text, counts
    ascii_part = text if text.isascii() else text.encode("ascii", "ignore").decode("ascii")
    return _run_rules(text, _only_short_words(text), frozenset(ascii_part), counts), counts


# ASCII text as the quick test reads it, in one translate: whitespace (as str.isspace() has it)
# b" " and all else b"x", as _WORD_BYTES, except the separators the rules start from, b"!", and
# digits, b"0"
_CLASSES = bytes(33 if i in b":=@-" else 48 if i in b"0123456789" else c for i, c in enumerate(_WORD_BYTES))
# single bytes are looked for as ints, and longer ones with find: ``bytes in bytes`` first tries
# the needle as an int and builds (then drops) a TypeError, a few times the cost of the search
_SEPARATOR, _DIGIT, _PERCENT = ord("!"), ord("0"), ord("%")


def may_hold_secret(text: str) -> bool:
    """Whether any rule could change ``text``; False means ``redact`` returns it untouched,
    so the caller may skip the call. Most turns say False after a few byte scans.

    Why False is safe. Every rule starts from a literal anchor, and the rules fall in two
    groups. (1) Those that need a word (``str.split``) of 16 characters or more: every
    provider token, JWT, bearer credential, chat id, AWS or Heroku secret, and detect-secrets
    (each value they accept is 16+ characters without whitespace; detect-secrets and base64
    credentials are only asked then, or on "=="). (2) The rest, each with an anchor of its
    own: ``NAME=value`` / ``NAME: value`` / ``--flag value``, URL passwords and query tokens,
    key-block tails and Telegram ids (a ":", "=" or "--"), percent-encoded query tokens
    ("%3D" in any case: "x%3Ftoken%3D…" has neither ":" nor "="), e-mail ("@"), password phrases
    ("pass"/"pwd" in any case, "密", "口令"), ``mysql -p`` / ``sshpass -p`` / ``curl -u``
    ("-p", "-u"), phone numbers (8 digits). So text with only short words and none of group
    (2)'s anchors holds nothing (test 1); text with a long word holds nothing when it holds
    no anchor of either group (test 2).

    - ASCII text: one ``translate`` marks the separators ``:=@-``, digits and whitespace; no
      separator means no ":", "=", "@", "-" (so no "--", "-p", "-u"); under 8 digits, no phone
      number; "pass"/"pwd" and "%3d" are looked for in the lowercased bytes, as the rules read
      them (the last only where a "%" is); CJK anchors cannot occur. Then only the long-word
      test is left (as ``_only_short_words``), on the same bytes when they hold no digit.
    - Non-ASCII text whose ASCII characters are all whitespace: every anchor but "密"/"口令"
      is ASCII and not whitespace, and a digit or base64 run is ASCII too, so only those two
      are looked for, whatever the word lengths.
    - Anything else: the full tests below (``_maybe_personal``, ``_holds_an_anchor``).

    ``tests/test_redact.py`` checks the promise on the leak corpus, the ordinary lines and
    random near misses: whenever this says False, no rule matches and ``redact`` changes nothing.
    """
    if not text:
        return False
    if text.isascii():
        raw = text.encode("ascii")
        classes = raw.translate(_CLASSES)
        if _SEPARATOR not in classes and (_DIGIT not in classes or classes.count(_DIGIT) < 8):
            low = raw.lower()
            if low.find(b"pass") < 0 and low.find(b"pwd") < 0 and (_PERCENT not in raw or low.find(b"%3d") < 0):
                words = classes if _DIGIT not in classes else raw.translate(_WORD_BYTES)
                return words.find(b"x" * 16) >= 0
        ascii_part = None
    else:
        ascii_part = text.encode("ascii", "ignore")  # its ASCII characters (surrogates are not)
        if not ascii_part.strip():
            return "密" in text or "口令" in text
    short = _only_short_words(text)
    if short:
        return ":" in text or "=" in text or "--" in text or _maybe_personal(text)
    if ascii_part is None:
        return True
    return _holds_an_anchor(text, ascii_part.decode("ascii"))


def _run_rules(text: str, short: bool, chars: frozenset, counts: Counter) -> str:
    """Every rule on ``text``, in order. ``chars``: its ASCII characters (the only ones asked about)."""
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
    if "=" in text or ":" in text or "--" in text:  # NAME=value, NAME: value, --flag value
        spans = []
        for sep in (":", "="):
            spans += _at_anchors(text, sep, lambda p: _assignment(text, lower, p, counts)
                                 or _random_assignment(text, p, counts))
        spans += _at_anchors(text, "--", lambda p: _cli_flag(text, p, counts))
        if spans:
            text = _splice(text, spans)
            lower = _ascii_lower(text)
    spans = _more_spans(text, lower, chars, counts)
    if spans:
        text = _splice(text, spans)
    if not short or "==" in text:
        text = _splice(text, _b64_credentials(text, counts))
    return _detect_secrets(text, chars, short, counts)


def _holds_an_anchor(text: str, ascii_part: str) -> bool:
    """Whether non-ASCII text holds anything a rule starts from: a literal anchor, 8 digits
    or a base64-shaped run. Every anchor but "密" / "口令" is ASCII, so they are looked for in
    ``ascii_part``, the text's ASCII characters (dropping the rest joins neighbours, which can
    only add a false "yes"): Chinese prose costs a few scans of a few characters, not the
    whole chain of rules below."""
    if "密" in text or "口令" in text:
        return True
    for first in _ANCHOR_FIRSTS.intersection(ascii_part):
        for anchor in _ANCHORS_BY_FIRST[first]:
            if anchor in ascii_part:
                return True
    lower = ascii_part.lower()
    for anchor in _ANCHORS_ANY_CASE:
        if anchor in lower:
            return True
    return _digit_count(ascii_part) >= 8 or _B64_RUN.search(ascii_part) is not None


def _maybe_personal(text: str) -> bool:
    """Personal data and password phrases need no separator: "+1 415 555 0134", "密码是…".
    "pass"/"pwd" in any case, as the phrase rules read them ("PWD was …" too)."""
    if "@" in text or "-p" in text or "-u" in text or "密" in text or "口令" in text:
        return True
    low = text.lower()
    return "pass" in low or "pwd" in low or "%3d" in low or _digit_count(text) >= 8


_NOT_DIGIT = bytes(b for b in range(256) if not 48 <= b <= 57)


def _digit_count(text: str) -> int:
    """ASCII digits only: ``phonenumbers`` and the rules read no other."""
    return len(text.encode("ascii", "ignore").translate(None, _NOT_DIGIT))


def _ascii_lower(text: str) -> str:
    """Lowercase with the same length as ``text`` (``str.lower`` may grow, e.g. "İ"), so
    positions found in it are positions in ``text``. ``bytes.lower`` changes only A-Z, and
    UTF-8 keeps every other character's bytes apart from them (a few times faster than
    ``str.translate``)."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def _apply_rule(rule: _Rule, text: str, counts: Counter) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.start()
        if rule.bounded and s > 0 and text[s - 1] in _WORD:
            return m[0]  # the tail of a longer word, not a token
        if rule.kind == "jwt" and not _is_jwt(m[0]):
            return m[0]
        if rule.kind == "openai_key" and len(m[0]) < 40 and not _looks_random(m[0][3:]):
            return m[0]  # "sk-interactive-mode": words, not a key
        counts[rule.kind] += 1
        return _mark(rule.kind)

    return rule.pattern.sub(one, text)


def _looks_random(s: str) -> bool:
    """A key has letters and digits mixed; words joined by hyphens do not."""
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


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
    if k > 1 and text[k - 1] == "]" and text[k - 2] in "\"'":
        k -= 1  # os.environ["API_KEY"] = …, config['password'] = …
    if k > 0 and text[k - 1] in "\"'":
        k -= 1
        if k > 0 and text[k - 1] == "\\":
            k -= 1
    window = text[max(0, k - 65) : k]
    n = len(window) - len(window.rstrip(_NAME_CHARS_STR))  # the name's length, up to 65 (one scan in C)
    if n == 0 or n > 64:
        return None  # no name, or an unusually long one
    name_end, s = k, k - n
    if n > 1 and s > 0 and text[s - 1] == "\\" and text[s] in "nrt":
        s += 1  # a literal "\n" before the name: 'DB_HOST=db01\napi_key=…'
    if not lower.endswith(_NAME_ENDS, s, name_end):
        return None
    if not _SECRET_NAME.fullmatch(text, s, name_end) and not (
            lower.startswith("key", s, name_end) and _KEY_QUALIFIER.search(lower, max(0, s - 16), s)):
        return None
    before = text[s - 1] if s > 0 else ""
    if before == "/" and _ends_a_path(text, s):
        return None  # "cat: /etc/passwd: Permission denied"
    query = before in ("?", "&")  # a URL's query parameter
    if query and name_end == p and _QUERY_SECRET.fullmatch(text, s, name_end):
        return None  # the URL-token rule's, which stops at "&"
    m = _SEP_VALUE.match(text, p)
    if m is None:
        return None
    value, vs, ve = m["value"], m.start("value"), m.end("value")
    if value.lower() in _AUTH_SCHEMES:
        c = _SCHEME_CREDENTIAL.match(text, ve)
        if c is not None and (len(c["value"]) >= 16 or any(ch.isdigit() for ch in c["value"])):
            value, vs, ve = c["value"], c.start("value"), c.end("value")
    if query:
        cut = min(i for i in (value.find("&"), value.find("#"), len(value)) if i >= 0)
        value, ve = value[:cut], vs + cut
    if lower.startswith("pwd", s, name_end) and name_end - s == 3 and _PATH_VALUE.match(value):
        return vs, ve, None  # the shell's PWD=/home/u
    return _value_span(value, vs, ve, counts)


# A config assignment whose value is a long random string, whatever its name (``SESSION_SIGNING =
# "q8Zr…"``, ``secret_key_base: 9f3c…``): gitleaks' generic-api-key rule, by entropy. Names of
# things that are long and random but no secret (hashes, ids, digests, versions, …) are left alone,
# and so are UUIDs, query parameters, command-line options ("NODE_OPTIONS=--max-old-space-size=4096")
# and values made of words ("paraphrase-multilingual-MiniLM-L12-v2").
_RANDOM_VALUE = LazyPattern(r"(?::=|=>|:|=)[ \t]*(?P<q>[\"']?)(?P<value>[A-Za-z0-9+/_=-]{20,200})(?P=q)"
                            r"(?![A-Za-z0-9+/_=.:@~-])")
_NAME_BEFORE = LazyPattern(r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"']?\]?[ \t]*\Z")
# names of long random things that are no secret, as the name ends (lower case: "runId", "sessionId")
_NOT_SECRET_ENDS = tuple(
    "id ids uuid guid hash sha sha1 sha256 sha512 md5 digest checksum integrity commit rev revision ref version "
    "etag tag image model name path file url uri host class font wheel resolved fingerprint nonce salt signature "
    "label type mode format locale region zone branch slug title account user username serial sessionkey "
    "session_key verification".split()
)
_HEX_ID = LazyPattern(r"[0-9a-fA-F-]+")  # hashes and UUIDs, with or without dashes: ids, not keys
_WORD_RUN = LazyPattern(r"[A-Z]?[a-z]{2,}")
# read backwards from a name: what may stand before a YAML or JSON key (a quote, then a line
# start, "{", "," or a list's "-")
_KEY_START = LazyPattern(r"[\"']?[ \t]*(?:\n|\Z|[{,\[(]|-[ \t])")
_IDENTIFIER = LazyPattern(r"[_.-]|[a-z][A-Z]")  # webhook_hmac, app.signer, signingSecret: a key, not a word
WORDY_SHARE = 0.7  # random alnum has about a third of its characters in such runs (3% of 20-char keys reach 0.7)
MIN_ENTROPY = 3.5  # bits per character: random base64/alnum of 20+ is 4+, hex about 3.9


def _random_assignment(text: str, p: int, counts: Counter) -> Span | None:
    m = _RANDOM_VALUE.match(text, p)
    if m is None or text.startswith("//", p + 1):
        return None
    name = _NAME_BEFORE.search(text, max(0, p - 70), p)
    if name is None or name["name"].lower().endswith(_NOT_SECRET_ENDS):
        return None
    before = text[name.start() - 1] if name.start() > 0 else "\n"
    if before in "?&;%:":
        return None  # a URL's query parameter (the URL-token rule's), a key's part ("agent:main:subagent:…")
    if (text[p] == ":" and not _IDENTIFIER.search(name["name"])
            and _KEY_START.match(text[max(0, name.start() - 40):name.start()][::-1]) is None):
        return None  # "word: value" mid-sentence is prose ("No such container: …"), not a key
    value = m["value"]
    if (value.startswith("--") or not _looks_random(value) or _HEX_ID.fullmatch(value) and "-" in value or _wordy(value)
            or _entropy(value) < MIN_ENTROPY):
        return None
    counts["random_assignment"] += 1
    return m.start("value"), m.end("value"), _mark("random_assignment")


def _wordy(value: str) -> bool:
    """Made of words or an identifier's pieces ("paraphrase-multilingual-MiniLM-L12-v2",
    "BtnSave_Tab1_Click", "menu_sale_order_report2"), or a path: most of it in runs of
    lower-case letters (a capital may open one). A random key has its letters scattered."""
    if value.startswith(("/", "~")) or value.endswith("/"):
        return True
    return sum(map(len, _WORD_RUN.findall(value))) >= WORDY_SHARE * len(value)


def _entropy(value: str) -> float:
    import math

    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _ends_a_path(text: str, s: int) -> bool:
    """``s``: where a name starts, right after a "/". Whether the word it ends is a path
    ("/etc/passwd", "~/.config/token"), not a pair such as "user/password"."""
    i = s - 1
    while i > 0 and s - i < 256 and not text[i - 1].isspace() and text[i - 1] not in "\"'(=:":
        i -= 1
    word = text[i:s]
    return word.startswith(("/", "~/", "./", "../")) or word.count("/") >= 2


_NAME_CHARS_STR = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


def _cli_flag(text: str, p: int, counts: Counter) -> Span | None:
    return _assigned_value(_CLI_FLAG_AT.match(text, p), counts)


def _assigned_value(m: re.Match | None, counts: Counter) -> Span | None:
    return None if m is None else _value_span(m["value"], m.start("value"), m.end("value"), counts)


def _value_span(value: str, s: int, e: int, counts: Counter) -> Span:
    """The value of ``NAME=value`` or ``--flag value``: masked unless it is plainly not a
    secret. A bare value may also be a prose word ("secret: always rebase") or the next key
    of a connection string ("DSN: Driver={…}") or an auth scheme with no credential after it."""
    bare = value[:1] not in ("\"", "'", "\\")
    low = value.lower()
    if _is_harmless_value(value) or bare and (low in _NOT_A_PASSWORD or low in _AUTH_SCHEMES or _NEXT_KEY.fullmatch(value)):
        return s, e, None
    counts["secret_assignment"] += 1
    return s, e, _quoted(value, _mark("secret_assignment"))


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


# --- personal data and the phrase-shaped secrets ----------------------------------------
# Each is found from a literal anchor, as above; the text first has to hold one (see redact).

_EMAIL_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_EMAIL_DOMAIN = LazyPattern(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])")
# documentation domains (RFC 2606 / 6761) name nobody; ``git@github.com`` is an ssh remote
_NOBODY = LazyPattern(r"(?i)(?:.*\.)?(?:example\.(?:com|org|net)|example|test|invalid|localhost)")
_GIT_HOSTS = frozenset(("github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "ssh.dev.azure.com"))


def _email(text: str, p: int, counts: Counter) -> Span | None:
    """``p``: where an "@" is."""
    s = p
    while s > 0 and text[s - 1] in _EMAIL_LOCAL and p - s < 64:
        s -= 1
    while s < p and text[s] in ".-":
        s += 1
    m = _EMAIL_DOMAIN.match(text, p + 1)
    if s == p or m is None or _NOBODY.fullmatch(m[0]):
        return None
    if text[s:p] == "git" and m[0].lower() in _GIT_HOSTS:
        return None
    counts["email"] += 1
    return s, m.end(), _mark("email")


# a phone number as people write one: +country code, or grouped digits; checked by phonenumbers
# ASCII word characters around it, not ``\w``: "手机号13800138000，" is a number glued to
# Chinese text; "=" may come right before a "+" number ("phone=+14155550134") only
_PHONE = LazyPattern(r"(?:(?<==)(?=\+)|(?<![A-Za-z0-9_+/=.-]))"
                    r"(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?|\(\+\d{1,3}\)[ .-]?|\(\d{2,4}\)[ .-]?)?"
                    r"\d{2,5}(?:[ .-]?\d{2,5}){1,4}(?![A-Za-z0-9_/=-]|\.\d)")
_CN_MOBILE = LazyPattern(r"1[3-9]\d{9}")  # read on the digits alone: "139 1234 5678", "186-0000-1234"
_US_GROUPED = LazyPattern(r"\(?\d{3}\)?[ .-]?\d{3}[ .-]\d{4}")
_DIGITS = frozenset("0123456789")


def _phones(text: str, counts: Counter) -> list[Span]:
    spans: list[Span] = []
    for m in _PHONE.finditer(text):
        cand = m[0]
        digits = sum(c.isdigit() for c in cand)
        if digits < 8 or digits > 15:
            continue
        if "+" in cand:  # "+86 …", "(+86) …"
            region = None
        elif cand.startswith("00"):  # the international prefix: "0086 13612345678"
            cand, region = "+" + cand[2:], None
        elif _CN_MOBILE.fullmatch("".join(c for c in cand if c.isdigit())):
            region = "CN"
        elif _US_GROUPED.fullmatch(cand):
            region = "US"
        else:
            continue  # bare digit runs are ids, ports, timestamps
        import phonenumbers  # ~70 ms: loaded on the first candidate, not on every text with 8 digits

        try:
            number = phonenumbers.parse(cand, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            counts["phone"] += 1
            spans.append((m.start(), m.end(), _mark("phone")))
    return spans


# "the admin password is X", "password was changed to X", "密码是 X", "密码：X"
# "is: X" and "changed to: X" too; up to six words between "for" and "is" ("the password for
# the admin account on db1 is X"), _NOT_A_PASSWORD keeping prose out
_PW_SAID = (r"(?:(?:is|was|has\s+been|got)(?:\s*[:：]\s*|\s+)(?:now\s+)?(?:(?:changed|set|reset|updated)\s+to(?:\s*[:：]\s*|\s+))?"
            r"|(?:changed|set|reset|updated)\s+to(?:\s*[:：]\s*|\s+))")
_PASSWORD_PHRASE = LazyPattern(
    r"(?i)(?:pass(?:word|wd|phrase)s?(?:\s+(?:for|of|on|to)(?:\s+[^\s,;:=]{1,40}){1,6}?)?\s*(?:" + _PW_SAID + r"|[=:：]\s*)"
    r"|pwd\s+" + _PW_SAID + r")"
    r"(?:\"(?P<dq>[^\"\n]{4,64})\"|'(?P<sq>[^'\n]{4,64})'|`(?P<bq>[^`\n]{4,64})`|(?P<bare>[^\s\"'`]{4,64}))"
)
# "密码是：X", "密码改成了 X", "密码已改成 X", "密码设置为 X", "密码：『X』"
_ZH_PASSWORD = LazyPattern(r"(?:密码|密碼|口令)(?:都|也|还|還|仍|已经|已經|已|被)?"
                          r"(?:(?:是|为|為|(?:改|设|設|设置|設置|重置|更改|修改|换|換)(?:成|为|為)了?)\s*[：:=]?|[：:=])\s*"
                          r"(?:[\"'“‘「『《`](?P<q>[^\"'”’」』》`\n]{4,64})[\"'”’」』》`]|(?P<bare>[!-~]{4,64}))")
# words that follow "password is" in prose about a password, not the password itself
_NOT_A_PASSWORD = frozenset((
    "wrong", "correct", "incorrect", "invalid", "valid", "required", "optional", "expired", "empty", "missing",
    "set", "unset", "stored", "saved", "hashed", "encrypted", "changed", "reset", "needed", "weak", "strong",
    "long", "short", "too", "the", "a", "an", "not", "now", "still", "being", "in", "on", "at", "from", "of",
    "for", "and", "or", "same", "different", "ok", "fine", "good", "bad", "accepted", "rejected", "ignored",
    "mandatory", "enabled", "disabled", "visible", "hidden", "never", "always", "only", "also", "here",
    "there", "below", "above", "this", "that", "what", "your", "my", "his", "her", "their", "our", "its",
    "null", "none",
))
_TRAIL = ".,;:!?)]}"


# "the old password Xk29fLq0 expired": no verb, but a value that only a key looks like
# (the English words need whitespace after them: "password_min_length=12" is a setting's name)
_PASSWORD_BARE = LazyPattern(r"(?i)(?:pass(?:word|wd|phrase)\s+|(?:密码|密碼|口令)\s*)(?P<bare>[!-~]{8,64})")


def _password_phrase(text: str, p: int, counts: Counter, zh: bool) -> Span | None:
    if not zh and p > 0 and text[p - 1].isalpha():
        return None  # "bypass is …", "compass: …"
    if not zh and p > 0 and text[p - 1] == "/" and _ends_a_path(text, p):
        return None  # "cat: /etc/passwd: Permission denied"
    if _in_marker(text, p):
        return None  # "[REDACTED:url_password]"
    m = (_ZH_PASSWORD if zh else _PASSWORD_PHRASE).match(text, p)
    if m is None:
        m = _PASSWORD_BARE.match(text, p)
        if m is None or not _looks_random(m["bare"].rstrip(_TRAIL)):
            return None
    group = next(g for g in ("dq", "sq", "bq", "q", "bare") if g in m.re.groupindex and m[g] is not None)
    s, e = m.start(group), m.end(group)
    if group == "bare":
        while e > s and text[e - 1] in _TRAIL:
            e -= 1
    value = text[s:e]
    if len(value) < 4 or _R in value or value.lower() in _NOT_A_PASSWORD or _is_harmless_value(value):
        return (s, e, None) if e > s else None
    counts["password"] += 1
    return s, e, _mark("password")


def _in_marker(text: str, p: int) -> bool:
    i = text.rfind(_R, max(0, p - 40), p)
    return i >= 0 and text.find("]", i) >= p


# command lines: mysql -p<pw>, sshpass -p <pw>, curl -u user:<pw>
_MYSQL_P = LazyPattern(r"(?<!\S)-p(?P<value>'[^'\n]{3,}'|\"[^\"\n]{3,}\"|[^\s'\"]{3,})")
_SSHPASS_P = LazyPattern(r"(?:sshpass|docker\s+login\b[^\n]*?)\s+-p\s*(?P<value>'[^'\n]+'|\"[^\"\n]+\"|\S{3,})")
_USER_COLON = LazyPattern(r"-(?:u|-user)[ \t=]*['\"]?[^\s:'\"]{1,64}:(?P<value>[^\s'\"@]{3,})")


def _command_passwords(text: str, lower: str, counts: Counter) -> list[Span]:
    spans: list[Span] = []
    found: list[re.Match] = []
    if "mysql" in lower or "mariadb" in lower:
        found += _MYSQL_P.finditer(text)
    if "sshpass" in lower or "docker" in lower:
        found += _SSHPASS_P.finditer(text)
    if "-u" in text:
        found += _at_all(_USER_COLON, text, "-u", _user_flag_start)
    for m in found:
        value = m["value"]
        if _R in value or _is_harmless_value(value):
            continue
        counts["password"] += 1
        spans.append((m.start("value"), m.end("value"), _quoted(value, _mark("password"))))
    return spans


def _user_flag_start(text: str, i: int) -> int:
    """``i``: where "-u" is. Where its flag starts ("--user" one earlier), or -1 when the
    flag does not start a word."""
    if i > 0 and text[i - 1] == "-":
        i -= 1
    return i if i == 0 or text[i - 1].isspace() else -1


def _at_all(pattern: LazyPattern, text: str, anchor: str,
            start: Callable[[str, int], int] | None = None) -> list[re.Match]:
    """``pattern.match`` at each ``anchor``: a literal scan, not a regex scan of the text.
    ``start``: where to match from, given the anchor's position (-1: nowhere)."""
    out, i = [], text.find(anchor)
    while i >= 0:
        at = i if start is None else start(text, i)
        m = pattern.match(text, at) if at >= 0 else None
        if m is not None:
            out.append(m)
        i = text.find(anchor, i + 1)
    return out


# in a URL: ?token=…&sig=… query values, and login / reset / invite links' path tokens
_QUERY_PARAM = LazyPattern(r"(?P<name>[A-Za-z0-9_.-]{1,48})=(?P<value>[^&#\s\"'<>)\]]{4,})")
_QUERY_PARAM_ENCODED = LazyPattern(r"(?P<name>[A-Za-z0-9_.-]{1,48})%3[Dd]"
                                   r"(?P<value>(?:[^&#\s\"'<>)\]%]|%(?!2[36]|3[Ff])[0-9A-Fa-f]{2}){4,})")
_QUERY_SECRET = LazyPattern(
    r"(?i)(?:.*[_.-])?(?:token|key|apikey|secret|password|passwd|pass|pwd|sig|signature|code|auth|credential|"
    r"otp|ticket|session|sessionid|sid|jwt|hash|magic|nonce|invite|login)"
)
_LINK_TOKEN = LazyPattern(
    r"(?i)/(?:magic[-_]?link|magic|login|log-in|signin|sign-in|sign_in|verify|verification|confirm|confirmation|"
    r"activate|activation|reset[-_]?password|password[-_]?reset|reset|invite|invitation|auth|token|otp|"
    r"unsubscribe|access)/(?P<value>[A-Za-z0-9_-]{16,})"
)


def _url_tokens(text: str, lower: str, counts: Counter) -> list[Span]:
    spans: list[Span] = []
    # a URL inside a URL's query is percent-encoded: "%3F"/"%26" part its parameters, "%3D" is "="
    seps = (("?", 1, _QUERY_PARAM), ("&", 1, _QUERY_PARAM), ("%3f", 3, _QUERY_PARAM_ENCODED),
            ("%26", 3, _QUERY_PARAM_ENCODED))
    for sep, n, pattern in seps if "%3d" in lower else seps[:2]:
        i = lower.find(sep)
        while i >= 0:
            m = pattern.match(text, i + n)
            if m is not None and _QUERY_SECRET.fullmatch(m["name"]) and not _is_harmless_value(m["value"]):
                counts["url_token"] += 1
                spans.append((m.start("value"), m.end("value"), _mark("url_token")))
            i = lower.find(sep, i + 1)
    if "://" in text:
        for m in _LINK_TOKEN.finditer(text):
            if _looks_random(m["value"]) and _R not in m["value"]:
                counts["url_token"] += 1
                spans.append((m.start("value"), m.end("value"), _mark("url_token")))
    return spans


# a base64 word that decodes to "user:password" (docker's "auth", curl's Basic header pasted alone)
_B64_WORD = LazyPattern(r"(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=_.-])")
# the password may hold spaces and colons ("deploy-bot:Zx8#kq!2 mP"); printable ASCII only
_USER_PASS = LazyPattern(rb"[A-Za-z0-9._@+-]{1,64}:[ -~]{3,}")


def _b64_credentials(text: str, counts: Counter) -> list[Span]:
    import base64
    import binascii

    spans: list[Span] = []
    for m in _B64_WORD.finditer(text):
        word = m[0]
        if len(word) % 4 == 1:
            continue
        try:  # unpadded too, as many tools print it
            raw = base64.b64decode(word + "=" * (-len(word) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if b":" in raw and _USER_PASS.fullmatch(raw) and not raw.endswith(b" "):
            counts["basic_credentials"] += 1
            spans.append((m.start(), m.end(), _mark("basic_credentials")))
    return spans


_HEROKU = LazyPattern(r"(?i)heroku[\w .-]{0,30}?[:= \"'\t]{1,5}"
                     r"(?P<value>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f-])")


# a Telegram envelope's sender id: "[Telegram Li Wei id:123456789 …]"
_TELEGRAM_ID = LazyPattern(r"(?i)telegram\b[^\]\n]{0,80}?\bid:\s*(?P<value>\d{5,15})\b")


def _more_spans(text: str, lower: str, chars: frozenset, counts: Counter) -> list[Span]:
    """Personal data and phrase-shaped secrets."""
    spans: list[Span] = []
    if "@" in text:
        spans += _at_anchors(text, "@", lambda p: _email(text, p, counts))
    if not chars.isdisjoint(_DIGITS) and _digit_count(text) >= 8:
        spans += _phones(text, counts)
    for anchor in ("pass", "pwd"):
        if anchor in lower:
            spans += _at_anchors(lower, anchor, lambda p: _password_phrase(text, p, counts, zh=False))
    if "密" in text or "口令" in text:
        for anchor in ("密码", "密碼", "口令"):
            spans += _at_anchors(text, anchor, lambda p: _password_phrase(text, p, counts, zh=True))
    if "-" in text:
        spans += _command_passwords(text, lower, counts)
    if "=" in text or "://" in text or "%3d" in lower:
        spans += _url_tokens(text, lower, counts)
    if "telegram" in lower:
        for m in _TELEGRAM_ID.finditer(text):
            counts["chat_id"] += 1
            spans.append((m.start("value"), m.end("value"), _mark("chat_id")))
    if "heroku" in lower:
        for m in _HEROKU.finditer(text):
            counts["heroku_key"] += 1
            spans.append((m.start("value"), m.end("value"), _mark("heroku_key")))
    return spans


# --- detect-secrets' plugins --------------------------------------------------------------
# Yelp's maintained rule set, run after ours for what ours does not know. Each plugin runs
# only on text holding one of its literal hints. Left out: PrivateKey (it flags only the BEGIN
# line; ours takes the whole block), JWT (ours checks the same shape), Keyword and the
# high-entropy plugins (they flag every git hash), IPPublic (an address is not a secret).
_DS_HINTS: dict[str, tuple[str, ...]] = {
    "artifactory.ArtifactoryDetector": ("AKC", "AP"),
    "aws.AWSKeyDetector": ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "aws", "AWS", "Aws"),
    "azure_storage_key.AzureStorageKeyDetector": ("AccountKey=",),
    "basic_auth.BasicAuthDetector": ("://",),
    "cloudant.CloudantDetector": ("cloudant", "Cloudant", "CLOUDANT", "cl_", "CL_", "clou"),
    "discord.DiscordBotTokenDetector": (".",),
    "github_token.GitHubTokenDetector": ("gh",),
    "gitlab_token.GitLabTokenDetector": ("gl", "GR1348941"),
    "ibm_cloud_iam.IbmCloudIamDetector": ("ibm", "IBM", "cloud_iam", "CLOUD_IAM"),
    "ibm_cos_hmac.IbmCosHmacDetector": ("cos", "COS"),
    "mailchimp.MailchimpDetector": ("-us",),
    "npm.NpmDetector": ("_authToken",),
    "openai.OpenAIDetector": ("T3BlbkFJ",),
    "pypi_token.PypiTokenDetector": ("pypi-",),
    "sendgrid.SendGridDetector": ("SG.",),
    "slack.SlackDetector": ("xox", "hooks.slack"),
    "softlayer.SoftlayerDetector": ("softlayer", "SOFTLAYER", "sl_", "SL_"),
    "square_oauth.SquareOAuthDetector": ("sq0csp-",),
    "stripe.StripeDetector": ("k_live_",),
    "telegram_token.TelegramBotTokenDetector": (":",),
    "twilio.TwilioKeyDetector": ("AC", "SK"),
}
DsRule = tuple[str, str, list[LazyPattern]]  # plugin name, kind, its patterns (compiled when a text holds a hint)
_ds_rules: list[DsRule] | None = None


def detect_secrets_rules() -> list[DsRule]:
    """The plugins' patterns. Importing detect-secrets costs 0.2-0.8 s (it loads requests and
    its whole scanner), too much for every ``distill run``; so the patterns of the version we
    test against ship in ``distill/data/detect_secrets_patterns.json`` and are used while that
    is the version installed. Any other version is read from the package itself (nothing is
    written). ``tests/test_redact.py`` checks the shipped file against the installed package."""
    global _ds_rules
    if _ds_rules is None:
        data = _ds_patterns()
        _ds_rules = [(name, data[name]["kind"], [LazyPattern(p, f) for p, f in data[name]["patterns"]])
                     for name in _DS_HINTS]
    return _ds_rules


DS_SHIPPED = Path(__file__).parent.parent / "data" / "detect_secrets_patterns.json"


def detect_secrets_version() -> str:
    """The installed detect-secrets version, found without running the package."""
    import importlib.util

    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or not spec.origin:
        raise ImportError("detect-secrets is not installed: pip install 'detect-secrets>=1.5'")
    found = re.search(r"[0-9][0-9A-Za-z.+-]*", Path(spec.origin).with_name("__version__.py").read_text())
    return found[0] if found else "unknown"


def _ds_patterns() -> dict:
    import orjson

    try:
        shipped = orjson.loads(DS_SHIPPED.read_bytes())
        if shipped.get("version") == detect_secrets_version() and set(shipped["plugins"]) >= set(_DS_HINTS):
            return shipped["plugins"]
    except (OSError, ValueError, KeyError):
        pass
    return _ds_export()


def _ds_export() -> dict:
    import importlib

    from detect_secrets.plugins.base import RegexBasedDetector

    out = {}
    for name in _DS_HINTS:
        module, cls = name.rsplit(".", 1)
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
        if plugin.analyze_string is not RegexBasedDetector.analyze_string:
            raise RuntimeError(f"detect-secrets {name} is no longer a plain regex plugin; update distill/text/redact.py")
        kind = re.sub(r"[^a-z0-9]+", "_", plugin.secret_type.lower()).strip("_")
        out[name] = {"kind": kind, "patterns": [[r.pattern, r.flags] for r in plugin.denylist]}
    return out


# (hint, the characters it needs, plugin name): as _HINTS above
_DS_NEEDS = [(h, frozenset(h), name) for name, hints in _DS_HINTS.items() for h in hints]

# Every literal some rule needs (the non-ASCII "密" / "口令" aside): the rules' and plugins'
# hints and the anchors ``_redact`` and ``_more_spans`` test; and the case-blind ones.
_ANCHORS = {h for rule in _RULES for h in rule.hints} | {h for hints in _DS_HINTS.values() for h in hints} | {
    "aws_access_key]", "://", ":", "=", "--", "@", "-p", "-u"}
_ANCHORS_BY_FIRST = {c: tuple(sorted(a for a in _ANCHORS if a[0] == c)) for c in {a[0] for a in _ANCHORS}}
_ANCHOR_FIRSTS = frozenset(_ANCHORS_BY_FIRST)
_ANCHORS_ANY_CASE = ("bearer", "basic", "pass", "pwd", "telegram", "heroku", "%3d")
# the shortest run ``_B64_WORD`` can match, inside a longer run of its characters
_B64_RUN = LazyPattern(r"[A-Za-z0-9+/=_.-]{12}")


def _detect_secrets(text: str, chars: frozenset, short: bool, counts: Counter) -> str:
    """Values that a detect-secrets plugin flags and ours did not, replaced wherever they occur.
    ``short``: no word of 16 characters or more, which every value these plugins find is."""
    if short:
        return text
    names = {name for h, need, name in _DS_NEEDS if need <= chars and h in text}
    if not names:
        return text
    for name, kind, patterns in detect_secrets_rules():
        if name not in names:
            continue
        for value in set(_ds_values(patterns, text)):
            if len(value) < 8 or _R in value or value not in text:
                continue
            counts[kind] += text.count(value)
            text = text.replace(value, _mark(kind))
    return text


def _ds_values(patterns: list[LazyPattern], text: str):
    """What detect-secrets' ``RegexBasedDetector.analyze_string`` yields: each match, or each
    non-empty group of it."""
    for pattern in patterns:
        for m in pattern.findall(text):
            if isinstance(m, tuple):
                yield from filter(None, m)
            else:
                yield m
