"""``distill hooks install|uninstall claude-code|codex|openclaw``: wire an agent to distill.

Each agent module fills a :class:`Plan` — the files it would write, as text before and after
— computed from what is on disk, so installing twice changes nothing and ``--dry-run`` is
the same plan printed as a diff (:func:`apply` returns a :class:`HookResult`). Applying a plan keeps a backup of every existing file it
changes (``<file>.distill-backup-<UTC time>``) and records what it added in
``<state>/hooks/<agent>.json``; ``uninstall`` removes exactly those entries, and puts back the
original bytes when nothing else in the file changed since.

The agents' own files are edited with their own formats' care: JSON keeps key order and
indentation; TOML goes through ``tomlkit``, which round-trips comments, ordering and
formatting of everything we do not touch (``tomllib`` can only read).
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..atomic import write_bytes
from ..errors import ConfigError
from ..tails.state import StateDir

AGENTS = ("claude-code", "codex", "openclaw")


@dataclass
class Change:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: delete the file
    own_folder: bool = False  # the file's folder is ours: remove it when the file goes and it is empty

    def diff(self) -> str:
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        label = str(self.path)
        return "".join(difflib.unified_diff(a, b, f"{label} (now)" if self.before is not None else "/dev/null",
                                            f"{label} (after)" if self.after is not None else "/dev/null"))


@dataclass
class Plan:
    agent: str
    action: str
    changes: list[Change] = field(default_factory=list)
    added: dict[str, Any] = field(default_factory=dict)  # what install adds, for the manifest
    notes: list[str] = field(default_factory=list)

    def edit(self, path: Path, update: Callable[[str | None], str | None]) -> None:
        """Plan ``path``'s new text from its current text; nothing if it would not change."""
        before = path.read_text(encoding="utf-8") if path.is_file() else None
        after = update(before)
        if after != before:
            self.changes.append(Change(path, before, after))


@dataclass
class Context:
    """Where things are, and the command line the agents will run."""

    home: Path
    state_dir: Path
    config_file: Path  # distill's config.toml
    command: list[str]  # how to run distill (absolute path when found)
    env: dict[str, str]  # DISTILL_* the agents must pass on (state dir, db, agents dir, config): see context()
    home_given: bool = False  # --home / DISTILL_HOOKS_HOME: ignore CODEX_HOME

    def tilde(self, path: Path) -> str:
        """``~/…`` for a path under the real home (as a person writes it), else absolute."""
        real = Path.home()
        return f"~/{path.relative_to(real)}" if path.is_relative_to(real) and self.home == real else str(path)

    def shell(self, *args: str) -> str:
        """A shell command line for hooks that run through a shell (Claude Code)."""
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        line = " ".join(shlex.quote(a) for a in [*self.command, *args])
        return f"{prefix} {line}".strip()

    def argv(self, *args: str) -> list[str]:
        """The argv for hooks that run a program without a shell (Codex's ``notify``): the
        same environment, set by ``env``."""
        if not self.env:
            return [*self.command, *args]
        env = shutil.which("env") or "/usr/bin/env"
        return [env, *(f"{k}={v}" for k, v in sorted(self.env.items())), *self.command, *args]

    def manifest(self, agent: str) -> Path:
        return StateDir(self.state_dir).hook_manifest(agent)


def own_command() -> list[str]:
    """How an agent runs the distill this process is: the console script beside the running
    interpreter (a virtualenv's ``bin/distill``, found without that venv on the agent's PATH),
    else the one on PATH, else this interpreter with ``-m distill``; always absolute. The
    interpreter's path is kept as it is, not resolved: a venv's ``python`` is a link, and
    resolving it would leave the venv."""
    here = Path(os.path.abspath(sys.executable)).parent
    for name in ("distill", "distill.exe"):
        script = here / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    found = shutil.which("distill")
    return [os.path.abspath(found)] if found else [os.path.abspath(sys.executable), "-m", "distill"]


# where distill's own files are: passed on to the installed MCP server and hook as these variables
PASSED_ON = {"state_dir": "DISTILL_STATE_DIR", "db": "DISTILL_DB", "agents_dir": "DISTILL_AGENTS_DIR"}


def context(settings, home: str | None = None, command: str | None = None,
            flags: dict[str, str | None] | None = None) -> Context:
    """``flags``: the global ``--state-dir`` / ``--db`` / ``--agents-dir`` the install was run
    with. Each one given, or its ``DISTILL_*`` variable set (and ``DISTILL_CONFIG``), goes into
    the installed entries' environment as an absolute path — one rule for every agent (the
    hook's fast path and the server read the same variables) — so the hook queues into, and the
    server reads, what this install configured."""
    given = home or os.environ.get("DISTILL_HOOKS_HOME")
    home_dir = Path(os.path.expanduser(given or "~")).resolve()
    config = os.environ.get("DISTILL_CONFIG")
    argv = shlex.split(command) if command else own_command()
    env: dict[str, str] = {}
    for field_name, var in PASSED_ON.items():
        value = (flags or {}).get(field_name) or os.environ.get(var)
        if value:
            env[var] = os.path.abspath(os.path.expanduser(value))
    if config:
        env["DISTILL_CONFIG"] = os.path.abspath(os.path.expanduser(config))
    return Context(home=home_dir, state_dir=Path(settings.state_dir).absolute(),
                   config_file=Path(env["DISTILL_CONFIG"]) if config else
                   Path(settings.state_dir).absolute() / "config.toml",
                   command=argv, env=dict(sorted(env.items())), home_given=bool(given))


@dataclass
class HookResult:
    agent: str
    action: str
    dry_run: bool
    changed: list[str]
    backups: list[str]
    diff: str
    notes: list[str]

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self.__dict__.copy()


def plan_for(agent: str, action: str, ctx: Context) -> Plan:
    from . import claude_code, codex, openclaw

    module = {"claude-code": claude_code, "codex": codex, "openclaw": openclaw}[agent]
    plan = Plan(agent, action)
    if action == "install":
        module.install(plan, ctx)
    else:
        manifest = _read_manifest(ctx.manifest(agent))
        module.uninstall(plan, ctx, manifest)
        _restore_originals(plan, manifest, ctx.config_file)
    return plan


def apply(plan: Plan, ctx: Context, *, dry_run: bool) -> HookResult:
    diff = "".join(c.diff() for c in plan.changes)
    backups: dict[str, str | None] = {}
    if not dry_run:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for c in plan.changes:
            backups[str(c.path)] = None
            if c.before is not None and not c.own_folder:  # a file of our own hook folder needs none
                backup = c.path.with_name(f"{c.path.name}.distill-backup-{stamp}")
                shutil.copy2(c.path, backup)
                backups[str(c.path)] = str(backup)
            _write(c)
        _update_manifest(plan, ctx, backups)
    return HookResult(plan.agent, plan.action, dry_run, [str(c.path) for c in plan.changes],
                  [b for b in backups.values() if b], diff, plan.notes)


def _write(c: Change) -> None:
    if c.after is None:
        c.path.unlink(missing_ok=True)
        if c.own_folder and not any(c.path.parent.iterdir()):
            c.path.parent.rmdir()
        return
    mode = stat.S_IMODE(c.path.stat().st_mode) if c.path.exists() else 0o644
    write_bytes(c.path, c.after.encode("utf-8"))
    os.chmod(c.path, mode)


# ---------------------------------------------------------------- manifest: what install added, and the originals
def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path} ({exc}); remove it and undo the hook by hand") from exc
    return data if isinstance(data, dict) else {}


def _update_manifest(plan: Plan, ctx: Context, backups: dict[str, str | None]) -> None:
    path = ctx.manifest(plan.agent)
    if plan.action == "uninstall":
        path.unlink(missing_ok=True)
        return
    if not plan.changes:
        return
    data = _read_manifest(path)
    for key, value in plan.added.items():
        if isinstance(value, list):
            data[key] = sorted(set(data.get(key) or []) | set(value))
        else:
            data.setdefault(key, value)
    originals = data.setdefault("originals", {})
    for file, backup in backups.items():
        originals.setdefault(file, backup)  # the first install's original is the one to go back to
    write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def _restore_originals(plan: Plan, manifest: dict[str, Any], own_config: Path) -> None:
    """Where uninstalling leaves a file equal, as data, to what it was before install, put back
    its original bytes (formatting and all); a file install created and that is now empty goes.

    distill's own ``config.toml`` left blank (not even a comment) goes too, unless it was blank
    before this install: one agent's install may have created it and another's found it there
    (``hooks install claude-code`` then ``codex``), so the last uninstall to run holds a backup
    of the first's entries, not of anything a person wrote, and the file would stay as 0 bytes."""
    originals = manifest.get("originals") or {}
    for c in plan.changes:
        if c.after is None or str(c.path) not in originals:
            continue
        backup = originals[str(c.path)]
        original = None
        if backup is None:
            if _empty_data(c.path, c.after):
                c.after = None
                continue
        elif Path(backup).is_file():
            original = Path(backup).read_text(encoding="utf-8")
            if _same_data(c.path, c.after, original):
                c.after = original
        if c.path == own_config and not c.after.strip() and not (original is not None and not original.strip()):
            c.after = None


def _parse(path: Path, text: str) -> Any:
    if path.suffix == ".toml":
        import tomllib

        return tomllib.loads(text)
    return json.loads(text) if text.strip() else {}


def _same_data(path: Path, a: str, b: str) -> bool:
    try:
        return _parse(path, a) == _parse(path, b)
    except ValueError:
        return a == b


def _empty_data(path: Path, text: str) -> bool:
    def empty(v: Any) -> bool:
        return v in ({}, []) or (isinstance(v, dict) and all(empty(x) for x in v.values()))

    try:
        return empty(_parse(path, text))
    except ValueError:
        return False


# ---------------------------------------------------------------- JSON files
def load_json(text: str | None, path: Path) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it, or edit it by hand as docs/mcp.md shows") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; edit it by hand as docs/mcp.md shows")
    return data


def dump_json(data: dict[str, Any], like: str | None) -> str:
    """JSON in the file's own indentation (2 spaces for a new file)."""
    indent = 2
    if like:
        for line in like.splitlines()[1:]:
            stripped = line.lstrip(" ")
            if stripped and len(line) != len(stripped):
                indent = len(line) - len(stripped)
                break
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- distill's own config: the transcript root
def add_source(plan: Plan, ctx: Context, root: dict[str, str]) -> None:
    """Add a ``[[sources]]`` root so ``distill enqueue`` accepts this agent's transcripts."""
    import tomlkit

    def update(before: str | None) -> str | None:
        doc = tomlkit.parse(before or "")
        sources = doc.get("sources")
        wanted = os.path.expanduser(root["path"])
        for src in sources or []:
            if os.path.expanduser(str(src.get("path", ""))) == wanted:
                return before  # the user has this root already: leave it as it is
        if sources is None:
            sources = tomlkit.aot()
            doc["sources"] = sources
        table = tomlkit.table()
        for k, v in root.items():
            table[k] = v
        sources.append(table)
        plan.added.setdefault("sources", []).append(root["path"])
        return tomlkit.dumps(doc)

    plan.edit(ctx.config_file, update)


def remove_sources(plan: Plan, ctx: Context, manifest: dict[str, Any]) -> None:
    import tomlkit

    ours = set(manifest.get("sources") or [])
    if not ours or not ctx.config_file.is_file():
        return

    def update(before: str | None) -> str | None:
        doc = tomlkit.parse(before or "")
        sources = doc.get("sources")
        if sources is None:
            return before
        keep = [s for s in sources if str(s.get("path", "")) not in ours]
        if len(keep) == len(sources):
            return before
        if keep:
            while len(sources) > len(keep):
                for i, s in enumerate(sources):
                    if str(s.get("path", "")) in ours:
                        del sources[i]
                        break
        else:
            del doc["sources"]
        return tomlkit.dumps(doc)

    plan.edit(ctx.config_file, update)
