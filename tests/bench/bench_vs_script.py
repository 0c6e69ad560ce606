"""`distill run` against memory-lancedb-pro's `jsonl_distill.py`, whole process, one run.

    python tests/bench/bench_vs_script.py --script /path/to/jsonl_distill.py [--quick]

The script is not part of this repository (never commit it). Get it from
https://github.com/win4r/memory-lancedb-pro (``scripts/jsonl_distill.py``; measured against
commit 8bbca98e), e.g. ``git clone --depth 1 https://github.com/win4r/memory-lancedb-pro``,
and pass its path with ``--script`` or ``JSONL_DISTILL_SCRIPT``.

Every figure is the median wall time of a subprocess (interpreter start-up included), the two
programs interleaved, repeated ``--repeat`` times, reported as a ratio measured in this run:
(``tests/bench/bench_plain.py`` measures issue 25's absolute targets):

1. ``run`` over (a) a generated text-heavy OpenClaw corpus and (b) today's corpus shape
   (``bench_tail.make_corpus``: base64 images and long tool outputs). Both read every file
   from byte 0: distill on a fresh state directory, the script from a cursor seeded at
   offset 0 with ``--max-bytes-per-file`` and ``--max-messages-per-agent`` unbounded (its
   defaults would read 256 KB and keep 30 messages); distill with
   ``DISTILL_MAX_MESSAGES_PER_AGENT`` unbounded too. Target: distill ≥ 3× the script.
2. a no-op ``run`` over 10,000 unchanged files (``bench_tail.make_many``), both cursors at
   the end of every file. Target ≥ 3×.
3. start-up: ``distill status`` and ``distill run`` on an empty state directory with one
   session file holding only its header (the first run reads it, which loads the per-line
   path and orjson), the same ``run`` again with nothing new (what start-up costs an hourly
   cron run), each ≤ 3×, and ``distill enqueue`` of one valid session file (≤ 2.5×), each as a multiple of a bare
   ``python -c pass`` of the same interpreter, measured for both installs (see ``Python``):
   the regular one (``pip install .``, what a user has) is the figure that counts; the
   README's editable one runs an import hook in every interpreter, the bare one too, which
   halves the ratios.

Both programs run under a regular install of the tree being measured (``--install``), through
the ``distill`` console script as pip writes it.
4. peak RSS (``/usr/bin/time -f %M``) of ``distill run`` on one large file
   (``bench_tail.make_huge``; 2 GB, ``--quick`` 0.25 GB). Target ≤ 150 MB.

The text-heavy corpus (a), generated under --workdir and reused when present: 200 OpenClaw
session files, ~140 MiB, ~10k lines, eight agents (the issue's held-out corpus was 230 MB for
10k lines: longer tool outputs than these). Lines are user text turns (a sentence or
a short paragraph), assistant turns (thinking, text, one tool call) and tool results whose
output is log-uniform between 1 KB and 200 KB of plain text (log lines, file listings, prose;
median ~14 KB), so the bytes sit in tool output and the line count in text turns. About a
third of the text (turns and tool output) is Chinese. No images, no base64. ``--quick``
scales it to 40 files, ~29 MiB and the no-op set to 2,000 files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

from bench_tail import MB, WORDS, Writer, make_corpus, make_huge, make_many, sentence  # noqa: E402

ZH = ("部署 构建 缓存 重试 超时 依赖 数据库 索引 向量 预算 定时任务 队列 提交 游标 偏移 批次 文件 "
      "重命名 归档 服务 日志 配置 错误 修复 内存 线程 锁 网络 证书 权限 测试 版本 升级").split()
UNBOUNDED = str(10**9)


def zh_sentence(rng: random.Random, n: int) -> str:
    return "，".join("".join(rng.choice(ZH) for _ in range(rng.randint(2, 5))) for _ in range(max(1, n // 4))) + "。"


def text(rng: random.Random, n: int, zh: bool) -> str:
    return zh_sentence(rng, n) if zh else sentence(rng, n)


def tool_output(rng: random.Random, size: int, zh: bool) -> str:
    lines, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.4:
            line = f"2026-11-20T09:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} INFO {text(rng, 12, zh)}"
        elif kind < 0.7:
            name = rng.choice(ZH if zh else WORDS)
            line = f"-rw-r--r-- 1 u u {rng.randint(100, 99999):>6} Nov 20 09:00 src/{name}_{rng.randint(0, 999)}.py"
        else:
            line = text(rng, rng.randint(10, 40), zh)
        lines.append(line)
        total += len(line.encode()) + 1
    return "\n".join(lines)


def text_session(rng: random.Random, sid: str, lines: int) -> bytes:
    w = Writer(rng, sid)
    out = [orjson.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-20T09:00:00.000Z",
                         "cwd": "/home/u/src"}) + b"\n"]
    for _ in range(lines):
        zh = rng.random() < 1 / 3
        r = rng.random()
        if r < 0.3:
            out.append(w.line({"role": "user", "content": [{"type": "text", "text": text(rng, rng.randint(8, 80), zh)}]}))
        elif r < 0.6:
            call = {"type": "toolCall", "id": f"call_{w.n}", "name": "exec",
                    "arguments": {"command": f"grep -rn {rng.choice(ZH if zh else ['retry', 'cursor'])} src/"}}
            out.append(w.line({"role": "assistant", "content": [
                {"type": "thinking", "thinking": text(rng, rng.randint(10, 80), zh)},
                {"type": "text", "text": text(rng, rng.randint(10, 120), zh)}, call]}))
        else:
            size = int(1000 * 200 ** rng.random())  # log-uniform 1 KB .. 200 KB
            out.append(w.line({"role": "toolResult", "toolCallId": f"call_{w.n}", "toolName": "exec",
                               "content": [{"type": "text", "text": tool_output(rng, size, zh)}], "isError": False}))
    return b"".join(out)


def make_text_corpus(root: Path, files: int, lines_total: int, seed: int = 23) -> None:
    marker = root / ".complete"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    per = lines_total // files
    for i in range(files):
        d = root / "agents" / f"agent{i % 8}" / "sessions"
        d.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        (d / f"{sid}.jsonl").write_bytes(text_session(rng, sid, int(per * rng.uniform(0.3, 1.7))))
    marker.write_text("ok")


# --- running the two programs -------------------------------------------------------------

def files_of(root: Path) -> list[Path]:
    return sorted((root / "agents").glob("*/sessions/*.jsonl"))


class Python:
    """The interpreter both programs run under, and how it finds distill.

    ``editable``: this interpreter, distill found through the source tree (the README's
    ``pip install -e .``, whose import hook also runs inside every ``python -c pass`` in that
    venv: about 20 ms of a 55 ms bare start here, which flatters a start-up ratio).
    ``regular``: a venv made under the workdir holding a copy of ``distill/`` compiled to
    bytecode, as ``pip install .`` leaves it, and this venv's site-packages for the
    dependencies (a path in a ``.pth``, so their ``.pth`` import hooks do not run)."""

    def __init__(self, kind: str, exe: str, cwd: Path, pythonpath: str | None):
        self.kind, self.exe, self.cwd, self.pythonpath = kind, exe, cwd, pythonpath
        self.distill = str(Path(exe).parent / "distill")  # the console script pip writes

    def env(self) -> dict:
        # PYTHONDONTWRITEBYTECODE dropped: an installed distill has its bytecode compiled, so timing
        # it without would time the compiler (50-60 ms of every start-up here)
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("DISTILL_", "OPENCLAW_", "PYTHONPATH")) and k != "PYTHONDONTWRITEBYTECODE"}
        if self.pythonpath:
            e["PYTHONPATH"] = self.pythonpath
        e["DISTILL_MAX_MESSAGES_PER_AGENT"] = UNBOUNDED
        return e


EDITABLE = Python("editable", sys.executable, ROOT, str(ROOT))
PY = EDITABLE


def regular_install(work: Path, tree: Path = ROOT) -> Python:
    """Refreshed on every call: the copy is of the tree being measured (``tree``: another
    checkout, to measure it beside this one in the same run)."""
    import site
    import sysconfig

    venv = work / "regular-venv"
    exe = venv / "bin" / "python"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(subprocess.run([str(exe), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    deps = sysconfig.get_path("purelib")
    (purelib / "distill-bench-deps.pth").write_text(deps + "\n" + "\n".join(site.getsitepackages()) + "\n")
    shutil.rmtree(purelib / "distill", ignore_errors=True)
    shutil.copytree(tree / "distill", purelib / "distill", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(exe), "-m", "compileall", "-q", str(purelib / "distill")], check=True)
    script = venv / "bin" / "distill"  # pip's console-script template (pip 24)
    script.write_text(f"#!{exe}\nimport sys\nfrom distill.cli import entry\nif __name__ == '__main__':\n"
                      "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit(entry())\n")
    script.chmod(0o755)
    found = subprocess.run([str(exe), "-c", "import distill; print(distill.__file__)"], cwd=work,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found.startswith(str(purelib)), f"the regular install imports distill from {found}"
    return Python("regular", str(exe), work, None)


def env(**extra: str) -> dict:
    return PY.env() | extra


def timed(cmd: list[str], **extra: str) -> tuple[float, str]:
    return timed_cpu(cmd, **extra)[::2]


def timed_cpu(cmd: list[str], **extra: str) -> tuple[float, float, str]:
    """Wall time, CPU time (user + system; steadier than wall on a busy machine) and stdout."""
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(**extra), cwd=PY.cwd)
    dt, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return dt, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, p.stdout


def distill_cmd(state: Path, agents: Path, *args: str) -> list[str]:
    return [PY.distill, "--state-dir", str(state), "--agents-dir", str(agents), *args]


def script_cmd(script: Path, state: Path, agents: Path, *args: str) -> list[str]:
    return [PY.exe, str(script), "--state-dir", str(state), "--agents-dir", str(agents), *args]


def seed_script_cursor(state: Path, agents: Path, at_end: bool) -> None:
    """The script starts new files at their end; point its cursor at 0 (or the end) instead."""
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    files = {}
    for agent_dir in sorted(p for p in agents.iterdir() if p.is_dir()):
        for f in sorted((agent_dir / "sessions").glob("*.jsonl")):
            st = f.stat()
            files[str(f.resolve())] = {"agentId": agent_dir.name, "inode": st.st_ino,
                                       "committed": st.st_size if at_end else 0, "pending": None,
                                       "pendingBatch": None, "lastSize": st.st_size, "updatedAtMs": 0}
    (state / "cursor.json").write_text(json.dumps({"version": 1, "files": files}))


def compare_run(name: str, script: Path, corpus: Path, work: Path, repeat: int) -> list[tuple]:
    agents = corpus / "agents"
    paths = files_of(corpus)
    total = sum(p.stat().st_size for p in paths)
    biggest = max(p.stat().st_size for p in paths) + 1  # the script reads this much per file at once
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    ours, theirs, turns = [], [], 0
    for _ in range(repeat):
        shutil.rmtree(work / "d", ignore_errors=True)
        dt, out = timed(distill_cmd(work / "d", agents, "run", "--json"))
        res = json.loads(out)
        assert res["summary"]["bytes"] == total, f"distill read {res['summary']['bytes']} of {total} bytes"
        assert not res["errors"], f"the measured run reported errors (an incomplete install?): {res['errors'][:3]}"
        turns = res["summary"]["turns"]
        ours.append(dt)
        seed_script_cursor(work / "s", agents, at_end=False)
        dt, out = timed(script_cmd(script, work / "s", agents, "run", "--max-bytes-per-file", str(biggest),
                                   "--max-messages-per-agent", UNBOUNDED))
        assert json.loads(out)["action"] == "created"
        theirs.append(dt)
    d, s = (statistics.median(t) for t in (ours, theirs))
    return [(f"{name}: {len(paths)} files, {total / MB:.0f} MiB, distill {turns} turns", "", ""),
            ("  distill run", f"{d:.3f} s", f"median of {repeat}"),
            ("  jsonl_distill.py run", f"{s:.3f} s", f"median of {repeat}"),
            ("  speed-up (target >= 3x)", f"{s / d:.2f}x", "")]


def compare_noop(script: Path, many: Path, work: Path, repeat: int) -> list[tuple]:
    from distill.tails.ledger import commit_batch, create_batch
    from distill.config import load_settings

    agents = many / "agents"
    state = work / "noop-d"
    shutil.rmtree(state, ignore_errors=True)
    s = load_settings(state_dir=state, agents_dir=agents, max_messages_per_agent=10**9)
    while True:  # read everything once and commit, so the timed runs have nothing to do
        res = create_batch(s)
        if not res.batch_file:
            break
        commit_batch(s, Path(res.batch_file))
    seed_script_cursor(work / "noop-s", agents, at_end=True)
    ours, theirs = [], []
    for _ in range(repeat):
        dt, out = timed(distill_cmd(state, agents, "run", "--json"))
        assert json.loads(out)["action"] == "noop", out
        ours.append(dt)
        dt, out = timed(script_cmd(script, work / "noop-s", agents, "run"))
        assert json.loads(out)["action"] == "noop", out
        theirs.append(dt)
    d, sc = statistics.median(ours), statistics.median(theirs)
    n = len(files_of(many))
    return [(f"no-op run over {n:,} unchanged files", "", ""),
            ("  distill run", f"{d:.3f} s", f"median of {repeat}"),
            ("  jsonl_distill.py run", f"{sc:.3f} s", f"median of {repeat}"),
            ("  speed-up (target >= 3x)", f"{sc / d:.2f}x", "")]


def startup(work: Path, repeat: int) -> list[tuple]:
    agents = work / "startup" / "agents"
    session = agents / "main" / "sessions" / "s1.jsonl"
    session.parent.mkdir(parents=True, exist_ok=True)
    session.write_bytes(b'{"type":"session","version":3,"id":"s1"}\n')
    state = work / "startup" / "state"
    cmds = {
        "python -c pass": [PY.exe, "-c", "pass"],
        "distill status": distill_cmd(state, agents, "status"),
        "distill run (empty state)": distill_cmd(state, agents, "run"),
        "distill run (nothing new)": distill_cmd(state, agents, "run"),
        "distill enqueue": distill_cmd(state, agents, "enqueue", "--agent", "main", "--session-file", str(session)),
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        shutil.rmtree(state, ignore_errors=True)
        for name, cmd in cmds.items():
            wall, cpu, _ = timed_cpu(cmd)
            times[name].append(wall)
            cpus[name].append(cpu)
    base, base_cpu = statistics.median(times["python -c pass"]), statistics.median(cpus["python -c pass"])
    targets = {"distill status": 3, "distill run (empty state)": 3, "distill run (nothing new)": 3, "distill enqueue": 2.5}
    rows = [(f"start-up, {PY.kind} install, wall (CPU)", "", f"median of {repeat}; python -c pass = {base * 1000:.0f} ms "
                                          f"({base_cpu * 1000:.0f} ms CPU)")]
    for name, target in targets.items():
        m, c = statistics.median(times[name]), statistics.median(cpus[name])
        rows.append((f"  {name} (target <= {target}x)", f"{m / base:.2f}x",
                     f"{m * 1000:.0f} ms; CPU {c / base_cpu:.2f}x"))
    return rows


def peak_rss(work: Path, gb: float) -> list[tuple]:
    huge = work / "huge" / "agents" / "main" / "sessions" / "huge.jsonl"
    make_huge(huge, int(gb * (1 << 30)))
    state = work / "state-huge"
    shutil.rmtree(state, ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *distill_cmd(state, huge.parents[2], "run", "--json")],
                       capture_output=True, text=True, env=env(), cwd=PY.cwd, check=True)
    dt = time.perf_counter() - t
    rss_mb = int(p.stderr.strip().splitlines()[-1]) / 1024
    return [(f"peak RSS of distill run on one {huge.stat().st_size / (1 << 30):.2f} GiB file (target <= 150 MB)",
             f"{rss_mb:.0f} MiB", f"{dt:.1f} s")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--script", type=Path, default=os.environ.get("JSONL_DISTILL_SCRIPT"),
                    help="path to memory-lancedb-pro's scripts/jsonl_distill.py (or env JSONL_DISTILL_SCRIPT)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/distill-bench-vs-script"))
    ap.add_argument("--quick", action="store_true", help="small corpora (40 files, 2,000 no-op files, 0.25 GB)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["text", "today", "noop", "startup", "rss"], action="append",
                    help="run just these parts (repeatable)")
    ap.add_argument("--install", choices=["regular", "editable"], default="regular",
                    help="how distill is installed for the timed runs (see Python); start-up is measured both ways")
    a = ap.parse_args()
    parts = set(a.only or ["text", "today", "noop", "startup", "rss"])
    if parts & {"text", "today", "noop"} and (a.script is None or not Path(a.script).is_file()):
        raise SystemExit("give the script's path: --script PATH or JSONL_DISTILL_SCRIPT (see this file's docstring)")
    wd = a.workdir / ("quick" if a.quick else "full")
    wd.mkdir(parents=True, exist_ok=True)
    print(f"corpora under {wd} (reused when present); load average {os.getloadavg()[0]:.1f}", flush=True)
    global PY
    regular = regular_install(wd)
    PY = regular if a.install == "regular" else EDITABLE
    print(f"distill and the script run under the {PY.kind} install ({PY.exe})", flush=True)
    rows: list[tuple] = []

    def show(new: list[tuple]) -> None:
        rows.extend(new)
        for r in new:
            print(f"{r[0]:<75} {r[1]:>10}  {r[2]}", flush=True)

    if "text" in parts:
        make_text_corpus(wd / "text", 40 if a.quick else 200, 2_000 if a.quick else 10_000)
        show(compare_run("(a) text-heavy corpus", a.script, wd / "text", wd, a.repeat))
    if "today" in parts:
        make_corpus(wd / "today", 40 if a.quick else 220, (24 if a.quick else 240) * MB)
        show(compare_run("(b) today's corpus (images, long tool output)", a.script, wd / "today", wd, a.repeat))
    if "noop" in parts:
        make_many(wd / "many", 2_000 if a.quick else 10_000)
        show(compare_noop(a.script, wd / "many", wd, a.repeat))
    if "startup" in parts:
        chosen = PY
        for install in (regular, EDITABLE):
            PY = install
            show(startup(wd, max(a.repeat, 10)))
        PY = chosen
    if "rss" in parts:
        show(peak_rss(wd, 0.25 if a.quick else 2.0))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
