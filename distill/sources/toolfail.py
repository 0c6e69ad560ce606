"""Failed tool calls: the one kind of tool output a turn keeps, as a short trace line.

A tool result is a failure when its format says so (an error flag, a non-zero exit code)
or when its output *starts* with an error line. Only the start is looked at — the first
``HEAD_CHARS`` characters — so the bytes pre-test can look at a bounded window too and the
two always agree: ``bytes_window_may_fail(window)`` is true for every window whose decoded
text ``error_line`` would flag (the window is ``WINDOW_BYTES`` long, enough for
``HEAD_CHARS`` characters even when every one is a 6-byte ``\\uXXXX`` escape).
"""

from __future__ import annotations

import re

from ..text import LazyPattern
from ..text.noise import clip
from ..text.redact import redact_counting

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from collections import Counter

HEAD_CHARS = 160
WINDOW_BYTES = HEAD_CHARS * 6 + 512

# a line starting with one of these words is an error line
_STARTS = ("error", "fatal", "traceback", "exception", "panic", "failed", "failure", "uncaught", "unhandled")
# a line containing one of these is an error line
_ANYWHERE = (
    "command not found",
    "no such file or directory",
    "permission denied",
    "enoent",
    "eacces",
    "error:",
    "exception:",
    "错误",
    "失败",
)
_STARTS_RE = LazyPattern(r"^[\W_]*(?:" + "|".join(_STARTS) + r")\b")
# what a trace quotes: the first line mentioning any of these
_MENTIONS_ERROR = LazyPattern(
    r"(?i)\b(?:error|errors|failed|failure|fatal|exception|traceback|panic|denied|not found|cannot|"
    r"could not|unable to|no such|refused|timed out|enoent|eacces)\b|\berr!|错误|失败"
)
# a line that is only a tool's prefix or a bare verdict, with no message: "npm ERR!", "Error:",
# "build failed" — the line that says what went wrong comes after it
_BARE = LazyPattern(r"(?i)[\W_]*(?:[\w.-]+[ \t]+)?(?:error|errors|err!|failed|failure|fatal|exception|panic)[\W_]*")
_TRACEBACK = LazyPattern(r"(?i)[\W_]*traceback \(most recent call last\)")
# the line that ends a Python traceback: the exception, unindented ("UnicodeEncodeError: …",
# "billing.errors.ExportFailed: …", "KeyboardInterrupt")
_EXCEPTION_LINE = LazyPattern(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::[ \t]|:?$)")
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
# header lines Codex puts before the real output
_HEADER = LazyPattern(r"^(?:exit code:|wall time:|output:|process exited with code|chunk id:|original token count:)")
_EXIT = LazyPattern(r"(?:exit code:|exited with code) *(-?\d+)")

_ESCAPED_CJK = tuple(
    esc
    for m in _ANYWHERE
    if not m.isascii()
    for esc in (
        m.encode("unicode_escape").lower(),  # \u9519\u8bef, as json.dumps writes it
        m.encode("unicode_escape").lower().replace(b"\\", b"\\\\"),  # the same inside a JSON string
    )
)
# on the first line, where it is known: a start word at its start, or a marker anywhere
_BYTE_ANYWHERE = tuple(m.encode() for m in _ANYWHERE) + _ESCAPED_CJK
_START_WORDS = tuple(m.encode() for m in _STARTS)
_NOT_ALNUM = bytes(b for b in range(256) if not (48 <= b <= 57 or 97 <= b <= 122))  # [^0-9a-z]
_ANYWHERE_IN = LazyPattern(b"|".join(map(re.escape, _BYTE_ANYWHERE)))
# on the whole window, where it is not: any of them anywhere
_BYTE_MARKERS = _START_WORDS + _BYTE_ANYWHERE
_BYTE_HEADERS = (b"exit code:", b"wall time:", b"output:", b"process exited with code", b"chunk id:",
                 b"original token count:")


def error_line(output: str) -> str | None:
    """The first real output line, if it is an error line (within the first HEAD_CHARS)."""
    for raw in output[:HEAD_CHARS].splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower()
        if _HEADER.match(low):
            continue
        if _STARTS_RE.match(low) or any(m in low for m in _ANYWHERE):
            return line
        return None
    return None


def header_exit_code(output: str) -> int | None:
    """``Exit code: N`` / ``Process exited with code N`` at the start of an output."""
    m = _EXIT.search(output[:HEAD_CHARS].lower())
    return int(m[1]) if m else None


def first_error_line(output: str) -> str:
    """For a trace: the first line that mentions an error, else the last non-empty line
    (compilers and test runners end with their verdict). Lines as ``str.splitlines`` cuts
    them, headers skipped. A line that is only a prefix or a verdict ("npm ERR!", "Error:")
    gives way to a later one with a message; a Python traceback is described by the
    exception that ends it, not by its "Traceback (most recent call last):" header. The
    mention is searched for in the whole output, not line by line: a failed tool's output
    can be hundreds of KB, and its first lines usually say it. (Which outputs failed is
    ``error_line``'s and the bytes pre-test's to say; this only picks the line.)"""
    pos, bare = 0, ""
    while (m := _MENTIONS_ERROR.search(output, pos)) is not None:
        start, pos = _line_around(output, m.start())
        line = output[start:pos].strip()
        if _HEADER.match(line.lower()):
            continue
        if _TRACEBACK.match(line):
            return exception_line(output[pos:].splitlines()) or line
        if not _BARE.fullmatch(line):
            return line
        bare = bare or line
    if bare:
        return bare
    for raw in reversed(output.splitlines()):
        line = raw.strip()
        if line and not _HEADER.match(line.lower()):
            return line
    return ""


def exception_line(lines: list[str]) -> str | None:
    """The exception a Python traceback ends with, given the lines after its header: the
    first unindented line naming an exception; through a chain ("During handling of the
    above exception, …"), the last one raised. None when the traceback was cut off."""
    found, chained = None, True
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if found is not None and not chained:
            if not line.startswith(_CHAINED):
                break
            chained = True
        elif chained and not raw[0].isspace() and _EXCEPTION_LINE.match(line):
            found, chained = line, False
    return found


# what str.splitlines() cuts at, besides "\n"
_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _line_around(text: str, p: int) -> tuple[int, int]:
    """``[start, end)`` of the line (as ``str.splitlines`` has it) that holds ``text[p]``.
    With ``find``, not a regex: compiling a class of non-Latin-1 characters costs a one-file
    ``distill run`` more than every call of this (each search is bounded by the line)."""
    start = text.rfind("\n", 0, p) + 1
    end = text.find("\n", p)
    end = len(text) if end < 0 else end
    for ch in _OTHER_BREAKS:
        start = max(start, text.rfind(ch, start, p) + 1)
        if (found := text.find(ch, p, end)) >= 0:
            end = found
    return start, end


def bytes_window_may_fail(window: bytes, *, nested: bool = False, exit_headers: bool = False) -> bool:
    """Bytes pre-test for ``error_line`` / ``header_exit_code``. ``window`` starts where the
    output text starts (inside its JSON string) and is ``WINDOW_BYTES`` long.

    It looks at the same line ``error_line`` looks at — the first non-empty, non-header line,
    split at escaped newlines — and, where the escapes make that line uncertain, at the whole
    window: it may say yes wrongly, never no wrongly. ``nested``: the text is a JSON string
    inside a JSON string (Codex's ``{"output": …}`` form), so a newline is ``\\\\n`` there.
    ``exit_headers``: the format reads ``Exit code: N`` headers (Codex) — also look for those.
    """
    if not exit_headers:
        verdict = plain_first_line_may_fail(window, 0, len(window))
        if verdict is not None:
            return verdict
    low = _string_head(window).lower()
    if _KELVIN in low or b"u212a" in low:  # raw or escaped: str.lower() makes "TRACEBAC\u212a" a start word
        return True
    if exit_headers and b"code" in low and (
        _nonzero_after(low, b"exit code:") or _nonzero_after(low, b"exited with code")
    ):
        return True
    pos = 0
    while pos < len(low):
        nl = low.find(b"\\n", pos)
        line = low[pos:nl] if nl >= 0 else low[pos:]
        if b"\\" in line:
            if (nl >= 0 and _escaped_n(line, nested)) or _odd_escape(line):
                # an escaped backslash before "n" (not a newline), or \r, \u2028, …, where
                # splitlines() may cut elsewhere: the whole window decides
                return _has_marker(low, _BYTE_MARKERS)
            line = line.replace(b"\\t", b" ").strip(b" \\")
        if not line.isascii() and _reads_differently(line):
            return _has_marker(low, _BYTE_MARKERS)
        verdict = _lowered_line_verdict(line)
        if verdict is not None:
            return verdict  # the first real line: an error line or not
        if nl < 0:
            return True  # the text ends before a real line: unsure
        pos = nl + 2
    return True


# the first line of a JSON string, up to its escaped newline, when it is plain ASCII (no quote,
# no escape): the same line as the first "\n" found within 400 bytes, in one regex step. (Taking
# non-ASCII lines here too measured slower: a Chinese line without ASCII letters is left open
# and was then matched again by each fallback before the full test. The OpenClaw head regex
# takes them, with FIRST_LINE, once: see first_line_may_fail.)
PLAIN_FIRST_LINE = LazyPattern(rb'([^"\\\x80-\xff]{1,398})\\n')
# the same with any bytes but a quote or a backslash: UTF-8 text too (a third of the tool output
# in a Chinese-speaking team's transcripts starts with a line that has some)
FIRST_LINE = LazyPattern(rb'([^"\\]{1,398})\\n')


def plain_first_line_may_fail(buf: bytes, start: int, stop: int) -> bool | None:
    """The usual case of ``bytes_window_may_fail`` (no ``exit_headers``), decided on
    ``buf[start:stop]`` without copying the window out of a long line: a plain ASCII first
    line ending in an escaped newline within 400 bytes. None when that case does not apply
    or leaves the answer open (the full test decides then)."""
    m = PLAIN_FIRST_LINE.match(buf, start, min(start + 400, stop))
    return None if m is None else plain_line_may_fail(m[1])


def plain_line_may_fail(line: bytes) -> bool | None:
    """``line``: a plain first line (see ``PLAIN_FIRST_LINE``). True: an error line; False: a
    real line that is not one; None: a header or no letters, so the next lines decide."""
    return _lowered_line_verdict(line.lower())


def _lowered_line_verdict(low: bytes) -> bool | None:
    """What ``error_line`` says of one output line, lowercased, as far as the bytes tell: True
    an error line (a start word after any non-alphanumerics, or a marker anywhere); False a
    real line that is not one; None a header or a line without ASCII letters or digits. The
    start word with ``lstrip`` and ``startswith``, not a regex: this runs on most tool
    results, and a regex call costs more than either."""
    rest = low.lstrip(_NOT_ALNUM)
    if rest.startswith(_START_WORDS) or _ANYWHERE_IN.search(low):
        return True
    if rest and not low.lstrip().startswith(_BYTE_HEADERS):
        return False
    return None


def first_line_may_fail(line: bytes, buf: bytes, start: int, stop: int) -> bool | None:
    """``plain_line_may_fail`` for a first line ``FIRST_LINE`` found at ``buf[start:]``, where
    ``buf[start:stop]`` is the window. A line with non-ASCII bytes is the window test's first
    line as well, and decided the same way, unless that test would read it differently: a
    Unicode line break or leading space in it (``_reads_differently``), or a Kelvin sign,
    raw or escaped, anywhere in the window; then None, and the full test decides."""
    if not line.isascii() and (_reads_differently(line) or _kelvin_in(buf, start, stop)):
        return None
    return plain_line_may_fail(line)


def _kelvin_in(buf: bytes, start: int, stop: int) -> bool:
    """What the window test's Kelvin check could see in ``buf[start:stop]``, in any case."""
    return buf.find(_KELVIN, start, stop) >= 0 or buf.find(b"212a", start, stop) >= 0 or buf.find(
        b"212A", start, stop) >= 0


def _escaped_n(line: bytes, nested: bool) -> bool:
    """The ``\\n`` after ``line`` is not a newline: it follows an escaped backslash (the
    count of backslashes before it is not what a newline at this nesting leaves)."""
    trailing = len(line) - len(line.rstrip(b"\\"))
    return trailing != (1 if nested else 0)


def _string_head(window: bytes) -> bytes:
    """The window up to the end of the JSON string it starts in (its first unescaped quote)."""
    q = window.find(b'"')
    while q > 0 and window[q - 1] == 92:  # a backslash: escaped, unless itself escaped
        k = q - 1
        while k > 0 and window[k - 1] == 92:
            k -= 1
        if (q - k) % 2 == 0:
            break
        q = window.find(b'"', q + 1)
    return window if q < 0 else window[:q]


def _odd_escape(line: bytes) -> bool:
    """Line breaks for ``str.splitlines`` other than ``\\n``: ``\\r``, ``\\f``, ``\\u…``
    (\\u000b, \\u2028, …) and raw U+0085 / U+2028 / U+2029."""
    return b"\\r" in line or b"\\u" in line or b"\\f" in line or _raw_line_break(line)


_KELVIN = "\u212a".encode()
# UTF-8 of the non-ASCII characters str.strip() drops, written out (deriving them walked 12k
# code points on every run); test_sources_common checks the list against str.isspace()
_UNICODE_SPACES = tuple(c.encode() for c in "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                                            "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_SPACE_LEADS = frozenset(s[:1] for s in _UNICODE_SPACES)  # their first bytes: most lines are ruled out by one


def _reads_differently(line: bytes) -> bool:
    """Non-ASCII ``line`` where ``error_line``, reading the decoded text, may see other lines:
    a line break of its own (U+0085, U+2028, U+2029), or Unicode whitespace before the first
    character (``str.strip`` drops it, ``bytes.strip`` does not: a header may hide behind it)."""
    if _raw_line_break(line):
        return True
    stripped = line.lstrip()
    return stripped[:1] in _SPACE_LEADS and stripped.startswith(_UNICODE_SPACES)


def _raw_line_break(line: bytes) -> bool:
    # find, not ``in``: ``bytes in bytes`` first tries the needle as an int (and builds a TypeError)
    return line.find(b"\xc2\x85") >= 0 or line.find(b"\xe2\x80\xa8") >= 0 or line.find(b"\xe2\x80\xa9") >= 0


def _has_marker(low: bytes, markers: tuple[bytes, ...]) -> bool:
    for m in markers:
        if m in low:
            return True
    return False


def _nonzero_after(low: bytes, marker: bytes) -> bool:
    i = low.find(marker)
    while i >= 0:
        j = i + len(marker)
        while j < len(low) and low[j : j + 1] == b" ":
            j += 1
        digits = low[j : j + 2]
        if not (digits[:1] == b"0" and not digits[1:2].isdigit()):
            return True
        i = low.find(marker, j)
    return False


def trace(tool: str | None, output: str, max_chars: int, counters: Counter) -> str:
    """``[tool exec failed: <tool>: <first error line>]``, at most about ``max_chars`` long
    (cut at whitespace by ``clip``, never mid-token, so redaction still sees whole tokens).
    What is cut is redacted first (its finds counted in ``counters``): a cut can part a
    secret's name from its value, and the tool's name (a bash command) is cut at 80."""
    detail = first_error_line(output) or "(no output)"
    name = (tool or "tool").strip()
    if len(name) > 80:
        name = redact_counting(name, counters)
        cut = name[:80]
        if not name[80:81].isspace():
            cut = cut[: max(cut.rfind(" "), 0)]  # not mid-word: a cut key or marker is unredactable
        name = cut.rstrip()
    line = f"[tool exec failed: {name or 'tool'}: {detail}]"
    if len(line) > max_chars:
        line = f"[tool exec failed: {name or 'tool'}: {redact_counting(detail, counters)}]"
    text, _ = clip(line, max_chars)
    return text
