"""Plain records: the settings and the results every command prints, with no library behind them.

Every command builds the settings and ``run`` / ``status`` print a result; importing msgspec
(it loads ``typing_extensions``, ``inspect``, ``uuid`` and ``decimal``) cost more than a no-op
``distill run`` itself, and pydantic more still. A :class:`Record` is a class whose
annotations are its fields (defaults are the class values, mutable ones copied per
instance); :func:`convert` builds one from JSON or configuration values and names the field
that is wrong, and :func:`to_builtins` writes one back under its JSON keys. Batch files and
chunk progress stay msgspec Structs (:mod:`distill.structs`): they load only when a batch is.

Annotations are kept as strings (``from __future__ import annotations`` in the defining
module) and resolved on first :func:`convert`, against the defining module; ``Literal``
there is only imported for the type checker, so ``typing`` never loads either.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import Invalid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MISSING = object()


def _camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


class Record:
    """Fields from the annotations; keyword-only ``__init__``, ``==`` and ``repr`` over them.
    ``camel=True`` in the class line: JSON keys are the camelCase of the attributes (a
    subclass keeps its parent's choice unless it says otherwise)."""

    _fields: dict[str, Any] = {}  # field -> default (_MISSING: required)
    _keys: dict[str, str] = {}  # field -> JSON key
    _types: dict[str, Any] | None = None  # field -> type, resolved on first convert()
    _camel: bool = False

    def __init_subclass__(cls, camel: bool | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        fields: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name in klass.__dict__.get("__annotations__", {}):
                if not name.startswith("_"):
                    fields[name] = klass.__dict__.get(name, _MISSING)
        cls._camel = cls._camel if camel is None else camel
        cls._fields = fields
        cls._keys = {n: _camel_case(n) if cls._camel else n for n in fields}
        cls._types = None

    def __init__(self, **values: Any) -> None:
        for name, default in self._fields.items():
            value = values.pop(name, default)
            if value is _MISSING:
                raise TypeError(f"{type(self).__name__}: missing required argument {name!r}")
            if value is default and type(value) in (list, dict):
                value = type(value)(value)
            setattr(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument {next(iter(values))!r}")
        self.__post_init__()

    def __post_init__(self) -> None:
        """Checks or normalises after ``__init__`` (raise ValueError: :func:`convert` names the field)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the Structs they replace

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._fields)})"

    def copy_with(self, **changes: Any) -> Any:
        """A copy with ``changes`` (not validated: the caller's values are typed)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name, value in changes.items():
            if name not in self._fields:
                raise TypeError(f"{type(self).__name__}: unexpected keyword argument {name!r}")
            setattr(new, name, value)
        new.__post_init__()
        return new


def as_dict(obj: Record) -> dict[str, Any]:
    """Attributes (snake_case) to values, one level deep."""
    return {n: getattr(obj, n) for n in obj._fields}


def to_builtins(obj: Any) -> Any:
    """``obj`` as plain JSON types, records under their JSON keys (msgspec Structs inside too)."""
    if isinstance(obj, Record):
        return {key: to_builtins(getattr(obj, name)) for name, key in obj._keys.items()}
    if isinstance(obj, dict):
        return {k: to_builtins(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_builtins(v) for v in obj]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if hasattr(obj, "__struct_fields__"):
        import msgspec

        return msgspec.to_builtins(obj, enc_hook=to_builtins)
    return obj


# --- building records from JSON or configuration values ------------------------------------

class _Choices(tuple):
    """``Literal["a", "b"]`` resolved without ``typing``."""


class _LiteralForm:
    def __getitem__(self, choices: Any) -> _Choices:
        return _Choices(choices if isinstance(choices, tuple) else (choices,))


class _Names(dict):
    """A module's names for resolving annotations, its lazy ones (module ``__getattr__``) too."""

    def __init__(self, module: Any):
        super().__init__(Literal=_LiteralForm(), Path=Path)
        self.module = module

    def __missing__(self, name: str) -> Any:
        try:
            return getattr(self.module, name)
        except AttributeError:
            raise KeyError(name) from None


def field_types(cls: type[Record], names: Any = None) -> dict[str, Any]:
    """The types of fields ``names`` (default: all), resolved once each: a field whose type is
    loaded lazily (``dict[str, DedupThresholds]``) costs nothing until a value for it comes."""
    types = cls.__dict__.get("_types")
    if types is None:
        types = {}
        cls._types = types
    for name in cls._fields if names is None else names:
        if name not in types:
            types[name] = _resolve(cls, name)
    return types


def annotation(cls: type[Record], name: str) -> str:
    """A field's annotation as written."""
    for klass in cls.__mro__:
        ann = klass.__dict__.get("__annotations__", {})
        if name in ann:
            return ann[name] if isinstance(ann[name], str) else repr(ann[name])
    raise KeyError(name)


def _resolve(cls: type[Record], name: str) -> Any:
    for klass in cls.__mro__:
        ann = klass.__dict__.get("__annotations__", {}).get(name)
        if ann is not None:
            module = sys.modules[klass.__module__]
            return eval(ann, vars(module), _Names(module)) if isinstance(ann, str) else ann
    raise KeyError(name)


# words the configuration takes for booleans (``DISTILL_WORKER_POLL=yes``), as pydantic's settings did
_BOOL_WORDS = {"true": True, "1": True, "on": True, "yes": True, "y": True, "t": True,
               "false": False, "0": False, "off": False, "no": False, "n": False, "f": False}
_NAMES = {int: "int", float: "float", bool: "bool", str: "str", dict: "object", list: "array"}


def _expected(type_: Any, value: Any) -> Invalid:
    got = {dict: "object", list: "array", type(None): "null"}.get(type(value), type(value).__name__)
    return Invalid(f"Expected `{_NAMES.get(type_, getattr(type_, '__name__', type_))}`, got `{got}`")


def convert(value: Any, type_: Any, lax: bool = False) -> Any:
    """``value`` (JSON types) as ``type_``; raises :class:`Invalid` naming where it is wrong.
    ``lax``: strings stand for numbers and booleans (configuration from the environment)."""
    if isinstance(type_, type) and issubclass(type_, Record):
        return _record(value, type_, lax)
    if type_ is int or type_ is float:
        if type(value) is int or (type_ is float and type(value) is float):
            return type_(value)
        if lax and isinstance(value, str):
            try:
                return type_(value)
            except ValueError:
                pass
        raise _expected(type_, value)
    if type_ is bool:
        if type(value) is bool:
            return value
        if lax and isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
            return _BOOL_WORDS[value.strip().lower()]
        raise _expected(bool, value)
    if type_ is str:
        if isinstance(value, str):
            return value
        raise _expected(str, value)
    if type_ is Path:
        if isinstance(value, (str, os.PathLike)):
            return Path(os.path.expanduser(os.fspath(value)))
        raise Invalid(f"expected Path, got {type(value).__name__}")
    if isinstance(type_, _Choices):
        if value in type_ and type(value) is str:
            return value
        raise Invalid(f"Invalid enum value {value!r}")
    if type_ is type(None):
        if value is None:
            return None
        raise _expected(type_, value)
    origin, args = getattr(type_, "__origin__", None), getattr(type_, "__args__", ())
    if origin is None and args:  # X | None
        if value is None and type(None) in args:
            return None
        return convert(value, next(a for a in args if a is not type(None)), lax)
    if origin is list or type_ is list:
        if not isinstance(value, list):
            raise _expected(list, value)
        if not args:
            return list(value)
        return [_at(convert, f"[{i}]", v, args[0], lax) for i, v in enumerate(value)]
    if origin is dict or type_ is dict:
        if not isinstance(value, dict):
            raise _expected(dict, value)
        if not args:
            return dict(value)
        return {convert(k, args[0], lax): _at(convert, f".{k}", v, args[1], lax) for k, v in value.items()}
    if hasattr(type_, "__struct_fields__"):  # a msgspec Struct (settings.thresholds)
        import msgspec

        try:
            return value if isinstance(value, type_) else msgspec.convert(value, type_, strict=not lax)
        except msgspec.ValidationError as exc:
            raise Invalid(str(exc).split(" - at `$", 1)[0]) from None
    if isinstance(type_, type) and isinstance(value, type_):
        return value
    raise TypeError(f"cannot convert to {type_!r}")


def _at(fn: Any, step: str, *args: Any) -> Any:
    try:
        return fn(*args)
    except Invalid as exc:
        exc.where = step.lstrip(".") + ("" if not exc.where else exc.where if exc.where.startswith("[")
                                        else "." + exc.where)
        raise


def _record(value: Any, cls: type[Record], lax: bool) -> Record:
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise _expected(dict, value)
    by_key = {k: n for n, k in cls._keys.items()}
    unknown = next((k for k in value if k not in by_key), None)
    if unknown is not None:
        raise Invalid(f"unknown field `{unknown}`")
    types = field_types(cls, [by_key[k] for k in value])
    values = {by_key[k]: _at(convert, "." + k, raw, types[by_key[k]], lax) for k, raw in value.items()}
    missing = [cls._keys[n] for n, d in cls._fields.items() if d is _MISSING and n not in values]
    if missing:
        raise Invalid(f"Object missing required field `{missing[0]}`")
    try:
        return cls(**values)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def decode_json(data: bytes, cls: type[Record]) -> Any:
    """A record from JSON bytes; raises :class:`Invalid` (bad JSON too)."""
    import json

    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise Invalid(f"JSON is malformed: {exc}") from None
    return _record(raw, cls, lax=False)


def encode_json(obj: Any) -> bytes:
    import json

    return json.dumps(to_builtins(obj), ensure_ascii=False, separators=(",", ":")).encode()
