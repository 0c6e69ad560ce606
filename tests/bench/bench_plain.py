"""Issue 25's targets for the plain core, whole process: `python tests/bench/bench_plain.py [--quick]`

1. start-up (median wall and CPU of ``--repeat`` runs, regular install, beside ``python -c pass``
   measured in the same run): ``distill enqueue`` ≤ 50 ms; ``distill status``, a no-op
   ``distill run`` over 10,000 unchanged files and a first ``distill run`` over one transcript
   (bench_tail's mixed session, ~1 MiB) each ≤ 150 ms;
2. throughput per core: CPU seconds of a first ``distill run`` over a corpus against a bare
   loop that only decodes every line with orjson (its own process, same files, page cache
   warm); target ≥ 0.4× on the text-heavy corpus (bench_vs_script's) and on the mixed one
   (bench_tail's: thinking blocks, long tool output, some failed, base64 images);
3. peak RSS of ``distill run`` on one 2 GiB transcript ≤ 150 MB (bench_vs_script.peak_rss).

Corpora are generated under --workdir and reused. The machine's load is printed: on a busy
machine wall times grow with it, CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[2]))

import bench_vs_script as vs  # noqa: E402
from bench_tail import MB, blobs, make_corpus, make_many, session_bytes  # noqa: E402
from bench_vs_script import make_text_corpus  # noqa: E402

DECODE = ("import sys, orjson\n"
          "for p in sys.argv[1:]:\n"
          "    with open(p, 'rb') as f:\n"
          "        for line in f:\n"
          "            try:\n"
          "                orjson.loads(line)\n"
          "            except orjson.JSONDecodeError:\n"
          "                pass\n")


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def startup(work: Path, many: Path, repeat: int, installs: list[vs.Python]) -> list[tuple]:
    one = work / "one" / "agents" / "main" / "sessions" / "s1.jsonl"
    if not one.exists():
        one.parent.mkdir(parents=True)
        rng = random.Random(5)
        image, tool = blobs(rng)
        one.write_bytes(session_bytes(rng, "s1", 1 * MB, image, tool))
    agents_one = one.parents[2]
    # the no-op over many files: read and committed once, then timed with nothing new
    state_many = work / "many-state"
    if not (state_many / "cursor.json").exists():
        from distill.config import load_settings
        from distill.tails.ledger import commit_batch, create_batch

        s = load_settings(state_dir=state_many, agents_dir=many / "agents", max_messages_per_agent=10**9)
        while (made := create_batch(s)).batch_file:
            commit_batch(s, Path(made.batch_file))
    cmds: dict[str, list[str]] = {"python -c pass": [vs.PY.exe, "-c", "pass"]}
    states: list[Path] = []
    for n, py in enumerate(installs):
        tag = "" if n == 0 else f" [{py.cwd.name}]"
        many_n = work / f"many-state-{n}"  # each install its own: the no-op digest is per version
        if not many_n.exists():
            shutil.copytree(state_many, many_n, ignore=shutil.ignore_patterns("cursor.noop", "cursor.check"))
        one_n, empty_n = work / f"one-state-{n}", work / f"empty-state-{n}"
        states += [one_n, empty_n]

        def cmd(state: Path, agents: Path, *args: str, py: vs.Python = py) -> list[str]:
            return [py.distill, "--state-dir", str(state), "--agents-dir", str(agents), *args]

        cmds[f"distill enqueue (target <= 50 ms){tag}"] = cmd(empty_n, agents_one, "enqueue", "--agent", "main",
                                                              "--session-file", str(one))
        cmds[f"distill status (target <= 150 ms){tag}"] = cmd(one_n, agents_one, "status")
        cmds[f"distill run, no-op over {len(list(many.glob('agents/*/sessions/*.jsonl'))):,} files "
             f"(target <= 150 ms){tag}"] = cmd(many_n, many / "agents", "run")
        cmds[f"distill run, first over one transcript (target <= 150 ms){tag}"] = cmd(one_n, agents_one, "run")
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for state in states:
            shutil.rmtree(state, ignore_errors=True)
        for name, argv in cmds.items():
            wall, cpu, out = vs.timed_cpu(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base = statistics.median(walls["python -c pass"])
    rows = [(f"start-up, {vs.PY.kind} install, whole process", "wall", f"CPU; x python -c pass; median of {repeat}")]
    rows += [(f"  {name}", median_ms(walls[name]), f"{median_ms(cpus[name])}; {statistics.median(walls[name]) / base:.2f}x")
             for name in cmds]
    return rows


def throughput(name: str, corpus: Path, work: Path, repeat: int) -> list[tuple]:
    paths = sorted((corpus / "agents").glob("*/sessions/*.jsonl"))
    total = sum(p.stat().st_size for p in paths)
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)
    ours, bare = [], []
    for _ in range(repeat):
        shutil.rmtree(work / "tp-state", ignore_errors=True)
        _, cpu, out = vs.timed_cpu(vs.distill_cmd(work / "tp-state", corpus / "agents", "run", "--json"))
        assert json.loads(out)["summary"]["bytes"] == total
        ours.append(cpu)
        _, cpu, _ = vs.timed_cpu([vs.PY.exe, "-c", DECODE, *map(str, paths)])
        bare.append(cpu)
    d, b = statistics.median(ours), statistics.median(bare)
    return [(f"{name}: {len(paths)} files, {total / MB:.0f} MiB", "", ""),
            ("  distill run, CPU", f"{d:.2f} s", f"{total / MB / d:.0f} MiB/s per core"),
            ("  bare orjson decode of every line, CPU", f"{b:.2f} s", f"{total / MB / b:.0f} MiB/s"),
            ("  distill / bare decode, per core (target >= 0.4x)", f"{b / d:.2f}x", f"median of {repeat}")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/distill-bench-plain"))
    ap.add_argument("--quick", action="store_true", help="smaller corpora (2,000 no-op files, 0.25 GiB for RSS)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["startup", "throughput", "rss"], action="append")
    ap.add_argument("--install", choices=["regular", "editable"], default="regular")
    ap.add_argument("--against", type=Path, help="another checkout (e.g. main) whose start-up is timed beside this one")
    a = ap.parse_args()
    parts = set(a.only or ["startup", "throughput", "rss"])
    wd = a.workdir
    wd.mkdir(parents=True, exist_ok=True)
    vs.PY = vs.regular_install(wd) if a.install == "regular" else vs.EDITABLE
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {vs.PY.kind} install", flush=True)

    def show(rows: list[tuple]) -> None:
        for r in rows:
            print(f"{r[0]:<66} {r[1]:>10}  {r[2]}", flush=True)

    if "startup" in parts:
        many = wd / "many"
        make_many(many, 2_000 if a.quick else 10_000)
        installs = [vs.PY] + ([vs.regular_install(wd / "against", a.against)] if a.against else [])
        show(startup(wd, many, max(a.repeat, 10), installs))
    if "throughput" in parts:
        make_text_corpus(wd / "text", 200, 10_000)
        show(throughput("text-heavy corpus", wd / "text", wd, a.repeat))
        make_corpus(wd / "mixed", 220, 240 * MB)
        show(throughput("mixed corpus (thinking, long tool output, images)", wd / "mixed", wd, a.repeat))
    if "rss" in parts:
        show(vs.peak_rss(wd, 0.25 if a.quick else 2.0))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
