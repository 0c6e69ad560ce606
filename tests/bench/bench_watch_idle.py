"""Idle cost of the daemon's file watching over a large transcript tree (run by hand).

    python tests/bench/bench_watch_idle.py [--files 10000] [--seconds 30]

Builds a tree of ``--files`` session files (100 per folder, OpenClaw's agents/<id>/sessions
layout), then, each in its own process, starts ``worker.watch.Watcher`` on the inbox and that
root as ``distill-worker`` does (``worker_watch_sources`` is on by default) and leaves it idle
for ``--seconds``. Reports per mode: the observer chosen, seconds to start, CPU seconds used
per idle minute, and the inotify watches held (from /proc/self/fdinfo):

* native: inotify, one watch per folder;
* limit: the watch limit reached (the kernel's ENOSPC raised by inotify_add_watch after 10
  watches, the way a full ``fs.inotify.max_user_watches`` answers): the worker's fallback
  to polling;
* polling: ``worker_poll = true``.

Finally one line appended to one session is timed until the watcher reports it due.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def inotify_watches() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                with open(f"/proc/self/fdinfo/{fd}") as f:
                    count += sum(line.startswith("inotify wd:") for line in f)
        except OSError:
            continue
    return count


def child(mode: str, root: Path, inbox: Path, seconds: float) -> dict:
    if mode == "limit":
        import errno

        from watchdog.observers import inotify_c

        real, made = inotify_c.InotifyFD._get_or_create_watch, [0]

        def limited(self, path, mask):
            made[0] += 1
            if made[0] > 10:
                raise OSError(errno.ENOSPC, "inotify watch limit reached")
            return real(self, path, mask)

        inotify_c.InotifyFD._get_or_create_watch = limited
    from worker.watch import Watcher

    wake = threading.Event()
    t0 = time.perf_counter()
    watcher = Watcher(inbox, wake, sources=[root], poll=mode == "polling")
    chosen = watcher.start()
    started = time.perf_counter() - t0
    watches = inotify_watches()
    cpu0 = time.process_time()
    time.sleep(seconds)
    idle_cpu = time.process_time() - cpu0
    target = next(root.rglob("*.jsonl"))
    t1 = time.perf_counter()
    with target.open("a") as f:
        f.write(json.dumps({"type": "message", "note": "appended"}) + "\n")
    seen = None
    while time.perf_counter() - t1 < 30:
        if watcher.due(0.0):
            seen = time.perf_counter() - t1
            break
        wake.wait(0.05)
        wake.clear()
    watcher.stop()
    return {"mode": chosen, "start_s": round(started, 2), "cpu_per_idle_min": round(idle_cpu * 60 / seconds, 2),
            "inotify_watches": watches, "append_seen_s": None if seen is None else round(seen, 2)}


def build(root: Path, files: int) -> None:
    line = json.dumps({"type": "message", "message": {"role": "user", "content": "hello"}}) + "\n"
    for i in range(files):
        folder = root / f"agent{i // 100:03d}" / "sessions"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"s{i:05d}.jsonl").write_text(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        root = Path(args.root)
        print(json.dumps(child(args.child, root / "agents", root / "inbox", args.seconds)))
        return 0
    with tempfile.TemporaryDirectory(prefix="watch-idle-") as tmp:
        root = Path(tmp)
        (root / "inbox").mkdir()
        build(root / "agents", args.files)
        print(f"{args.files} session files in {args.files // 100} folders; idle {args.seconds:.0f} s per mode; "
              f"fs.inotify.max_user_watches = {Path('/proc/sys/fs/inotify/max_user_watches').read_text().strip()}")
        for mode in ("native", "limit", "polling"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--root", tmp,
                                  "--seconds", str(args.seconds)], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{mode:8} {r['mode'][:70]:70} start {r['start_s']:5.2f} s  idle CPU {r['cpu_per_idle_min']:6.2f} "
                  f"s/min  inotify watches {r['inotify_watches']:5d}  append seen after {r['append_seen_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
