"""Find the transcripts to read, and whose they are.

Two kinds of roots:
- OpenClaw's ``<agents_dir>/<agentId>/sessions/*.jsonl``: the agent id is the folder name;
- each configured ``sources`` root (Claude Code, Codex CLI, another tree): its own agent id,
  format and glob.

Only agents that ``settings.agent_is_read`` accepts are listed (never the distiller itself;
the allow-list narrows the rest; ids outside ``[A-Za-z0-9._-]{1,64}`` are ignored).
Archive names (``*.jsonl.reset.*``, ``*.jsonl.deleted.*``, ``*.lock``) are skipped, except
OpenClaw's archived sessions when ``settings.read_archives`` is on (backfill turns it on). This is
stat-only — no file is opened here — so that a run over 10,000 unchanged files stays cheap.

What cannot be listed is counted and named in ``errors``, never raised: a folder that cannot be
listed (``folder_unreadable``: no permission, a symlink loop, at any level), a root that is not
there (``root_missing``; a warning too unless it is the default ``agents_dir``), a file name
that is not UTF-8 (``file_name_not_utf8``: the cursor and batch files, JSON, cannot record it),
a source's glob that fails (``glob_invalid``; settings refuse one that :func:`glob_problem`
rejects, so this is the last guard). One root's trouble never stops the others.

Which root holds a path is written once, in :func:`distill.tails.owners.holders`, for two
callers with different needs: :func:`classify` names the one transcript the daemon's task
points at as a walk would list it (paths as given, ``abspath``; the first root that accepts
it), and :mod:`distill.roots` checks an untrusted task's path (symlinks resolved,
``realpath``; every root that holds it, so that an ambiguous path is refused).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections import Counter, namedtuple
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from .owners import holders

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from ..config import Settings

OPENCLAW_FORMAT = "openclaw"
GLOB_RULE = ("a [[sources]] glob is a non-empty pattern relative to its root, '/'-separated, without "
             "'.' or '..' parts, with '**' only as a whole part (e.g. \"**/*.jsonl\", \"sessions/*.jsonl\")")


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a source root's glob, or None if it can (checked when settings
    load, so a bad one is a configuration error, not a walk that stops)."""
    if not isinstance(pattern, str) or not pattern:
        return "it is empty"
    if pattern.startswith(("/", "~")) or os.path.isabs(pattern):
        return "it is not relative to the root"
    if "\0" in pattern:
        return "it holds a NUL byte"
    for part in pattern.split("/"):
        if part in ("", ".", ".."):
            return "it has an empty part" if not part else f"it has a {part!r} part"
        if "**" in part and part != "**":
            return "'**' is not a whole part"
    return None


class SessionFile(namedtuple("SessionFile", "path agent format st")):
    """``path``, ``agent``, ``format`` (a format name, or "auto": detect from the first line),
    ``st`` (its ``os.stat_result``)."""

    __slots__ = ()

    @property
    def key(self) -> str:
        st = self.st
        return f"{st.st_dev}:{st.st_ino}"


def discover(settings: Settings, counters: Counter | None = None, errors: list[str] | None = None,
             seen: list[Looked | None] | None = None) -> Iterator[SessionFile]:
    """Every readable transcript under the configured roots (duplicates by inode removed).

    A folder that cannot be listed (no permission, a symlink loop) is counted
    (``folder_unreadable``) and named in ``errors``; every other folder is still read.
    Every root is listed before the first file is given (``counters`` and ``errors`` are
    complete by then): lists, not a chain of generators, are what keeps the per-file cost of
    a no-op run over 10,000 files down.

    ``seen``: also every folder looked at, as :class:`Looked`, so that the no-op check
    (:mod:`distill.tails.noopcheck`) can tell later whether a listing would come out the same;
    ``None`` for a root it cannot describe (a ``[[sources]]`` glob is pathlib's to walk)."""
    replay = _replay.get()
    if replay is not None and replay[0] is settings:
        return iter(replay[1])
    counters = counters if counters is not None else Counter()
    errors = errors if errors is not None else []
    return iter(_unique(_all(settings, counters, errors, seen)))


class Looked(namedtuple("Looked", "folder names candidates")):
    """A folder discovery looked at: ``names`` as ``os.listdir`` gave them (None: there was no
    such folder), and ``candidates``: each name it took for a transcript's, with its
    ``os.stat_result`` (None: the stat failed). Whether a name is a transcript's follows from
    the name and the settings alone, so the same names, stats and settings list the same files."""

    __slots__ = ()


def _unique(found: list[SessionFile]) -> list[SessionFile]:
    """``found`` with each file once, at its first place: the same file can be reached twice
    (a symlink, overlapping roots). Distinct inode numbers, the usual case, settle it in one
    pass; otherwise files are told apart by device and inode."""
    if len({sf[3].st_ino for sf in found}) == len(found):
        return found
    seen: set[tuple[int, int]] = set()
    out = []
    for sf in found:
        st = sf[3]
        ident = (st.st_dev, st.st_ino)
        if ident not in seen:
            seen.add(ident)
            out.append(sf)
    return out


_replay: ContextVar[tuple[object, list[SessionFile]] | None] = ContextVar("distill_discovered", default=None)


class replaying:
    """``with replaying(settings, found):`` — within the block, :func:`discover` for
    ``settings`` yields ``found`` (what the caller has just discovered, cleanly) instead of
    listing and stat'ing every file again: the batch ledger discovers once for its no-op
    digest, then walks. ``found`` None: discover as usual. (A class: contextlib would be an
    import of every run for this alone.)"""

    def __init__(self, settings: Settings, found: list[SessionFile] | None):
        self._replay = (settings, found) if found is not None else None

    def __enter__(self) -> None:
        self._token = _replay.set(self._replay) if self._replay is not None else None

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _replay.reset(self._token)


def _all(settings: Settings, counters: Counter, errors: list[str],
         seen: list[Looked | None] | None) -> list[SessionFile]:
    found = openclaw_files(settings, counters, errors, seen)
    for root in settings.sources:
        if settings.agent_is_read(root.agent_id):
            found += source_files(root.path, root.glob, root.agent_id, root.format, counters, errors)
            if seen is not None:
                seen.append(None)
    return found


def _unreadable(folder: str | Path, exc: OSError, counters: Counter, errors: list[str]) -> None:
    counters["folder_unreadable"] += 1
    errors.append(f"{folder} cannot be listed ({exc.strerror or exc}): its transcripts were skipped this run; "
                  "fix its permissions (or the symlink) and they are read on the next run")


def _root_missing(what: str, folder: str | Path, exc: OSError, counters: Counter, errors: list[str] | None,
                  *, warn: bool) -> None:
    counters["root_missing"] += 1
    if warn and errors is not None:
        why = "is not a folder" if isinstance(exc, NotADirectoryError) else "does not exist"
        errors.append(f"{what} {printable(folder)} {why}: no transcript was read from it; "
                      "fix the path (or create the folder) and the next run reads it")


def _bad_name(path: str, counters: Counter, errors: list[str] | None) -> None:
    counters["file_name_not_utf8"] += 1
    if errors is not None:
        errors.append(f"{printable(path)}: its name is not valid UTF-8, which the cursor and batch files cannot "
                      "record, so it is skipped; rename it (UTF-8 only) and it is read on the next run")


def printable(path: str | os.PathLike) -> str:
    """A path as a person can read it: bytes that are not UTF-8 as ``\\xff`` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode()
    except UnicodeEncodeError:  # os.listdir's surrogateescape: a byte that is not UTF-8
        return False
    return True


def openclaw_files(settings: Settings, counters: Counter, errors: list[str] | None = None,
                   seen: list[Looked | None] | None = None) -> list[SessionFile]:
    errors = errors if errors is not None else []
    seen = seen if seen is not None else []
    out: list[SessionFile] = []
    top = os.path.abspath(settings.agents_dir)
    try:
        agents = list(os.scandir(top))
    except (FileNotFoundError, NotADirectoryError) as exc:
        # the default (~/.openclaw/agents) may well be absent (no OpenClaw here): only a path
        # someone gave (--agents-dir, DISTILL_AGENTS_DIR, config.toml) is worth a warning
        _root_missing("agents_dir", top, exc, counters, errors, warn="agents_dir" in settings.given)
        return out
    except OSError as exc:
        _unreadable(top, exc, counters, errors)
        return out
    seen.append(Looked(top, [e.name for e in agents], []))
    for agent_dir in sorted(agents, key=lambda e: e.name):
        agent = agent_dir.name
        if not settings.agent_is_read(agent):
            continue
        folder = os.path.join(agent_dir.path, "sessions")
        try:
            if not agent_dir.is_dir():
                seen.append(Looked(folder, None, []))
                continue
        except OSError as exc:  # a symlink loop, a link into a folder that cannot be searched
            _unreadable(agent_dir.path, exc, counters, errors)
            continue
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            seen.append(Looked(folder, None, []))
            continue
        except OSError as exc:
            _unreadable(folder, exc, counters, errors)
            continue
        try:
            out += _sessions(settings, agent, folder, fd, counters, errors, seen)
        except OSError as exc:
            _unreadable(folder, exc, counters, errors)
        finally:
            os.close(fd)
    return out


def _sessions(settings: Settings, agent: str, folder: str, fd: int, counters: Counter,
              errors: list[str], seen: list[Looked | None]) -> list[SessionFile]:
    """One agent's sessions folder, open as ``fd``: the per-file loop of every no-op run, kept
    tight (a list, not a generator; names stat'ed relative to the folder, which spares the
    kernel the whole path)."""
    prefix = folder + "/"
    out: list[SessionFile] = []
    names = os.listdir(fd)
    candidates: list[tuple[str, os.stat_result | None]] = []
    seen.append(Looked(folder, names, candidates))
    add, took, stat_, new, regular = out.append, candidates.append, os.stat, tuple.__new__, stat.S_IFREG
    for name in sorted(names):
        if ".jsonl." in name and _is_archive(name):
            if not (settings.read_archives and _is_archived_session(name)):
                continue
        elif not name.endswith(".jsonl"):
            continue
        try:
            st = stat_(name, dir_fd=fd)
        except OSError:
            took((name, None))
            continue  # vanished between listing and stat, or a dangling link
        took((name, st))
        if st.st_mode & 0o170000 == regular:
            if not name.isascii() and not _utf8(prefix + name):
                _bad_name(prefix + name, counters, errors)
                continue
            add(new(SessionFile, (prefix + name, agent, OPENCLAW_FORMAT, st)))
    return out


def source_files(root: Path, pattern: str, agent: str, fmt: str, counters: Counter,
                 errors: list[str] | None = None) -> Iterator[SessionFile]:
    errors = errors if errors is not None else []
    root = root.absolute()
    try:
        os.scandir(root).close()
    except (FileNotFoundError, NotADirectoryError) as exc:
        _root_missing(f"[[sources]] root of agent {agent}:", root, exc, counters, errors, warn=True)
        return
    except OSError as exc:
        _unreadable(root, exc, counters, errors)
        return
    try:
        paths = sorted(root.glob(pattern))
    except OSError as exc:
        _unreadable(root, exc, counters, errors)
        return
    except (ValueError, NotImplementedError) as exc:  # settings validate globs; this is the last guard
        counters["glob_invalid"] += 1
        errors.append(f"[[sources]] root {printable(root)} (agent {agent}): glob {pattern!r} cannot be used ({exc}); "
                      f"its transcripts were skipped; {GLOB_RULE}")
        return
    for p in paths:
        if (".jsonl." in p.name or p.name.endswith(".lock")) and _is_archive(p.name):
            continue
        st = _regular_stat(str(p))
        if st is not None:
            if not _utf8(str(p)):
                _bad_name(str(p), counters, errors)
                continue
            yield SessionFile(str(p), agent, fmt, st)


def classify(settings: Settings, path: str | os.PathLike) -> SessionFile | None:
    """The one transcript at ``path`` as :func:`discover` would list it, without walking the
    roots (the daemon's per-session task); None if discovery would not list it as given."""
    p = os.path.abspath(path)
    name = os.path.basename(p)
    if _is_archive(name) or not _utf8(p):  # a name the cursor cannot record: the walk reports it
        return None
    roots = [(str(r.path), r.agent_id) for r in settings.sources]
    for agent, i, rel in holders(p, str(settings.agents_dir), roots, os.path.abspath):
        if i < 0:
            if not name.endswith(".jsonl"):
                continue
            if not settings.agent_is_read(agent):
                return None
            fmt = OPENCLAW_FORMAT
        else:
            if not settings.agent_is_read(agent) or not _glob_match(rel, settings.sources[i].glob):
                continue
            fmt = settings.sources[i].format
        st = _regular_stat(p)
        return SessionFile(p, agent, fmt, st) if st else None
    return None


def _glob_match(rel: list[str], pattern: str) -> bool:
    parts = pattern.split("/")
    if parts[0] == "**":
        return fnmatch.fnmatchcase(rel[-1], parts[-1]) and (
            len(parts) == 2 or _glob_match(rel[-(len(parts) - 1):], "/".join(parts[1:])))
    return len(rel) == len(parts) and all(fnmatch.fnmatchcase(r, q) for r, q in zip(rel, parts))


def _is_archive(name: str) -> bool:
    # imported here: the formats (and their regexes) load only when a name looks like an archive
    from ..sources import is_archive_name

    return is_archive_name(name)


def _is_archived_session(name: str) -> bool:
    from ..sources import is_archived_session

    return is_archived_session(name)


def _regular_stat(path: str) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # vanished between listing and stat, or a dangling link
    return st if stat.S_ISREG(st.st_mode) else None


def archive_of(path: str, key: str) -> str | None:
    """Where a tracked file went if it was renamed to a ``.reset.`` / ``.deleted.`` archive."""
    folder, name = os.path.split(path)
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return None
    for e in entries:
        n = e.name
        if n.startswith(name + ".reset.") or n.startswith(name + ".deleted."):
            try:
                st = e.stat()
            except OSError:
                continue
            if f"{st.st_dev}:{st.st_ino}" == key:
                return e.path
    return None
