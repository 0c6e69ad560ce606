"""Redaction: leaks, false redactions and cost. `python tests/bench/bench_redact.py [--baseline-rev main]`

In one run, for the redactor in this tree and the one at ``--baseline-rev`` (loaded from git):
1. leaks: fake secrets of tests/data/secrets_corpus.py that survive ``redact`` (target 0);
2. false redactions: lines of ordinary technical text changed by ``redact``, on the half
   the rules were tuned on and on the half written before looking (report both);
3. cost: ``distill run`` (create_batch) over the tail benchmark's OpenClaw corpus with each
   redactor swapped in (median of --repeat, interleaved), and ``redact`` alone over every
   kept turn of that corpus plus the ordinary and secret lines;
4. end to end, this tree only: the real ``distill run --distill`` (OpenAI-compatible fake that
   echoes secrets back) over every secret in user text, assistant text, failed tool output and
   tool arguments of three formats (tests/test_secrets_leak.py's world): secrets found in a
   batch file, an LLM request and the store, counted for issue 22's kinds (Clojars and the other
   registry/deploy tokens, base64 ``user:password``, random values in config assignments) and
   for all (target 0 each).
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


ISSUE_22_KINDS = ("clojars_token", "rubygems_token", "nuget_key", "docker_hub_token", "gitlab_deploy_token",
                  "gitlab_runner_token", "artifactory_token", "doppler_token", "pulumi_token", "databricks_token",
                  "sentry_token", "base64_user_pass", "base64_user_pass_unpadded", "base64_user_pass_spaced",
                  "random_config_value", "random_hex_config_value")


def pipeline_leaks(workdir: Path) -> dict[str, tuple[int, int]]:
    """Where a secret survives the real run: {place: (issue 22's kinds leaked, all kinds leaked)}."""
    import json
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from test_secrets_leak import SECRETS, _echoing_answer, _strings, _write_world

    from tests.fakes import FakeOpenAI
    from tests.tail_helpers import cli
    from distill.config import load_settings
    from distill.store import MemoryStore

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    _write_world(workdir)
    saved = {k: os.environ.pop(k) for k in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY") if k in os.environ}
    try:
        with FakeOpenAI([], default=("json", _echoing_answer())) as fake:
            env = {"DISTILL_LLM": "openai", "DISTILL_LLM_BASE_URL": fake.base_url, "DISTILL_LLM_MODEL": "m",
                   "DISTILL_LLM_API_KEY": "k", "DISTILL_DB": str(workdir / "db"),
                   "DISTILL_MAX_MESSAGES_PER_AGENT": "100000"}
            cli(workdir / "state", "--agents-dir", str(workdir / "agents"), "run", "--distill", env=env, timeout=600)
            requests = list(fake.requests)
    finally:
        os.environ.update(saved)
    rows = MemoryStore.open(load_settings(db=workdir / "db", state_dir=workdir / "state")).list(limit=10_000)
    texts = {
        "batch file": "\n".join(f.read_text(encoding="utf-8") for f in (workdir / "state" / "batches").rglob("*.json")),
        "LLM request": "\n".join(r.raw.decode("utf-8", "replace") + "\n".join(_strings(r.body)) for r in requests),
        "store": "\n".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False, default=str) for r in rows),
    }
    return {place: (sum(leaked(sec, t) for k, sec, _ in SECRETS if k in ISSUE_22_KINDS),
                    sum(leaked(sec, t) for _, sec, _ in SECRETS)) for place, t in texts.items()}


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

    n22 = sum(k in ISSUE_22_KINDS for k, _, _ in corpus())
    for place, (mine, every) in pipeline_leaks(a.workdir / "pipeline").items():
        rows.append((f"[this tree] secrets in a {place}, real run --distill (target 0)",
                     f"{mine} / {n22}", f"issue 22's kinds; all kinds: {every} / {len(corpus())}"))

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
