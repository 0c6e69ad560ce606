"""A walk read on two cores (forked readers) cuts exactly the batch and cursor of one process.

``DISTILL_READ_PROCESSES=1`` keeps `distill run` in one process; ``=2`` forks a second reader
whatever the size. Both run as real processes on the same multi-agent corpus: an agent whose
message cap fills inside the forked reader's half after the first half gave it messages, one
whose cap fills inside that half alone, an over-long line (and a file that ends in one), a
damaged line and a file that is no JSON at all; then a renamed, a replaced and a truncated
file, which the run's own process reads between the forked reader's files. A SIGKILLed run whose reader child is alive
leaves nothing that changes what the next run does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tail_helpers import ROOT, cli, fact, header, msg

MAX_LINE = 4096
CAP = 40


def _corpus(root: Path, files_per_agent: int = 6, turns: int = 12, pad: int = 0) -> Path:
    """Files of agents a, b, c; discovery sorts by path, so a's files come first, c's last."""
    agents = root / "agents"
    for agent in ("a", "b", "c"):
        for n in range(files_per_agent):
            p = agents / agent / "sessions" / f"s{n:02d}.jsonl"
            p.parent.mkdir(parents=True, exist_ok=True)
            lines = [header(f"{agent}{n}")]
            for i in range(turns):
                lines.append(msg(fact(i, f"{agent}{n}") + " " + "z" * pad, "user" if i % 2 else "assistant", i))
                if agent == "b" and n == 1 and i == 4:
                    lines.append(msg("x" * (2 * MAX_LINE), "user", 900))  # over-long: skipped, counted
                if agent == "c" and n == 1 and i == 6:
                    lines.append(b'{"type":"message","id":"broken", "message": {"role": "us\n')  # damaged
            if agent == "c" and n == 4:
                lines.append(b'{"type":"message","text":"' + b"y" * (2 * MAX_LINE))  # ends inside an over-long line
            p.write_bytes(b"".join(lines))
    odd = agents / "c" / "sessions" / "aa-odd.jsonl"  # sorts first: read before the cap fills
    odd.write_bytes(b"this is not a transcript of any format\n")
    return agents


def _run(state: Path, agents: Path, processes: str, **env: str) -> dict:
    p = cli(state, "--agents-dir", str(agents), "run", "--json", process=True,
            env={"DISTILL_READ_PROCESSES": processes, "DISTILL_MAX_LINE_BYTES": str(MAX_LINE),
                 "DISTILL_MAX_MESSAGES_PER_AGENT": str(CAP), **env})
    return json.loads(p.stdout)


def _normal(text: str, batch_id: str | None) -> str:
    """A batch or cursor file with what differs between two equal runs (ids, clock) masked."""
    if batch_id:
        text = text.replace(batch_id, "BATCH")
    return re.sub(r'"(createdAtMs|updatedAtMs)": ?\d+', r'"\1": 0', text)


def _state(state: Path, res: dict) -> tuple[str, str]:
    bid = Path(res["batchFile"]).stem if res.get("batchFile") else None
    batch = _normal(Path(res["batchFile"]).read_text(), bid) if bid else ""
    return batch, _normal((state / "cursor.json").read_text(), bid)


def test_two_readers_cut_the_batch_and_cursor_of_one(tmp_path):
    agents = _corpus(tmp_path)
    one, two = tmp_path / "one", tmp_path / "two"
    for round_ in range(3):
        r1, r2 = _run(one, agents, "1"), _run(two, agents, "2")
        assert r1["action"] == r2["action"] == "created"
        b1, c1 = _state(one, r1)
        b2, c2 = _state(two, r2)
        assert b2 == b1, f"round {round_}: the batch files differ"
        assert c2 == c1, f"round {round_}: the cursors differ"
        assert r2["errors"] == r1["errors"]
        batch = json.loads(b1)
        got = {a["agentId"]: len(a["messages"]) for a in batch["agents"]}
        if round_ == 0:  # what the corpus is there to exercise
            assert got == {"a": CAP, "b": CAP, "c": CAP}, got
            assert batch["counters"]["lines_too_long"] == 1 and batch["counters"]["invalid_json"] == 2, batch["counters"]
        if round_ == 1:
            assert {"renamed", "replaced", "truncated"} <= set(batch["counters"]), batch["counters"]
        for state, res in ((one, r1), (two, r2)):
            cli(state, "commit", "--batch-file", res["batchFile"], process=True)
        # the next round reads on from the caps; a's first file grows, so a's cap fills again
        with open(agents / "a" / "sessions" / "s00.jsonl", "ab") as f:
            f.write(b"".join(msg(fact(100 + i, f"more{round_}"), "user", 100 + i) for i in range(CAP)))
        if round_ == 0:  # files only the run's own process reads, among those a reader reads
            sessions = agents / "b" / "sessions"
            (sessions / "s04.jsonl").rename(sessions / "s04-renamed.jsonl")
            replaced = agents / "c" / "sessions" / "s05.jsonl"
            tmp = replaced.with_suffix(".tmp")
            tmp.write_bytes(replaced.read_bytes() + msg(fact(7, "replaced"), "user", 700))
            os.replace(tmp, replaced)
            shrunk = agents / "c" / "sessions" / "s03.jsonl"
            shrunk.write_bytes(header("c3") + msg(fact(8, "shrunk"), "user", 800))


_PROBE = """
import json, os, sys, time
from pathlib import Path
from distill.config import load_settings
from distill.tails import reader
from distill.tails.ledger import create_batch
seen = {"applied": 0, "read_again": 0}
apply, read, run, me = reader.TailWalk._apply, reader.TailWalk.read, reader.TailWalk._run, os.getpid()
def slow(self, v):  # the parent is slow, so that the reader reads much of the walk
    if os.getpid() == me and not getattr(self, "_in_apply", False):
        time.sleep(0.05)
    return run(self, v)
reader.TailWalk._run = slow
def counted_apply(self, v, rec):
    seen["applied"] += 1
    self._in_apply = True
    try:
        apply(self, v, rec)
    finally:
        self._in_apply = False
def counted_read(self, *a, **kw):
    if getattr(self, "_in_apply", False):
        seen["read_again"] += 1
    return read(self, *a, **kw)
reader.TailWalk._apply, reader.TailWalk.read = counted_apply, counted_read
s = load_settings(state_dir=Path(sys.argv[1]), agents_dir=Path(sys.argv[2]), max_messages_per_agent=int(sys.argv[3]),
                  max_line_bytes=int(sys.argv[4]))
res = create_batch(s)
print(json.dumps(dict(seen, batch=Path(res.batch_file).read_text(), cursor=(Path(sys.argv[1]) / "cursor.json").read_text())))
"""


def test_the_forked_reader_is_used_and_a_cap_it_misjudged_is_read_again(tmp_path):
    """On a busy machine the run may read most files itself before the reader gets far; here
    the run is slowed, so the reader surely reads much of the walk and a record of its that
    the cap makes wrong is redone here, and the batch and cursor are still those of one process."""
    agents = _corpus(tmp_path)
    env = dict(os.environ, DISTILL_READ_PROCESSES="2", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "st"), str(agents), str(CAP), str(MAX_LINE)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True)
    got = json.loads(p.stdout)
    assert got["applied"] >= 5, got["applied"]
    assert got["read_again"] >= 1, got["read_again"]
    clean = _run(tmp_path / "clean", agents, "1")
    bid, cid = json.loads(got["batch"])["batchId"], Path(clean["batchFile"]).stem
    assert _normal(got["batch"], bid) == _normal(Path(clean["batchFile"]).read_text(), cid)
    assert _normal(got["cursor"], bid) == _normal((tmp_path / "clean" / "cursor.json").read_text(), cid)


# --- SIGKILL while the forked reader reads ---------------------------------------------------

def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigkill_while_the_second_reader_reads_changes_nothing(tmp_path):
    agents = _corpus(tmp_path, files_per_agent=8, turns=400, pad=1500)  # ~16 MB: reads take a while
    env = dict(os.environ, DISTILL_READ_PROCESSES="2", DISTILL_MAX_LINE_BYTES=str(MAX_LINE),
               DISTILL_MAX_MESSAGES_PER_AGENT="1000000")
    killed = tmp_path / "killed"
    kills = 0
    for _ in range(2):
        p = subprocess.Popen([sys.executable, "-m", "distill", "--state-dir", str(killed), "--agents-dir", str(agents),
                              "run", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        child = None
        deadline = time.monotonic() + 30
        while child is None and p.poll() is None and time.monotonic() < deadline:
            kids = _children(p.pid)
            child = kids[0] if kids else None
            time.sleep(0.002)
        if child is None:  # finished before we saw its reader: try again from scratch
            p.wait()
            for f in killed.glob("**/*"):
                if f.is_file():
                    f.unlink()
            continue
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
        gone = time.monotonic() + 3  # it stops before its next file; each is ~1 MB
        while _alive(child) and time.monotonic() < gone:
            time.sleep(0.01)
        assert not _alive(child), "the reader child went on reading after its parent was killed"
    assert kills, "never caught a run while its second reader was alive"

    after = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(killed), "--agents-dir", str(agents),
                            "run", "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=True)
    clean = subprocess.run([sys.executable, "-m", "distill", "--state-dir", str(tmp_path / "clean"), "--agents-dir",
                            str(agents), "run", "--json"], capture_output=True, text=True,
                           env=dict(env, DISTILL_READ_PROCESSES="1"), cwd=ROOT, timeout=120, check=True)
    ra, rc = json.loads(after.stdout), json.loads(clean.stdout)
    assert ra["batchFiles"] == [ra["batchFile"]], "a killed run left a batch behind"
    assert _state(killed, ra) == _state(tmp_path / "clean", rc)


_DYING = """
import json, os, signal, sys, time
from pathlib import Path
from distill.config import load_settings
from distill.tails import reader
from distill.tails.ledger import create_batch
record, run, calls, me = reader.TailWalk._record, reader.TailWalk._run, [], os.getpid()
def dying(self, v):
    calls.append(v)
    if len(calls) == 3:  # the reader dies after two files
        os.kill(os.getpid(), signal.SIGKILL)
    return record(self, v)
def slow(self, v):  # the parent is slow, so that the reader has files to itself
    if os.getpid() == me:
        time.sleep(0.05)
    return run(self, v)
reader.TailWalk._record, reader.TailWalk._run = dying, slow
s = load_settings(state_dir=Path(sys.argv[1]), agents_dir=Path(sys.argv[2]), max_messages_per_agent=int(sys.argv[3]),
                  max_line_bytes=int(sys.argv[4]))
res = create_batch(s)
print(json.dumps({"batch": Path(res.batch_file).read_text(), "errors": res.errors}))
"""


def test_a_reader_that_dies_costs_only_time(tmp_path):
    agents = _corpus(tmp_path)
    env = dict(os.environ, DISTILL_READ_PROCESSES="2", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _DYING, str(tmp_path / "st"), str(agents), str(CAP), str(MAX_LINE)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True)
    got = json.loads(p.stdout)
    clean = _run(tmp_path / "clean", agents, "1")
    batch, want = json.loads(got["batch"]), json.loads(Path(clean["batchFile"]).read_text())
    assert batch["counters"].pop("reader_process_failed") == 1
    assert batch["agents"] == want["agents"] and batch["ranges"] == want["ranges"]
    assert batch["counters"] == want["counters"]
    assert [e for e in got["errors"] if "reader process failed (killed by signal 9)" in e], got["errors"]


def test_a_reader_count_that_is_not_1_or_2_is_refused_and_nothing_moves(tmp_path):
    """``DISTILL_READ_PROCESSES=4`` or ``=two``: the run says which setting and what it takes,
    exits as a configuration error, and leaves no batch and no cursor behind."""
    agents = _corpus(tmp_path, files_per_agent=2, turns=4)
    state = tmp_path / "state"
    for bad in ("4", "two"):
        p = cli(state, "--agents-dir", str(agents), "run", process=True, check=False,
                env={"DISTILL_READ_PROCESSES": bad})
        assert p.returncode == 2 and "DISTILL_READ_PROCESSES" in p.stderr and "1 or 2" in p.stderr, p.stderr
        assert not (state / "cursor.json").exists() and not list(state.glob("batches/*.json"))
    assert _run(state, agents, "1")["action"] == "created"  # the same state, a good value: read as usual
