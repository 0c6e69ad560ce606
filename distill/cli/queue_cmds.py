"""``distill enqueue`` and ``distill backfill``: the queue's front door and the history pass.

The usual ``distill enqueue …`` call never reaches this module: :func:`distill.cli.main` hands
it to :func:`distill.enqueue.fast_main` before the parser tree (and pydantic) is built. This
registration gives the command its ``--help``, argparse's messages for a malformed call, and
the same behaviour when reached through the full CLI.
"""

from __future__ import annotations

import argparse
import sys

from . import command
from ..enqueue import add_enqueue_args


class Queued(dict):
    """What ``enqueue`` prints: the task written (``--json``) or one line."""

    def model_dump(self, **_: object) -> dict:
        return dict(self)


def register(sub) -> None:
    p = command(sub, "enqueue", _enqueue,
                "queue one session file for distill-worker (an agent hook's fast path; returns in milliseconds)")
    add_enqueue_args(p)
    p = command(sub, "backfill", _backfill,
                "distill existing history through the same pipeline (resumable; progress bar; --dry-run estimates cost)")
    p.add_argument("--agent", help="only this agent's session files")
    p.add_argument("--since", help="only files modified on or after this date (YYYY-MM-DD, local; or ISO time)")
    p.add_argument("--until", help="only files last modified on or before this date (inclusive)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be read and an estimate of chunks, LLM calls and tokens; spend nothing")
    p.add_argument("--no-archives", dest="archives", action="store_false", default=None,
                   help="skip OpenClaw's archived sessions (*.jsonl.reset.*, *.jsonl.deleted.*), which backfill "
                        "otherwise reads (setting: backfill_archives)")


def _enqueue(settings, args: argparse.Namespace) -> Queued:
    from ..enqueue import enqueue, session_file_arg
    from ..settings.hook import HookConfig

    cfg = HookConfig.from_settings(settings)
    return Queued(enqueue(cfg, args.agent, session_file_arg(args.session_file, args.payload, cfg, args.agent),
                          args.kind))


def _backfill(settings, args: argparse.Namespace):
    from ..backfill import progress_printer, run_backfill

    show = None if args.json or args.dry_run else progress_printer()
    try:
        return run_backfill(settings, agent=args.agent, since=args.since, until=args.until,
                            dry_run=args.dry_run, progress=show, archives=args.archives)
    except BaseException:
        if show is not None and sys.stderr.isatty():
            sys.stderr.write("\n")  # end the progress bar's line before the error message
        raise
