"""The no-op check: ``distill run`` answered in the standard library, before the core loads,
when nothing changed since a run that found nothing.

Why a second path (the one exception beside the hook's, ``distill enqueue``): a no-op ``run``
over 10,000 files is what an hourly cron pays for nothing, and its target is 150 ms. The core
cannot get there with ordinary imports: loading it costs 170 M instructions (msgspec alone
130 M: it imports ``typing_extensions``, hence ``inspect``, ``ast``, ``dis``), stat'ing 10,000
files another 110 M, against 36 M for ``python -c pass`` (callgrind; docs/tails.md has the
figures). This check pays only for the stat'ing.

What decides a no-op stays written once, in the core: after a ``run`` that found nothing to
read, nothing pending and nothing to report, the batch ledger
(:func:`distill.tails.ledger.create_batch`) calls :func:`record`, which keeps in
``cursor.check`` every folder discovery looked at with the names it listed, the stat of each
file it took for a transcript, the stat of the cursor and of ``batches/``, the checksum of
what decides the settings (:func:`distill.settings.core.inputs_key`), and what the run
printed and wrote to ``last-run.json``, with its seconds and time left open. :func:`answer`
only compares: the same names in every folder, the same stats, the same inputs and the same
distill mean the walk would read nothing (it opens no file whose stat matches its cursor
entry) and find nothing, so it prints those lines with its own seconds, writes the last run
and returns. Anything else — a new, grown, renamed, truncated or vanished file, a new folder,
a pending batch (cutting one saves the cursor), a commit, abort or init, another setting —
hands the command to the full run, which reports it (and records again).

Two things the full no-op does are left to the next full run: pruning old batch files (a run
that finds nothing makes none), and the state lock: the check writes nothing but
``last-run.json``, which the full run too writes after letting the lock go; a run, commit or
init in another process that changes the cursor after the check compared it is simply later
than this no-op.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from .. import __version__
from ..atomic import write_bytes
from ..settings.core import DEFAULT_STATE_DIR, gather, inputs_key
from .state import StateDir

_VERSION = 2
# stand-ins for what changes from run to run, so the core's own printing makes the templates:
# the run's seconds (as the summary line and the JSON show them) and the last run's time
STAND_IN_SECONDS, STAND_IN_AT_MS = 86400.125, 1234567890123


def numbers(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a stat is compared by: type and mode, device, inode, size, mtime."""
    return st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def probe(path: str | os.PathLike[str]) -> tuple[int, int, int, int, int] | None:
    try:
        return numbers(os.stat(path))
    except OSError:
        return None


def _shown(slot: str, value: float) -> str:
    return f"{value:.2f}" if slot == "seconds_text" else repr(value) if slot == "seconds_json" else str(value)


def template(text: str, stand_ins: dict[str, float]) -> list[str] | None:
    """``text`` as pieces around slots (odd places hold a slot's name), each slot where its
    stand-in value (``_SECONDS``, ``_AT_MS``) was printed; None unless each appears once."""
    pieces = [text]
    for slot, value in stand_ins.items():
        shown = _shown(slot, value)
        at = [i for i in range(0, len(pieces), 2) if shown in pieces[i]]
        if len(at) != 1 or pieces[at[0]].count(shown) != 1:
            return None
        before, _, after = pieces[at[0]].partition(shown)
        pieces[at[0]:at[0] + 1] = [before, slot, after]
    return pieces


def fill(pieces: list[str], values: dict[str, float]) -> str:
    return "".join(p if i % 2 == 0 else _shown(p, values[p]) for i, p in enumerate(pieces))


def templates(stand_in: tuple[str, str, str], real: tuple[str, str, str], seconds: float,
              at_ms: int) -> list[list[str]] | None:
    """The run's text, its JSON line and its ``last-run.json`` as templates: ``stand_in`` is
    what the core prints and writes with :data:`STAND_IN_SECONDS` and :data:`STAND_IN_AT_MS`,
    ``real`` what it does with this run's ``seconds`` and ``at_ms``. Kept only if filling the
    templates gives ``real`` byte for byte (so the check never prints what the core would
    not); else None."""
    slots = [{"seconds_text": STAND_IN_SECONDS}, {"seconds_json": STAND_IN_SECONDS},
             {"seconds_json": STAND_IN_SECONDS, "at_ms": STAND_IN_AT_MS}]
    pieces = [p for text, stand_ins in zip(stand_in, slots) if (p := template(text, stand_ins)) is not None]
    values = {"seconds_text": seconds, "seconds_json": seconds, "at_ms": at_ms}
    if len(pieces) != 3 or tuple(fill(p, values) for p in pieces) != real:
        return None
    return pieces


def record(path: str, *, inputs: int, probes: list[str], looked: list, printed: list[list[str]],
           last_run: str) -> None:
    """Keep what :func:`answer` compares (``looked``: :class:`distill.tails.discover.Looked`
    folders; ``probes``: other paths whose stat must stay; ``printed``: :func:`templates`;
    ``last_run``: where the last run is written)."""
    # each folder's names joined and its stats as the bytes marshal makes of them: the check
    # compares its own the same way, which spares it decoding 60,000 objects per 10,000 files
    folders = [(f.folder, None if f.names is None else "\0".join(f.names), [c[0] for c in f.candidates],
                marshal.dumps([numbers(c[1]) if c[1] is not None else None for c in f.candidates], 2))
               for f in looked]
    data = (_VERSION, __version__, inputs, [(p, probe(p)) for p in probes], folders, printed, last_run)
    write_bytes(path, marshal.dumps(data, 2), durable=False)


def answer(flags: dict[str, str | None], as_json: bool) -> int | None:
    """``distill run``'s exit code when :func:`record`'s folders, stats and inputs are as
    they were (its lines printed); None: the full run decides."""
    t0 = time.monotonic()
    try:
        values, config_path = gather(("state_dir",), flags=flags)
        path = StateDir(values.get("state_dir", DEFAULT_STATE_DIR)).noop_check
        with open(path, "rb") as f:
            data = marshal.loads(f.read())  # marshal.load(f) reads object by object: 3x slower
        version, distill, inputs, probes, folders, printed, last_run = data
    except Exception:  # noqa: BLE001 - no record, an old or damaged one, a bad config: the full run says
        return None
    if (version, distill) != (_VERSION, __version__) or inputs != inputs_key(flags, config_path):
        return None
    if any(probe(p) != n for p, n in probes) or not all(_same(*f) for f in folders):
        return None
    seconds = time.monotonic() - t0
    values = {"seconds_text": seconds, "seconds_json": seconds, "at_ms": time.time_ns() // 1_000_000}
    try:
        write_bytes(last_run, fill(printed[2], values).encode(), durable=False)
    except OSError:
        return None  # the full run says what is wrong with the state directory
    sys.stdout.write(fill(printed[1] if as_json else printed[0], values))
    return 0


def _same(folder: str, names: str | None, candidates: list[str], expected: bytes) -> bool:
    """Whether ``folder`` lists ``names`` (joined by NUL; None: is not there) and its candidates
    stat as before."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return names is None
    except OSError:
        return False
    try:
        if names is None or "\0".join(os.listdir(fd)) != names:
            return False
        got: list[tuple[int, int, int, int, int] | None] = []
        for name in candidates:
            try:
                got.append(numbers(os.stat(name, dir_fd=fd)))
            except OSError:
                got.append(None)
        return marshal.dumps(got, 2) == expected
    finally:
        os.close(fd)
