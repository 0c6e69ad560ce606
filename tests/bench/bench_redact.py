"""Redaction: leaks, false redactions and cost. `python tests/bench/bench_redact.py [--baseline-rev main]`

In one run, for the redactor in this tree and the one at ``--baseline-rev`` (loaded from git):
1. leaks: fake secrets of tests/data/secrets_corpus.py that survive ``redact`` (target 0);
2. false redactions: lines of ordinary technical text changed by ``redact``, on the half
   the rules were tuned on and on the half written before looking (report both);
3. cost: ``distill run`` (create_batch) over the tail benchmark's OpenClaw corpus with each
   redactor swapped in (median of --repeat, interleaved), and ``redact`` alone over every
   kept turn of that corpus plus the ordinary and secret lines.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))

from bench_tail import files_of, make_corpus, settings_for

import distill.text.redact as current
from distill.tails.ledger import create_batch, load_batch
from distill.sources import base
from tests.data.secrets_corpus import corpus, leaked, ordinary

MB = 1 << 20


def baseline(rev: str) -> types.ModuleType:
    for path in ("distill/text/redact.py", "distill/redact.py"):  # moved into distill/text/
        got = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if got.returncode == 0:
            break
    got.check_returncode()
    mod = types.ModuleType("redact_baseline")
    # where its data files and relative imports resolve (this tree's: the baseline only brings its rules)
    mod.__file__, mod.__package__ = str(ROOT / path), path.rsplit("/", 1)[0].replace("/", ".")
    exec(compile(got.stdout, f"{rev}:{path}", "exec"), mod.__dict__)  # noqa: S102 - our own file, from git
    return mod


def quality(redact) -> dict:
    secrets = corpus()
    leaks = sorted({kind for kind, secret, text in secrets if leaked(secret, redact(text)[0])})
    n_leaks = sum(leaked(secret, redact(text)[0]) for _, secret, text in secrets)
    out = {"secrets": len(secrets), "kinds": len({k for k, _, _ in secrets}), "leaks": n_leaks, "leaked_kinds": leaks}
    for half in ("tune", "report"):
        lines = ordinary(half)
        changed = [line for line in lines if redact(line)[0] != line]
        out[half] = (len(changed), len(lines), changed)
    return out


def time_run(corpus_dir: Path, state: Path, redact) -> tuple[float, int]:
    shutil.rmtree(state, ignore_errors=True)
    base.redact = redact
    s = settings_for(corpus_dir, state, max_messages_per_agent=10**9)
    t = time.perf_counter()
    res = create_batch(s)
    dt = time.perf_counter() - t
    return dt, res.summary.turns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="main")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/distill-bench-redact"))
    ap.add_argument("--files", type=int, default=80)
    ap.add_argument("--mb", type=int, default=80)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    old = baseline(a.baseline_rev)
    rows = []
    for name, mod in (("this tree", current), (a.baseline_rev, old)):
        q = quality(mod.redact)
        rows.append((f"[{name}] fake secrets leaked (target 0)", f"{q['leaks']} / {q['secrets']}",
                     f"{q['kinds']} kinds; leaked kinds: {', '.join(q['leaked_kinds']) or '-'}"))
        for half in ("tune", "report"):
            n, total, changed = q[half]
            rows.append((f"[{name}] ordinary lines changed, {half} half", f"{n} / {total}",
                         "; ".join(c[:60] for c in changed[:3])))

    corpus_dir = a.workdir / "corpus"
    make_corpus(corpus_dir, a.files, a.mb * MB)
    total = sum(p.stat().st_size for p in files_of(corpus_dir))
    runs: dict[str, list[float]] = {"new": [], "old": []}
    for _ in range(a.repeat):
        for key, fn in (("new", current.redact), ("old", old.redact)):
            dt, turns = time_run(corpus_dir, a.workdir / f"state-{key}", fn)
            runs[key].append(dt)
    base.redact = current.redact
    new_t, old_t = statistics.median(runs["new"]), statistics.median(runs["old"])
    rows += [
        (f"distill run over {total / MB:.0f} MiB, {turns} turns, this tree", f"{new_t:.3f} s",
         f"median of {a.repeat}: {', '.join(f'{x:.3f}' for x in runs['new'])}"),
        (f"distill run, same corpus, {a.baseline_rev}", f"{old_t:.3f} s",
         f"median of {a.repeat}: {', '.join(f'{x:.3f}' for x in runs['old'])}"),
        ("run time, this tree / baseline (target <= 1.10)", f"{new_t / old_t:.3f}x", ""),
    ]

    batch = load_batch(Path(create_batch(settings_for(corpus_dir, a.workdir / "state-texts",
                                                      max_messages_per_agent=10**9)).batch_file))
    texts = [m.text for ag in batch.agents for m in ag.messages]
    texts += ordinary("tune") + ordinary("report") + [t for _, _, t in corpus()]
    shutil.rmtree(a.workdir / "state-texts", ignore_errors=True)
    for name, fn in (("this tree", current.redact), (a.baseline_rev, old.redact)):
        fn("warm up: a@b.io +1 415 555 0134 AKIA")
        best = min(_time_all(fn, texts) for _ in range(3))
        rows.append((f"redact() alone over {len(texts)} texts, {name}", f"{best * 1e3:.1f} ms",
                     f"{best / len(texts) * 1e6:.1f} µs a text, best of 3"))

    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")


def _time_all(fn, texts: list[str]) -> float:
    t = time.perf_counter()
    for x in texts:
        fn(x)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
