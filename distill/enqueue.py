"""``distill enqueue``: an agent hook's fast path — validate, drop one task file, return.

It runs at every session end, so it imports no validation library nor anything heavy: the settings
come from :mod:`distill.settings.hook` (falling back to the full model only when that reader
cannot decide), the checks from :mod:`distill.roots`, and the task is written with
:mod:`distill.atomic`. The task's shape is :mod:`distill.task`, from which the worker's model
(:class:`distill.queue.Task`) is built too.
"""

from __future__ import annotations

import os
import sys
import time

from .cli import command_index
from .cli.exitcodes import exit_code_of
from .errors import DistillError, InvalidTask
from .settings.hook import HookConfig, load_hook_config
from .roots import check_session_file
from .tails.state import StateDir
from .task import KINDS, new_task, task_filename

HOOK_JSON_KEYS = ("transcript_path", "session_file", "sessionFile", "path")


def enqueue(cfg: HookConfig, agent_id: str, session_file: str, kind: str = "session_end") -> dict:
    """Validate and write one task into ``<state>/queue/inbox/``; return what was written."""
    import json

    from .atomic import write_bytes

    if kind not in KINDS:
        raise InvalidTask(f"task kind {kind!r} is not one of {', '.join(KINDS)}")
    if session_file and not os.path.isabs(session_file) and ".." not in session_file.replace("\\", "/").split("/"):
        session_file = os.path.join(os.getcwd(), session_file)  # relative to where the hook runs
    given, _resolved = check_session_file(cfg, agent_id, session_file)
    task = new_task(agent_id, given, kind)
    inbox = os.path.join(StateDir(cfg.state_dir).queue, "inbox")
    path = os.path.join(inbox, task_filename(task["created_at_ms"], task["id"]))
    try:
        write_bytes(path, json.dumps(task, indent=2).encode() + b"\n")  # type: ignore[arg-type]
    except OSError as exc:
        raise DistillError(f"cannot queue the task: {unwritable_queue(inbox, exc)}; nothing was queued") from None
    return {**task, "task_file": path}


def unwritable_queue(folder: str, exc: OSError) -> str:
    """What a failed write into a queue folder means, and what to do about it (the worker says
    the same when it cannot move a task)."""
    import errno

    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        todo = "free space on that disk (or raise the quota)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
        todo = (f"make it writable for {who}, or run this as the user that owns the state directory "
                "(--state-dir / DISTILL_STATE_DIR)")
    else:
        todo = "fix what the error names"
    return f"the queue folder {folder} cannot be written ({why}): {todo}"


def add_enqueue_args(p) -> None:
    """The enqueue flags, for the full CLI's parser (help, and error messages)."""
    p.add_argument("--agent", required=True, help="agent id the session belongs to")
    p.add_argument("--session-file", required=True,
                   help="the session transcript (.jsonl); '-' reads a hook's JSON from stdin "
                        "(Claude Code's transcript_path, or session_file / sessionFile)")
    p.add_argument("--kind", choices=KINDS, default="session_end", help="why the task was made (default session_end)")
    p.add_argument("payload", nargs="?", help="an agent's event JSON passed as the last argument (Codex's notify); "
                                              "with --session-file -")


def session_file_arg(value: str, payload: str | None = None, cfg: HookConfig | None = None,
                     agent_id: str | None = None) -> str:
    """``-``: the hook's event JSON names the file — on stdin (Claude Code passes
    ``transcript_path``), or as the last argument (Codex's ``notify`` program, whose payload
    names only the ``thread-id``: the file is that thread's rollout under the agent's roots)."""
    if value != "-":
        return value
    import json

    where = "the notify payload" if payload is not None else "stdin"
    try:
        event = json.loads(payload if payload is not None else (sys.stdin.read() or "{}"))
    except ValueError as exc:
        raise InvalidTask(f"--session-file -: {where} is not JSON ({exc})") from None
    for key in HOOK_JSON_KEYS:
        if isinstance(event, dict) and isinstance(event.get(key), str):
            return event[key]
    thread = event.get("thread-id") if isinstance(event, dict) else None
    if isinstance(thread, str) and cfg is not None and agent_id:
        return codex_rollout(cfg, agent_id, thread)
    raise InvalidTask(f"--session-file -: {where} JSON has none of {', '.join(HOOK_JSON_KEYS)}, thread-id")


def codex_rollout(cfg: HookConfig, agent_id: str, thread_id: str) -> str:
    """The rollout file of a Codex thread: ``<root>/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``
    under the agent's ``[[sources]]`` roots; today's and yesterday's folders are looked at first."""
    if not thread_id or not all(c.isalnum() or c == "-" for c in thread_id):
        raise InvalidTask(f"--session-file -: thread-id {thread_id!r} is not a Codex thread id")
    suffix = f"-{thread_id}.jsonl"
    roots = [root for root, agent in cfg.sources if agent == agent_id]
    now = time.time()
    for root in roots:
        for day in (now, now - 86400):
            folder = os.path.join(root, time.strftime("%Y/%m/%d", time.localtime(day)))
            found = _rollout_in(folder, suffix)
            if found:
                return found
    for root in roots:
        for folder, _dirs, _files in os.walk(root):
            found = _rollout_in(folder, suffix)
            if found:
                return found
    raise InvalidTask(f"no Codex rollout file for thread {thread_id} under the roots of agent {agent_id!r} "
                      f"({', '.join(roots) or 'none configured: add a [[sources]] root'})")


def _rollout_in(folder: str, suffix: str) -> str | None:
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        if name.startswith("rollout-") and name.endswith(suffix):
            return os.path.join(folder, name)
    return None


def human_line(task: dict) -> str:
    return (f"queued {task['kind']} task {task['id']} for agent {task['agent_id']}: "
            f"{task['session_file']} -> {task['task_file']}")


def fast_main(argv: list[str]) -> int | None:
    """Run ``distill enqueue`` without building the whole CLI; ``None`` hands argv to the full CLI.

    Only the plain well-formed call is handled here (a hand-rolled parse skips argparse's
    formatter imports); help, typos and missing flags go to argparse for its usual messages.
    """
    opts = _parse_fast(argv)
    if opts is None:
        return None
    as_json = "json" in opts
    try:
        cfg = load_hook_config(opts.get("state_dir"), opts.get("agents_dir"))
        if cfg is None:
            from .config import load_settings

            cfg = HookConfig.from_settings(load_settings(state_dir=opts.get("state_dir"),
                                                         agents_dir=opts.get("agents_dir"), db=opts.get("db")))
        session_file = session_file_arg(opts["session_file"], opts.get("payload"), cfg, opts["agent"])
        task = enqueue(cfg, opts["agent"], session_file, opts.get("kind", "session_end"))
    except DistillError as exc:
        if as_json:
            import json

            print(json.dumps({"error": str(exc), "kind": type(exc).__name__}))
        print(f"distill: error: {exc}", file=sys.stderr)
        return exit_code_of(exc)
    if as_json:
        import json

        print(json.dumps(task))
    else:
        print(human_line(task))
    return 0


_FAST_VALUE_FLAGS = {"--state-dir": "state_dir", "--agents-dir": "agents_dir", "--db": "db",
                     "--agent": "agent", "--session-file": "session_file", "--kind": "kind"}


def _parse_fast(argv: list[str]) -> dict[str, str] | None:
    idx = command_index(argv)
    if idx is None or argv[idx] != "enqueue":
        return None
    opts: dict[str, str] = {}
    rest = argv[:idx] + argv[idx + 1:]
    i = 0
    while i < len(rest):
        if rest[i].startswith("{") and i == len(rest) - 1:
            opts["payload"] = rest[i]  # Codex's notify appends its event JSON as the last argument
            i += 1
            continue
        flag, eq, value = rest[i].partition("=")
        if flag == "--json" and not eq:
            opts["json"] = ""
            i += 1
            continue
        key = _FAST_VALUE_FLAGS.get(flag)
        if key is None:
            return None
        if not eq:
            if i + 1 >= len(rest) or (rest[i + 1].startswith("--") and rest[i + 1] != "-"):
                return None
            value = rest[i + 1]
            i += 1
        opts[key] = value
        i += 1
    if "agent" not in opts or "session_file" not in opts or opts.get("kind", "session_end") not in KINDS:
        return None
    return opts
