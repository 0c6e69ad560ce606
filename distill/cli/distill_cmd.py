"""``distill distill --batch-file F [--commit]``: distil a batch that ``distill run`` made.
``distill retry [--batch-file F] [--drop]``: try set-aside chunks again, or give them up.

For the two-phase cron flow: ``run`` cuts the batch, this turns it into stored memories, and
``commit`` (or ``--commit`` here) advances the cursor. Without ``--commit`` the batch stays
pending, and running this again stores nothing twice.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..model import RunSummary, as_dict
from . import command


class DistillOutput(RunSummary):
    batch_file: str | None = None


class RetryOutput(RunSummary):
    """What ``retry`` prints (text in :mod:`distill.cli.render`)."""


def register(sub: Any) -> None:
    p = command(sub, "distill", _distill, "distil a batch file made by `distill run` into stored memories")
    p.add_argument("--batch-file", required=True, type=Path, help="the batch file `distill run` printed")
    p.add_argument("--commit", action="store_true",
                   help="also commit the batch (advance the cursor) once its memories are stored")


    p = command(sub, "retry", _retry,
                "map the set-aside chunks of pending batches again (see `distill status`), store and commit")
    p.add_argument("--batch-file", type=Path, help="only this batch (default: every batch with set-aside chunks)")
    p.add_argument("--drop", action="store_true",
                   help="give the set-aside chunks up instead: their turns are committed without memories")


def _retry(settings: Any, args: argparse.Namespace) -> RetryOutput:
    from ..pipeline import retry_failed

    return RetryOutput(**as_dict(retry_failed(settings, drop=args.drop, batch_file=args.batch_file)))


def _distill(settings: Any, args: argparse.Namespace) -> DistillOutput:
    from ..pipeline import distill_batch_file

    summary = distill_batch_file(settings, args.batch_file, commit=args.commit)
    return DistillOutput(**as_dict(summary), batch_file=str(args.batch_file))
