"""SIGKILL `distill run` and `distill commit` at random moments while an appender writes.

Afterwards the committed batches (``batches/done/``) hold every turn of every file exactly
once: no turn lost to a kill, none read twice because of one.
"""

from __future__ import annotations

import collections
import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from distill.tails.ledger import commit_batch, create_batch, load_batch, pending_batches

from tail_helpers import ROOT, fact, header, msg, settings_for

KILLS = 30


def _spawn(state: Path, agents: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "distill", "--state-dir", str(state), "--agents-dir", str(agents),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


class Killer:
    """Runs a command, and usually SIGKILLs it at a random moment of its typical duration
    (learned from the runs it let finish), so kills land in every phase, not only start-up."""

    def __init__(self, rng: random.Random, state: Path, agents: Path):
        self.rng, self.state, self.agents = rng, state, agents
        self.typical: dict[str, float] = {}
        self.kills = 0
        self.completed = collections.Counter()

    def __call__(self, *args: str) -> None:
        verb = args[0]
        p = _spawn(self.state, self.agents, *args)
        t0 = time.monotonic()
        if verb not in self.typical or self.rng.random() < 0.25:
            out, err = p.communicate()
            assert p.returncode == 0, f"distill {' '.join(args)} failed after earlier kills: {err.decode()[-500:]}"
            self.typical[verb] = time.monotonic() - t0
            self.completed[verb] += 1
            return
        time.sleep(self.rng.uniform(0.3, 1.1) * self.typical[verb])
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            self.kills += 1
        p.communicate()


class Appender(threading.Thread):
    """Appends turns (with bulky tool output between them) to a few files, sometimes in two writes."""

    def __init__(self, files: list[Path], rng: random.Random):
        super().__init__(daemon=True)
        self.files, self.rng = files, rng
        self.written: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        bulk = (json.dumps({"type": "message", "id": "t", "message": {"role": "toolResult", "toolName": "exec",
                "content": [{"type": "text", "text": "ok " + "x" * 20000}], "isError": False}},
                separators=(",", ":")) + "\n").encode()
        i = 0
        while not self.stop.is_set():
            f = self.files[i % len(self.files)]
            text = fact(i, f"crash{f.stem}")
            line = msg(text, "user" if i % 2 else "assistant", i) + bulk * self.rng.randint(0, 3)
            with open(f, "ab") as fh:
                cut = self.rng.randint(1, len(line) - 1) if self.rng.random() < 0.3 else len(line)
                fh.write(line[:cut])
                fh.flush()
                if cut < len(line):
                    time.sleep(0.002)
                    fh.write(line[cut:])
            self.written.append(text)
            i += 1
            time.sleep(0.003)


def test_sigkill_run_and_commit_loses_and_doubles_nothing(tmp_path):
    rng = random.Random(20261129)
    s = settings_for(tmp_path)
    files = []
    for n in range(3):
        p = tmp_path / "agents" / f"agent{n % 2}" / "sessions" / f"s{n}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(header(f"s{n}"))
        files.append(p)
    app = Appender(files, rng)
    app.start()
    killer = Killer(rng, s.state_dir, s.agents_dir)
    try:
        deadline = time.monotonic() + 240  # ends at KILLS kills; the time only bounds a slow or busy machine
        while killer.kills < KILLS and time.monotonic() < deadline:
            killer("run")
            for batch in pending_batches(s):
                killer("commit", "--batch-file", str(batch))
    finally:
        app.stop.set()
        app.join()
    assert killer.kills >= 10, f"only {killer.kills} processes were killed mid-way; the test proves little"

    # settle: commit what is pending, read the rest, until nothing is left
    for _ in range(50):
        for batch in pending_batches(s):
            commit_batch(s, batch)
        res = create_batch(s)
        if res.action == "noop":
            break
        commit_batch(s, Path(res.batch_file))

    committed = collections.Counter()
    for p in (s.state.done).glob("*.json"):
        for a in load_batch(p).agents:
            committed.update(m.text for m in a.messages)
    doubled = {t: n for t, n in committed.items() if n > 1}
    missing = set(app.written) - set(committed)
    assert not doubled, f"turns committed twice: {list(doubled)[:5]}"
    assert not missing, f"{len(missing)} of {len(app.written)} turns never committed, e.g. {sorted(missing)[:3]}"
    assert set(committed) == set(app.written)
