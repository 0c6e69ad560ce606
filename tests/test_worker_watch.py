"""The worker's file watching: wake-ups, the automatic polling fallback, quiet session files."""

from __future__ import annotations

import threading
import time

import pytest
import watchdog.observers

from worker.watch import Watcher


def test_an_inbox_event_wakes_the_worker(tmp_path):
    wake = threading.Event()
    w = Watcher(tmp_path, wake)
    assert w.start().startswith("native events")
    try:
        (tmp_path / "t.json").write_text("{}")
        assert wake.wait(10)
    finally:
        w.stop()


def test_falls_back_to_polling_when_native_events_cannot_start(tmp_path, monkeypatch):
    class NoInotify(watchdog.observers.Observer):  # as when the inotify instance limit is reached
        def start(self):
            raise OSError(24, "inotify instance limit reached")

    monkeypatch.setattr(watchdog.observers, "Observer", NoInotify)
    wake = threading.Event()
    w = Watcher(tmp_path, wake)
    mode = w.start()
    try:
        assert mode.startswith("polling (native file events unavailable") and "inotify instance limit" in mode
        (tmp_path / "t.json").write_text("{}")
        assert wake.wait(10)  # the polling observer still wakes the worker
    finally:
        w.stop()


@pytest.mark.parametrize("poll", [False, True])
def test_a_session_file_is_due_once_it_has_been_quiet(tmp_path, poll):
    inbox, root = tmp_path / "inbox", tmp_path / "agents"
    (root / "main" / "sessions").mkdir(parents=True)
    inbox.mkdir()
    wake = threading.Event()
    w = Watcher(inbox, wake, sources=[root], poll=poll)
    w.start()
    try:
        f = root / "main" / "sessions" / "s1.jsonl"
        f.write_text('{"type":"session"}\n')  # created and written at once
        (root / "main" / "sessions" / "notes.txt").write_text("not a transcript")
        deadline = time.monotonic() + 10
        while w.next_due_in(0.3) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert w.due(0.3) == []  # still settling
        time.sleep(0.4)
        assert w.due(0.3) == [str(f)]
        assert w.due(0.3) == []  # reported once per burst of writes
    finally:
        w.stop()
