"""``distill init | run | commit | abort | status``: the two-phase cursor verbs.

``run`` cuts the new tails into a batch file and marks those byte ranges pending; something
(``run --distill``, ``distill distill``, or an external agent) turns the batch into memories;
``commit`` then advances the cursor, ``abort`` releases the ranges to be read again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from . import command, emitted
from ..errors import DistillError
from ..model import RunSummary

if TYPE_CHECKING:  # parsed without argparse when the command has no flag of its own (cli.quick_args)
    import argparse


class StepResult(msgspec.Struct, kw_only=True, rename="camel"):
    """What ``commit``, ``abort`` and ``run --distill`` print."""

    action: str
    batch_file: str | None = None
    summary: RunSummary


def register(sub) -> None:
    command(sub, "init", _init,
            "start from now: mark every existing transcript read to its end (later files are read from 0)")
    p = command(sub, "run", _run,
                "read the new tails into batches/<id>.json and mark them pending (prints a one-line summary)")
    p.add_argument("--distill", action="store_true",
                   help="also distill and store the batch, then commit it (the built-in distiller)")
    p = command(sub, "commit", _commit, "mark a batch's byte ranges committed once its memories are stored")
    p.add_argument("--batch-file", required=True, type=Path, help="the batch file `distill run` printed")
    p = command(sub, "abort", _abort, "release a batch's byte ranges so the next run reads them again")
    p.add_argument("--batch-file", required=True, type=Path, help="the batch file `distill run` printed")
    command(sub, "status", _status, "per agent and file: bytes behind, pending batches, the last run")


def _init(settings, args: argparse.Namespace):
    from ..tails.startpoint import init_cursor

    return init_cursor(settings)


def _run(settings, args: argparse.Namespace):
    if args.distill:
        try:
            from ..pipeline import run_distill
        except ModuleNotFoundError as exc:
            if exc.name != "distill.pipeline":
                raise
            raise DistillError("`run --distill` needs the built-in distiller (distill.pipeline), which is not "
                               "installed in this build; run `distill run` and distill the batch yourself") from None
        summary = run_distill(settings)
        return StepResult(action=summary.action, summary=summary)
    from ..tails.ledger import record_last_run
    from ..tails.life import BatchLife

    result = BatchLife.cut(settings, printed=lambda r: (emitted(r, False), emitted(r, True)))
    record_last_run(settings, result.summary, result.batch_file)
    return result


def _commit(settings, args: argparse.Namespace):
    from ..tails.life import BatchLife

    return StepResult(action="committed", batch_file=str(args.batch_file),
                      summary=BatchLife.commit_file(settings, args.batch_file))


def _abort(settings, args: argparse.Namespace):
    from ..tails.life import BatchLife

    return StepResult(action="aborted", batch_file=str(args.batch_file),
                      summary=BatchLife.abort(settings, args.batch_file))


def _status(settings, args: argparse.Namespace):
    from ..tails.status import tail_status

    return tail_status(settings)
