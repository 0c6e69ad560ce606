"""Every result a command returns has its text in distill/cli/render.py, and sizes print one way."""

from __future__ import annotations

import pytest

from distill.backfill import BackfillReport
from distill.cli.distill_cmd import DistillOutput, RetryOutput
from distill.cli.memories import (CompactResult, ExportResult, ForgetResult, HistoryResult, RestoreResult, RowsResult,
                                  SearchResult, ShowResult, SupersedeResult)
from distill.cli.queue_cmds import Queued
from distill.cli.render import RENDERERS, format_size, render, renderer_for
from distill.cli.tails import StepResult
from distill.hooks import HookResult
from distill.store.calibration import Scores
from distill.hooks.doctor import HooksDoctorReport
from distill.store.converge import ConvergeReport
from distill.store.doctor import DoctorReport, MigrateReport
from distill.store.models import ImportReport, MemoryHit, MemoryRow, ReembedReport, StoreStats
from distill.model import BatchResult, InitResult, RunSummary, StatusResult

RESULTS = [BackfillReport, BatchResult, DistillOutput, RetryOutput, CompactResult, ExportResult, ForgetResult,
           RowsResult, SearchResult, ShowResult, HistoryResult, SupersedeResult, RestoreResult, Queued, StepResult,
           HookResult, InitResult, StatusResult, Scores,
           DoctorReport, MigrateReport, ImportReport, MemoryHit, MemoryRow, ReembedReport, StoreStats, RunSummary,
           ConvergeReport, HooksDoctorReport]


def test_every_result_has_its_own_renderer_and_every_renderer_a_result():
    """A renamed result class would otherwise print as its repr."""
    assert {cls.__name__ for cls in RESULTS} == set(RENDERERS)
    for cls in RESULTS:
        assert renderer_for(cls) is RENDERERS[cls.__name__]
        assert not any(hasattr(cls, m) for m in ("human", "line")), f"{cls.__name__} renders itself"


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (3174, "3.1 KiB"),
                                     (248 * 2**20, "248.0 MiB"), (2 * 2**30, "2.0 GiB"), (5000 * 2**30, "5000.0 GiB")])
def test_format_size_in_binary_units(n, text):
    assert format_size(n) == text


def test_sizes_and_summary_lines_print_through_the_one_formatter():
    s = RunSummary(action="committed", files=2, bytes=4096, turns=7, memories_added=3, seconds=1.5,
                   counters={"chunks_waiting": 1, "dropped_cap": 2})
    assert render(StepResult(action="commit", summary=s)) == (
        "committed: 2 files, 4096 bytes, 7 turns, 3 memories added, 0 skipped as duplicate, 2 over the cap, "
        "0 LLM calls, 0 tokens, 1.50 s\n"
        "1 chunk set aside, their turns not committed: see `distill status`, then `distill retry` (or `distill retry --drop`)")
    assert render(CompactResult(size_bytes_before=3 * 2**20, size_bytes_after=1536, version=4)) == \
        "compacted: 3.0 MiB -> 1.5 KiB (version 4)"
