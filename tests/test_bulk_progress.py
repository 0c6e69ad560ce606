"""Bulk writes say how far they are: rows, rate and time left on stderr; stdout's --json stays one object."""

from __future__ import annotations

import io
import json
from unittest import mock

from distill.progress import RowProgress, eta
from tests.store_helpers import HashEmbedder
from tests.tail_helpers import run_main


def test_import_prints_progress_on_stderr_and_one_json_object_on_stdout(tmp_path):
    doc = {"memories": [{"text": f"Fact {n}: host-{n} runs the backup job at {n % 24}:00.", "category": "fact"}
                        for n in range(600)]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    flags = ["--state-dir", str(tmp_path / "state"), "--db", str(tmp_path / "db")]
    with mock.patch("distill.store.memory.make_embedder", return_value=HashEmbedder()):
        out = run_main([*flags, "memories", "import", str(path), "--json"])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == 600  # one object
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("import: 0/600 memories (0.0%)")
    assert lines[-1].startswith("import: 600/600 memories (100.0%), ") and lines[-1].endswith("/s")


def test_time_left_follows_the_rate():
    assert eta(100, 1000, 10.0) == "10/s, 1m 30s left"
    assert eta(0, 1000, 0.0) == "0/s"
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    show = RowProgress("reembed", 0, stream=tty)
    show.step(0, 50)
    show.step(50, 50)
    show.finish()
    text = tty.getvalue()
    assert text.startswith("\rreembed: 0/50 rows (0.0%)") and "\rreembed: 50/50 rows (100.0%)" in text
    assert text.endswith("\n")  # the line is ended before whatever prints next
