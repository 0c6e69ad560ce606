"""orjson's results without importing orjson, for a run that decodes and writes little.

orjson decodes transcript lines (:func:`distill.sources.base.decode_line`) and writes the
cursor, but importing it costs ≈ 15 ms (its native init imports ``dataclasses`` →
``inspect``, ``uuid`` → ``platform``, ``datetime``): a quarter of a first ``distill run``
whose one transcript holds a session header. The standard library's ``json`` is loaded by
every run already. So until a process has decoded :data:`SMALL_RUN_BYTES` of lines, it
decodes them with ``json`` — but only where orjson is known to give the same value:

- the line is strict UTF-8 (orjson refuses invalid UTF-8 and encoded surrogates; ``json``
  given bytes would also read UTF-16/32, a BOM and surrogates) and holds no ``\\ud…`` escape
  (half a surrogate pair: orjson refuses it, ``json`` keeps it);
- every integer fits 64 bits (orjson reads a longer one as a float), every float is finite
  (orjson refuses ``1e400``, ``json`` reads infinity), no ``NaN`` / ``Infinity``;
- at most 1,000 brackets, so the nesting is within orjson's limit (1,024) and ``json``'s.

Anything else — and every line ``json`` refuses — goes to orjson, which is imported then and
decodes every later line of the process. So whether a line is accepted, and what it decodes
to, never depends on which decoder ran; a large run pays ``json``'s pace on its first
64 KiB only. :func:`dumps` is the same for writing a small object (the cursor of a few
files, a batch of a few messages): the bytes orjson would write, or orjson itself. ``tests/test_lazyjson.py`` compares
both with orjson.

Callers use ``lazyjson.loads(line)`` (an attribute lookup, as ``orjson.loads`` was): the
name is rebound to ``orjson.loads`` once orjson is in.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # not typing's: a run that reads a file need not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

# orjson.JSONDecodeError is a subclass: one except clause catches whichever decoder refused
JSONDecodeError = json.JSONDecodeError

SMALL_RUN_BYTES = 64 * 1024
_MAX_BRACKETS = 1000
_left = SMALL_RUN_BYTES


class _Unsure(Exception):
    """orjson might decode this line otherwise than ``json`` did: ask orjson."""


def _int(text: str) -> int:
    value = int(text)
    if not -(1 << 63) <= value < 1 << 64:
        raise _Unsure
    return value


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Unsure
    return value


def _constant(text: str) -> object:
    raise _Unsure  # NaN, Infinity, -Infinity: orjson refuses them


_decode = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant).decode


def _small(line: bytes) -> object:
    """``orjson.loads(line)``, by ``json`` while this process has decoded little."""
    global _left
    _left -= len(line)
    if _left >= 0:
        try:
            return by_json(line)
        except (_Unsure, ValueError, RecursionError):  # ValueError: not UTF-8, or not JSON
            pass
    return use_orjson()(line)


def by_json(line: bytes) -> object:
    """``line`` decoded by ``json`` as orjson would decode it; raises (``ValueError``, or an
    exception of this module's) where orjson might refuse it or decode it otherwise."""
    if type(line) is not bytes or b"\\ud" in line or b"\\uD" in line \
            or line.count(b"[") + line.count(b"{") > _MAX_BRACKETS:
        raise _Unsure
    return _decode(line.decode("utf-8"))


def use_orjson() -> Callable[[bytes], object]:
    """Import orjson and decode with it from now on (also before a fork: both processes read
    much, and share one import). Returns ``orjson.loads``."""
    global loads
    import orjson

    loads = orjson.loads
    return loads


loads: Callable[[bytes], object] = _small

def dumps(obj: object, *, small: bool, indent: bool = False) -> bytes:
    """``orjson.dumps(obj)``, compact or (``indent``) with ``OPT_INDENT_2``. ``small``: the
    caller knows ``obj`` is a few KiB (the cursor of a few files, a batch of a few messages);
    then, unless orjson is loaded anyway, ``json`` writes it (see :func:`by_json_dumps`)."""
    if small and "orjson" not in sys.modules:
        data = by_json_dumps(obj, indent=indent)
        if data is not None:
            return data
    import orjson

    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else 0)


def by_json_dumps(obj: object, *, indent: bool = False) -> bytes | None:
    """``orjson.dumps(obj)`` (``indent``: with ``OPT_INDENT_2``) by ``json`` if ``obj`` is only
    ``dict`` (string keys), ``list``, ``str``, 64-bit ``int``, ``bool`` and ``None``, which
    ``json`` writes byte for byte as orjson does; None for anything else (a float, whose digits
    the two write differently, a string that is not UTF-8): orjson's to write or refuse."""
    if not _plain(obj):
        return None
    try:
        if indent:
            return json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8")
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: orjson refuses it
        return None


def _plain(obj: object) -> bool:
    t = type(obj)
    if t is str or t is bool or obj is None:
        return True
    if t is int:
        return -(1 << 63) <= obj < 1 << 64  # type: ignore[operator]
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in obj.items())  # type: ignore[attr-defined]
    return t is list and all(map(_plain, obj))  # type: ignore[call-overload]
