"""A small run decodes its lines and writes its cursor with the standard library's json
(distill.lazyjson), so that it need not import orjson: whichever of the two ran, a line is
accepted or refused alike and decodes to the same value, and the cursor is the same bytes."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import orjson
import pytest

from distill import lazyjson

EXAMPLES = Path(__file__).resolve().parent.parent / "state.example"


def same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


def check(line: bytes) -> bool:
    """What json gives, when it gives anything, is what orjson gives. True if json decoded it."""
    try:
        ours = lazyjson.by_json(line)
    except (ValueError, RecursionError, lazyjson._Unsure):
        return False  # orjson decides these lines
    try:
        theirs = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise AssertionError(f"json accepted {line[:80]!r}, which orjson refuses") from None
    assert same(ours, theirs), (line[:80], ours, theirs)
    return True


# where the standard library's json and orjson part ways, and the plain cases around them
EDGES = [
    b'{"a":1}', b' {"a" : [1, 2.5, -0.0, -0, true, false, null, "x"]} \r\n', b'{"a":1,"a":2,"b":3}',
    b'NaN', b'[Infinity]', b'{"x":-Infinity}', b'1e400', b'-1e400', b'1e-400', b'-1e-400', b'[1.7976931348623157e309]',
    b'2.2250738585072011e-308', b'4.9e-324', b'0.1', b'1E2', b'9007199254740993', b'9007199254740993.0',
    b'18446744073709551615', b'18446744073709551616', b'-9223372036854775808', b'-9223372036854775809',
    b'1' * 400, b'1' * 5000, b'"\\ud800"', b'"\\uDFFF x"', b'"\\ud83d\\ude00"', b'"\\ude00\\ud83d"', b'"\\u00e9\\u0000"',
    '"é 中文 \U0001f600"'.encode(), b'"\xff"', b'"\xed\xa0\x80"', b'\xef\xbb\xbf{}', '{}'.encode("utf-16"),
    '{"a":1}'.encode("utf-32-le"), b'{"a":"\x01"}', b'{"a":"\x7f"}', b'"\\x"', b'01', b'[1,]', b'{"a":1,}', b'', b'  ',
    b'\x0c{}', b'{}\x00', b'{} {}', b'"\\/"', b'[' * 1024 + b']' * 1024, b'[' * 1025 + b']' * 1025,
    b'{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/home/ana"}',
]


@pytest.mark.parametrize("line", EDGES, ids=range(len(EDGES)))
def test_json_decodes_a_line_only_as_orjson_does(line):
    check(line)


def test_nesting_past_orjson_limit_is_orjsons_even_when_json_could_go_deeper():
    deep = b'[' * 1100 + b']' * 1100  # orjson refuses more than 1,024 levels
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert not check(deep)
    finally:
        sys.setrecursionlimit(limit)


def test_transcript_lines_and_their_mutations_decode_alike():
    """Every line of the example transcripts, and thousands of random edits of them (bytes cut,
    doubled, replaced by JSON's own punctuation, escapes, digits, non-UTF-8 bytes)."""
    lines = [line for f in sorted(EXAMPLES.rglob("*.jsonl")) for line in f.read_bytes().splitlines() if line]
    assert len(lines) > 20
    assert sum(map(check, lines)) == len(lines)  # the fast path does take ordinary lines
    rng = random.Random(12)
    pieces = [b'"', b'\\', b'\\u', b'\\ud800', b'{', b'}', b'[', b']', b',', b':', b'1e999', b'NaN', b'-', b'.', b'0',
              b'99999999999999999999', b'\xff', b'\xed\xa0\x80', b'\x00', b'\x1f', b' ', b'1.5e-3', 'é'.encode()]
    accepted = 0
    for _ in range(4000):
        line = bytearray(rng.choice(lines)[:600])
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(line) + 1)
            op = rng.random()
            if op < 0.4:
                line[i:i] = rng.choice(pieces)
            elif op < 0.7:
                line[i:i + rng.randint(1, 4)] = b""
            else:
                line[i:i + 1] = rng.choice(pieces)
        accepted += check(bytes(line))
    assert accepted > 50  # some edits keep a valid line: the comparison is not only of refusals


def test_a_small_run_decodes_without_orjson_then_switches_for_good(monkeypatch):
    """Decoding goes to orjson, once and for all, when a process has decoded more than a small
    run does, or meets a line json cannot vouch for; what comes back is the same either way."""
    monkeypatch.setattr(lazyjson, "loads", lazyjson._small)
    monkeypatch.setattr(lazyjson, "_left", lazyjson.SMALL_RUN_BYTES)
    line = b'{"type":"message","id":"a1","n":' + b"1" * 30 + b'}'
    assert lazyjson.loads(b'{"a":[1,2]}') == {"a": [1, 2]} and lazyjson.loads is lazyjson._small
    assert lazyjson.loads(line) == orjson.loads(line) and lazyjson.loads is orjson.loads
    monkeypatch.setattr(lazyjson, "loads", lazyjson._small)
    with pytest.raises(lazyjson.JSONDecodeError) as refused:
        lazyjson.loads(b'{"a":NaN}')
    assert isinstance(refused.value, orjson.JSONDecodeError) and lazyjson.loads is orjson.loads
    monkeypatch.setattr(lazyjson, "loads", lazyjson._small)
    for _ in range(lazyjson.SMALL_RUN_BYTES // 1000 + 1):
        lazyjson.loads(b'{"t":"' + b"x" * 990 + b'"}')
    assert lazyjson.loads is orjson.loads


CURSOR_LIKE = [
    {"version": 2, "createdAtMs": 1764612345123, "files": {}},
    {"version": 2, "files": {"65024:2203658": {
        "path": "/home/ana/.openclaw/agents/main/sessions/" + "".join(map(chr, range(32))) + '"\\/\x7f é中\U0001f600'
                "\u2028\u2029.jsonl",
        "agent": "main", "format": None, "offset": 0, "pending": {"20261201-101500-a1b2c3": [0, 41, False]},
        "head": "a2dd71c1f24fd2fb18f652e7", "headLen": 41, "size": -1, "mtime": 1796148304098203047, "skip": True}}},
    {"n": [(1 << 63) - 1, -(1 << 63), (1 << 64) - 1, 0, -1], "e": [], "d": {}},
    {"version": 1, "agents": [{"agentId": "main", "messages": [{"ts": 1764612345123, "role": "user", "text": "a\nb",
                                                              "sessionId": None, "e": [[]], "d": {"x": {}}}]}]},
]
NOT_JSONS = [{"n": 1 << 64}, {"n": -(1 << 63) - 1}, {"f": 1e16}, {"f": 0.5}, {"s": "\ud800"}, {1: "a"},
             {"t": (1, 2)}, {"b": b"x"}]


@pytest.mark.parametrize("indent", [False, True])
@pytest.mark.parametrize("obj", CURSOR_LIKE + NOT_JSONS, ids=range(len(CURSOR_LIKE) + len(NOT_JSONS)))
def test_json_writes_a_small_cursor_or_batch_byte_for_byte_as_orjson_or_leaves_it_to_orjson(obj, indent):
    ours = lazyjson.by_json_dumps(obj, indent=indent)
    if obj in CURSOR_LIKE:
        assert ours == orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else 0)
    else:
        assert ours is None
