"""The queue task's schema, once: its fields, their kinds and which a task file must have.

Stdlib only, because ``distill enqueue`` (an agent hook's fast path, no pydantic) writes tasks
with :func:`new_task`, and :class:`distill.queue.Task` (the worker's pydantic model, which
validates every file it reads) is built from :data:`FIELDS`. The path and agent a task names
are checked by :func:`distill.roots.check_session_file` on both sides, with the agent-id rule
of :mod:`distill.settings.core`.

On disk a task is the JSON object of these fields in this order, with the ``None`` ones left
out: the files already in a queue keep loading as long as this table only grows optional fields.
"""

from __future__ import annotations

import os
import time

KINDS = ("session_end", "tail", "backfill")
ID_PATTERN = r"^[0-9a-f]{8,64}$"
REQUIRED = ...  # a field every task file has

# name -> (kind, default, constraints); "choices" means one of those values
FIELDS: dict[str, tuple[object, object, dict]] = {
    "id": (str, REQUIRED, {"pattern": ID_PATTERN}),
    "kind": (str, REQUIRED, {"choices": KINDS}),
    "agent_id": (str, REQUIRED, {}),
    "session_file": (str, REQUIRED, {}),
    "created_at_ms": (int, REQUIRED, {}),
    "attempts": (int, 0, {"ge": 0}),
    "not_before_ms": (int, 0, {}),
    # written by the worker when it files the task away
    "error": (str | None, None, {}),
    "stats": (dict | None, None, {}),
    "finished_at_ms": (int | None, None, {}),
    # times a worker died while running it (counted in attempts too); see worker.tasks.TaskLoop.recover
    "crashes": (int | None, None, {"ge": 0}),
}


def new_task(agent_id: str, session_file: str, kind: str) -> dict:
    """A fresh task as written to the inbox: the required fields and the non-None defaults."""
    ns = time.time_ns()
    sub_ms = f"{ns % 1_000_000:05x}"  # leads the id, so two tasks queued in one millisecond keep their order
    given = {"id": sub_ms + os.urandom(6).hex(), "kind": kind, "agent_id": agent_id, "session_file": session_file,
             "created_at_ms": ns // 1_000_000}
    return {name: given.get(name, default) for name, (_, default, _) in FIELDS.items()
            if name in given or default not in (REQUIRED, None)}


def task_filename(created_ms: int, task_id: str) -> str:
    """Names sort oldest first, so the inbox is served in arrival order (a new task's id starts
    with its sub-millisecond time)."""
    return f"{created_ms:013d}-{task_id}.json"
