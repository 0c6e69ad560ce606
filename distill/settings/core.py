"""The one precedence implementation, and the agent rules, in the standard library only.

Highest first: command-line flags, the environment (``DISTILL_<FIELD>``, case-insensitive,
plus ``OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS`` as in the script this replaces),
``config.toml`` (``DISTILL_CONFIG``, else ``<state_dir>/config.toml``), the defaults. Each
layer gives a field's whole value (no merging of lists or tables across layers).

This module gathers raw values; it does not validate them. The full settings
(:class:`distill.config.Settings`, a msgspec Struct that validates them) and
the hook's slice (:class:`distill.settings.hook.HookConfig`, plain checks: ``distill enqueue``
runs at every session end) are both built from :func:`gather`, so they cannot disagree on where a value
comes from.
"""

from __future__ import annotations

import os
import stat
import zlib

from ..errors import ConfigError

_HOME = os.path.expanduser("~")
DEFAULT_STATE_DIR = os.path.join(_HOME, ".openclaw", "state", "jsonl-distill")
DEFAULT_AGENTS_DIR = os.path.join(_HOME, ".openclaw", "agents")
DEFAULT_DB = os.path.join(_HOME, ".openclaw", "memory", "lancedb-pro")
DEFAULT_DISTILLER = "memory-distiller"

AGENT_ID_RULE = "1-64 characters from [A-Za-z0-9._-]"
_AGENT_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def is_agent_id(value: object) -> bool:
    """Whether ``value`` is an agent id (:data:`AGENT_ID_RULE`): it names folders and scopes.
    A set of characters, not a regex: ``re`` (with ``enum``) was a third of the hook's start-up."""
    return isinstance(value, str) and 0 < len(value) <= 64 and _AGENT_ID_CHARS.issuperset(value)

ALLOW_LIST_ENV = "OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS"
# environment names per field beyond DISTILL_<FIELD>, in the order they win
EXTRA_ENV = {"allowed_agent_ids": (ALLOW_LIST_ENV,)}
# paths in config.toml are relative to the file's folder (so a state dir can carry its own transcripts)
TOML_PATH_KEYS = ("state_dir", "agents_dir", "db")


def gather(names, *, json_names=(), flags: dict | None = None, strict: bool = False) -> tuple[dict, str]:
    """Raw values of the fields ``names`` that some layer sets, and the config file's path.

    ``flags``: command-line values (None = not given). ``json_names``: fields whose
    environment value is JSON (lists and tables). ``strict``: also return unknown keys of
    flags and ``config.toml``, so that the model validating the values refuses a typo."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = {k.lower(): v for k, v in os.environ.items()}
    state_dir = flags.get("state_dir") or env.get("distill_state_dir")
    config_path = config_file(state_dir)
    toml = read_toml(config_path)
    values = {}
    for name in names:
        if name in flags:
            values[name] = flags[name]
            continue
        env_name = next((n for n in ("distill_" + name, *(e.lower() for e in EXTRA_ENV.get(name, ())))
                         if n in env), None)
        if env_name is not None:
            values[name] = _decode_env(env_name, env[env_name]) if name in json_names else env[env_name]
        elif name in toml:
            values[name] = toml[name]
    if strict:
        values.update((k, v) for layer in (toml, flags) for k, v in layer.items() if k not in names)
    for key in TOML_PATH_KEYS:
        if isinstance(values.get(key), (str, os.PathLike)):
            values[key] = os.path.expanduser(os.fspath(values[key]))
    if "state_dir" in names:
        where = ("--state-dir" if "state_dir" in flags else "DISTILL_STATE_DIR" if "distill_state_dir" in env
                 else f"state_dir in {config_path}" if "state_dir" in toml else "the default state directory")
        check_state_dir(values.get("state_dir", DEFAULT_STATE_DIR), where)
    return values, config_path


def inputs_key(flags: dict, config_path: str) -> int:
    """A checksum of everything :func:`gather` decides from: the flags given, every ``DISTILL_*``
    variable and the allow-list's (any case), ``$HOME`` (``~``), the working folder (relative
    paths) and the config file's path and stat. Equal keys, equal settings: the no-op check
    (:mod:`distill.tails.noopcheck`) compares it instead of building the settings. A CRC-32:
    the values hold API keys, and it only has to notice a change."""
    try:
        st = os.stat(config_path)
        config = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        config = None
    names = ("distill_", *(e.lower() for extra in EXTRA_ENV.values() for e in extra))
    env = sorted((k.lower(), v) for k, v in os.environ.items() if k.lower().startswith(names))
    given = sorted((k, repr(v)) for k, v in flags.items() if v is not None)
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the working folder was removed
        cwd = None
    raw = repr((given, env, os.environ.get("HOME"), cwd, config_path, config))
    return zlib.crc32(raw.encode("utf-8", "surrogatepass"))


def check_state_dir(state_dir, where: str) -> None:
    """Refuse a state directory that is a file (or lies under one): every command would fail on
    it with an OS error from wherever it first touched it. A missing one is fine (created when
    written). One ``stat``: the hook's fast path pays it too."""
    if not isinstance(state_dir, (str, os.PathLike)):
        return  # a wrong type: the settings model names it
    try:
        st = os.stat(state_dir)
    except NotADirectoryError:
        what = "lies inside a file"
    except OSError:
        return
    else:
        if stat.S_ISDIR(st.st_mode):
            return
        what = "is a file, not a folder"
    how = "--state-dir or DISTILL_STATE_DIR" if where.startswith("the default") else where.split(" in ")[0]
    raise ConfigError(f"{where} {os.fspath(state_dir)} {what}: point {how} at a folder (it is created if "
                      "missing), or move the file away")


def config_file(state_dir: str | os.PathLike | None) -> str:
    config = os.environ.get("DISTILL_CONFIG")
    if config:
        path = os.path.expanduser(config)
        if not os.path.isfile(path):
            raise ConfigError(f"DISTILL_CONFIG points at {path}, which is not a file")
        return path
    base = os.path.expanduser(os.fspath(state_dir)) if state_dir else DEFAULT_STATE_DIR
    return os.path.join(base, "config.toml")


def read_toml(path: str) -> dict:
    """``config.toml`` (``{}`` if absent), with relative paths resolved against its folder."""
    if not os.path.isfile(path):
        return {}
    import tomllib

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    base = os.path.dirname(path)
    for key in TOML_PATH_KEYS:
        if isinstance(data.get(key), str):
            data[key] = _resolve(base, data[key])
    for src in data.get("sources") or []:
        if isinstance(src, dict) and isinstance(src.get("path"), str):
            src["path"] = _resolve(base, src["path"])
    return data


def _resolve(base: str, value: str) -> str:
    p = os.path.expanduser(value)
    return p if os.path.isabs(p) or "://" in p else os.path.realpath(os.path.join(base, p))


def _decode_env(name: str, raw: str):
    import json

    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"environment variable {name.upper()} is not valid JSON ({exc})") from None


# --- which agents are read (the full settings and the hook's checks both ask here) ----------

def allow_list(raw: str) -> frozenset[str] | None:
    """None means every agent (unset, empty, ``*`` or ``all``)."""
    raw = raw.strip()
    if raw in ("", "*", "all"):
        return None
    return frozenset(a.strip() for a in raw.split(",") if a.strip())


def agent_refusal(agent_id: str, distiller_agent_id: str, allowed_agent_ids: str) -> str | None:
    """Why this agent's sessions are not read, or None. The distiller never reads itself; the
    allow-list narrows the rest."""
    if not is_agent_id(agent_id):
        return f"agent id {agent_id!r} is not valid: use {AGENT_ID_RULE}"
    if agent_id == distiller_agent_id:
        return (f"agent {agent_id!r} is the distiller's own agent (distiller_agent_id), "
                "whose sessions are never read")
    allowed = allow_list(allowed_agent_ids)
    if allowed is not None and agent_id not in allowed:
        return (f"agent {agent_id!r} is not in the allow-list {ALLOW_LIST_ENV} "
                f"({', '.join(sorted(allowed))}); add it there to distill its sessions")
    return None
