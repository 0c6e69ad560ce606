"""The ``distill`` command: one subcommand per function, global flags on every command.

Each ``distill/cli/<group>.py`` module has ``register(subparsers)``; its handlers take
``(settings, args)`` and return a result object that :func:`emit` prints as JSON (``--json``)
or as readable text (:mod:`distill.cli.render`, keyed by the result's type). Only the module of
the command being run is imported (``COMMANDS``), and modules here import nothing heavy at
import time (LanceDB, LLM SDKs, numpy): start-up is most of a no-op ``distill run``, and ``distill enqueue`` is an agent hook's fast path.
"""

from __future__ import annotations

import os
import sys

from ..errors import DistillError

TYPE_CHECKING = False  # the hook's fast path (`distill enqueue` imports this module): no typing
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable

# command -> the module under distill/cli/ whose register() adds it. A new command is one line
# here; --help and unknown commands import every module listed.
COMMANDS = {
    "init": "tails", "run": "tails", "commit": "tails", "abort": "tails", "status": "tails",
    "memories": "memories",
    "distill": "distill_cmd", "retry": "distill_cmd",
    "enqueue": "queue_cmds", "backfill": "queue_cmds",
    "mcp": "mcp_cmd",
    "hooks": "hooks_cmd",
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: just its command's module, or every module if that is unclear."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="distill",
        description="Distill agent session transcripts into a shared LanceDB memory.",
    )
    add_global_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    idx = command_index(argv) if argv is not None else None
    word = argv[idx] if argv is not None and idx is not None else None
    chosen = COMMANDS.get(word) if word is not None else None
    target = _Only(sub, word) if chosen and word is not None else sub
    for name in dict.fromkeys([chosen] if chosen else COMMANDS.values()):
        importlib.import_module(f"{__name__}.{name}").register(target)
    return parser


class _Only:
    """The subcommands when the one being run is known: only its parser is built. (argparse
    formats every flag as it is added, which costs more than ``distill status`` itself.)"""

    def __init__(self, sub: Any, name: str):
        self._sub, self._name = sub, name

    def add_parser(self, name: str, **kw: Any) -> Any:
        return self._sub.add_parser(name, **kw) if name == self._name else _Unused()


class _Unused:
    """Stands in for the parser of a command not being run: whatever is added to it is dropped."""

    def __getattr__(self, name: str) -> Callable[..., _Unused]:
        return lambda *args, **kw: self


GLOBAL_VALUE_FLAGS = ("--state-dir", "--agents-dir", "--db")


def command_index(argv: list[str]) -> int | None:
    """Position of the subcommand in ``argv`` (global flags may come before it)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in GLOBAL_VALUE_FLAGS:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i
    return None


def add_global_flags(parser: argparse.ArgumentParser) -> None:
    """Flags every command accepts; also accepted after the subcommand name."""
    parser.add_argument("--state-dir", help="state directory (cursor, batches, queue); env DISTILL_STATE_DIR")
    parser.add_argument("--agents-dir", help="OpenClaw agents folder; env DISTILL_AGENTS_DIR")
    parser.add_argument("--db", help="LanceDB directory; env DISTILL_DB")
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")


def command(sub: Any, name: str, handler: Callable[[Any, argparse.Namespace], Any], help: str) -> argparse.ArgumentParser:
    """Add a subcommand whose handler receives ``(settings, args)``."""
    p = sub.add_parser(name, help=help, description=help)
    if not isinstance(p, (_Defaults, _Unused)):  # the quick path reads the global flags itself
        add_global_flags_sub(p)
    p.set_defaults(handler=handler)
    return p


def quick_args(argv: list[str]) -> Any:
    """``argv`` parsed without argparse when it is global flags and a command given no flag of
    its own (``distill run``, ``distill --json status``): the command's arguments are the
    defaults its ``register()`` declares. None whenever argparse has something to say (help,
    an unknown or abbreviated flag, a required argument, a sub-action): then it parses.
    argparse's import, its messages' locale lookup and its help formatter (``shutil``) cost
    a tenth of a no-op ``run``."""
    import importlib
    from types import SimpleNamespace

    idx = command_index(argv)
    module = COMMANDS.get(argv[idx]) if idx is not None else None
    if module is None or idx is None:
        return None
    values = global_flags(argv, idx)
    if values is None:
        return None
    found = _Defaults(argv[idx])
    importlib.import_module(f"{__name__}.{module}").register(found)
    if found.defaults is None:
        return None
    return SimpleNamespace(command=argv[idx], **{**found.defaults, **values})


def global_flags(argv: list[str], idx: int) -> dict[str, Any] | None:
    """The global flags around the command at ``argv[idx]`` (``state_dir``, ``agents_dir``,
    ``db``: None if not given; ``json``), or None if anything else is there."""
    values: dict[str, Any] = {"state_dir": None, "agents_dir": None, "db": None, "json": False}
    rest = argv[:idx] + argv[idx + 1:]
    i = 0
    while i < len(rest):
        if rest[i] in GLOBAL_VALUE_FLAGS and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
            values[rest[i][2:].replace("-", "_")] = rest[i + 1]
            i += 2
        elif rest[i] == "--json":
            values["json"] = True
            i += 1
        else:
            return None
    return values


class _Defaults:
    """Stands in for the subcommands and the chosen command's parser in :func:`quick_args`:
    collects the defaults of the arguments ``register()`` adds; ``defaults`` becomes None at
    the first thing only argparse can settle."""

    _SUPPRESS = "==SUPPRESS=="  # argparse.SUPPRESS
    _IMPLIED = {"store": None, "store_true": False, "store_false": True}

    def __init__(self, name: str):
        self.name = name
        self.defaults: dict[str, Any] | None = None

    def add_parser(self, name: str, **kw: Any) -> Any:
        if name != self.name:
            return _Unused()
        self.defaults = {}
        return self

    def add_argument(self, *flags: str, **kw: Any) -> None:
        action = kw.get("action", "store")
        default = kw.get("default", self._IMPLIED.get(action))
        if (self.defaults is None or not flags[0].startswith("-") or kw.get("required")
                or action not in self._IMPLIED or (isinstance(default, str) and "type" in kw)):
            self.defaults = None
            return
        if default != self._SUPPRESS:
            long = next((f for f in flags if f.startswith("--")), flags[0])
            self.defaults[kw.get("dest") or long.lstrip("-").replace("-", "_")] = default

    def set_defaults(self, **kw: Any) -> None:
        if self.defaults is not None:
            self.defaults.update(kw)

    def __getattr__(self, name: str) -> Callable[..., _Unused]:  # add_subparsers, groups: argparse's
        def unsupported(*args: Any, **kw: Any) -> _Unused:
            self.defaults = None
            return _Unused()

        return unsupported


def add_global_flags_sub(parser: argparse.ArgumentParser) -> None:
    import argparse

    # SUPPRESS keeps a flag given before the subcommand from being reset to None after it
    parser.add_argument("--state-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--agents-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--db", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def settings_from_args(args: argparse.Namespace):
    from ..config import load_settings

    return load_settings(state_dir=args.state_dir, agents_dir=args.agents_dir, db=args.db)


def emit(result: Any, as_json: bool) -> None:
    """Print a handler's result: ``--json`` → one JSON object; otherwise its text from :mod:`.render`."""
    if result is not None:
        sys.stdout.write(emitted(result, as_json))


def emitted(result: Any, as_json: bool) -> str:
    """What :func:`emit` prints for ``result``."""
    if as_json:
        from ..model import encode_json

        data = result.model_dump(mode="json", by_alias=True) if hasattr(result, "model_dump") else result
        return encode_json(data).decode() + "\n"
    from .render import render

    text = render(result)
    return text + "\n" if text else ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    idx = command_index(argv)
    if idx is not None and argv[idx] == "enqueue":
        from ..enqueue import fast_main  # the hook's fast path: no parser tree, no msgspec

        fast = fast_main(argv)
        if fast is not None:
            return fast
    if idx is not None and argv[idx] == "run" and (flags := global_flags(argv, idx)) is not None:
        from ..tails.noopcheck import answer  # the stdlib no-op check: nothing changed, nothing to load

        as_json = flags.pop("json")
        noop = answer(flags, as_json)
        if noop is not None:
            return noop
    args = quick_args(argv) or build_parser(argv).parse_args(argv)
    try:
        settings = settings_from_args(args)
        result = args.handler(settings, args)
        emit(result, args.json)
        return int(getattr(result, "exit_code", 0) or 0)
    except DistillError as exc:
        if args.json:
            from ..model import encode_json

            sys.stdout.write(encode_json({"error": str(exc), "kind": type(exc).__name__}).decode() + "\n")
        print(f"distill: error: {exc}", file=sys.stderr)
        from .exitcodes import exit_code_of

        return exit_code_of(exc)
    except KeyboardInterrupt:
        print("distill: interrupted; nothing was committed past what is stored", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `distill run | head -1`: the reader left; the work itself is done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is quiet
        return 141  # what a shell reports for a program SIGPIPE ended


def entry() -> None:
    """The ``distill`` console script and ``python -m distill``. Tests call :func:`main`."""
    rc = main(sys.argv[1:])
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left before the output was flushed (see main)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rc = 141
    sys.exit(rc)


if __name__ == "__main__":  # pragma: no cover
    entry()
