"""A batch's life, every transition in one place (docs/tails.md draws the same diagram).

::

    distill run ──cut──▶ PENDING ─────────────────────────────────────────────▶ COMMITTED
                           │                                                     ▲ batches/done/
                           │  each chunk (batches/<id>.chunks):                  │
                           │    new ──map──▶ MAPPED ──store──▶ STORED ───commit──┘ every chunk stored
                           │     │                                  │              or dropped
                           │     └──fail──▶ SET ASIDE ──retry──▶ map again
                           │                    │ ╲
                           │                    │  └──drop──▶ DROPPED
                           │                    └──commit──▶ PARTIAL: the cursor stops at the
                           │                                 first byte a set-aside chunk holds
                           └──abort──▶ ABORTED (batches/aborted/; its bytes are read again)

What each transition writes, and in which order, so that a crash anywhere loses nothing and
stores nothing twice: ``cut`` writes the batch file, then marks its ranges pending in the
cursor (:func:`~distill.tails.ledger.create_batch`); ``map`` keeps a chunk's validated
candidates in ``.chunks`` as soon as a paid answer comes; ``store`` writes memories through the
store's dedup, then marks their chunks stored; ``commit`` moves the file to ``done/``, then
advances the cursor (:func:`~distill.tails.ledger.commit_batch` /
:func:`~distill.tails.ledger.commit_partial`); ``abort`` releases the ranges, then moves the
file to ``aborted/`` (:func:`~distill.tails.ledger.abort_batch`). A provider that is down for
every chunk of an attempt sets nothing aside: the batch stays PENDING as it was.

The ledger (:mod:`distill.tails.ledger`) keeps the files and the cursor; this class is what the
pipeline calls, by the names above. Two processes never work one batch: :meth:`BatchLife.take`
holds ``batches/.<id>.distill.lock`` until :meth:`BatchLife.release`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ..config import Settings
from ..errors import DistillError, SchemaMismatch
from ..lock import FileLock
from ..model import Batch, BatchMessage, BatchProgress, BatchResult, ChunkState, RunSummary
from . import ledger
from .state import distilling_lock


class BatchLife:
    """One pending batch while a process works it: the batch, its chunks' progress, and the
    transitions (each written as it happens)."""

    def __init__(self, settings: Settings, path: Path, batch: Batch, progress: BatchProgress, guard: FileLock):
        self.settings, self.path, self.batch, self.progress = settings, path, batch, progress
        self._guard = guard

    # --- a batch as a whole -------------------------------------------------------------------

    @staticmethod
    def cut(settings: Settings, *, only_files: set[Path] | None = None,
            file_filter: Callable[[Path, os.stat_result], bool] | None = None,
            cursor_path: Path | None = None,
            read_limit: Callable[[str], int | None] | None = None,
            printed: Callable[[BatchResult], tuple[str, str]] | None = None) -> BatchResult:
        """The new tails → a PENDING batch (or ``noop``: nothing new)."""
        return ledger.create_batch(settings, only_files=only_files, file_filter=file_filter,
                                   cursor_path=cursor_path, read_limit=read_limit, printed=printed)

    @staticmethod
    def commit_file(settings: Settings, batch_file: Path) -> RunSummary:
        """PENDING → COMMITTED by ``distill commit`` (something else stored its memories);
        refused while chunks are SET ASIDE. Idempotent."""
        return ledger.commit_batch(settings, batch_file)

    @staticmethod
    def abort(settings: Settings, batch_file: Path) -> RunSummary:
        """PENDING → ABORTED: its ranges are released and read again by the next run."""
        return ledger.abort_batch(settings, batch_file)

    @staticmethod
    def pending(settings: Settings, cursor_path: Path | None = None) -> list[Path]:
        """The PENDING batches' files, oldest first."""
        return ledger.pending_batches(settings, cursor_path=cursor_path)

    @staticmethod
    def with_set_aside(settings: Settings, cursor_path: Path | None = None) -> list[Path]:
        """The PENDING batches with chunks SET ASIDE (read-only)."""
        return [p for p in ledger.pending_batches(settings, cursor_path=cursor_path) if BatchLife.has_set_aside(p)]

    @staticmethod
    def has_set_aside(batch_file: Path) -> bool:
        """Whether the batch has chunks SET ASIDE (a damaged progress file: no, it is mapped again)."""
        try:
            progress = ledger.load_progress(batch_file)
        except SchemaMismatch:
            return False
        return bool(progress and progress.with_status("failed"))

    @staticmethod
    def own_pending(settings: Settings, batch_file: Path, doing: str) -> Path:
        """The state dir's own file of the PENDING batch ``batch_file`` names, or a refusal naming
        it (a foreign batch, one not there, a folder, one COMMITTED or ABORTED), before anything
        is mapped, stored or written: a batch is distilled only where it is pending."""
        path, batch, where = ledger.locate_batch(settings, batch_file)
        if where != "pending":
            what, folder = (("committed", settings.state.done) if where == "done"
                            else ("aborted", settings.state.aborted))
            raise DistillError(f"batch {batch.batch_id} was already {what} (it is in {folder}); "
                               f"there is nothing to {doing}")
        if not ledger.is_pending(settings, batch):
            raise DistillError(
                f"batch {batch.batch_id} ({path}) is not pending in its cursor: a run crashed before recording it, "
                f"or its transcript was deleted and the range released; there is nothing to {doing} (the next "
                "`distill run` moves it to batches/aborted/ and reads its bytes again)")
        return path

    @classmethod
    def take(cls, settings: Settings, path: Path) -> BatchLife | None:
        """The batch at ``path``, held for this process; None if it is gone (COMMITTED or ABORTED by
        whoever held it before). Raises LockBusy when another process works it now."""
        lock_path = distilling_lock(path)
        guard = FileLock(lock_path, purpose=f"distilling {path.name}").acquire(timeout=0)
        try:
            if not path.exists():
                lock_path.unlink(missing_ok=True)
                guard.release()
                return None
            batch = ledger.load_batch(path)
            progress = ledger.load_progress(path) or BatchProgress(
                chunk_tokens=settings.chunk_tokens, overlap_turns=settings.chunk_overlap_turns)
        except BaseException:
            guard.release()
            raise
        return cls(settings, path, batch, progress, guard)

    def release(self) -> None:
        self._guard.release()

    # --- its chunks ---------------------------------------------------------------------------

    def to_map(self, indexes: Iterable[int], retry: bool) -> list[int]:
        """The chunks still new, and the SET ASIDE ones when retrying."""
        chunks = self.progress.chunks
        return [i for i in indexes if str(i) not in chunks or (retry and chunks[str(i)].status == "failed")]

    def mapped(self, index: int, agent: str, candidates: list[dict], paid: bool) -> None:
        """new / SET ASIDE → MAPPED. A paid answer is kept at once (the rules extractor's costs nothing)."""
        self.progress.chunks[str(index)] = ChunkState(status="mapped", agent=agent, candidates=candidates)
        if paid:
            self._save()

    def set_aside(self, failures: list[tuple[int, str, str, list[BatchMessage]]]) -> None:
        """new / SET ASIDE → SET ASIDE, per (index, agent, error, the chunk's messages): each holds
        the cursor at its first byte in every file it has turns of."""
        for index, agent, error, messages in failures:
            before = self.progress.chunks.get(str(index))
            hold: dict[str, int] = {}
            spans: dict[str, list] = {}
            for m in messages:
                key = m.id.rsplit(":", 1)[0]
                hold[key] = min(m.start, hold.get(key, m.start))
                span = spans.setdefault(m.file, [m.file, m.start, m.end])
                span[1], span[2] = min(span[1], m.start), max(span[2], m.end)
            self.progress.chunks[str(index)] = ChunkState(
                status="failed", agent=agent, error=error, attempts=(before.attempts if before else 0) + 1,
                hold=hold, ranges=list(spans.values()))
        self._save()

    def drop(self) -> int:
        """SET ASIDE → DROPPED (``distill retry --drop``); how many."""
        failed = self.progress.with_status("failed").values()
        for c in failed:
            c.status = "dropped"
        self._save()
        return len(failed)

    def mapped_candidates(self) -> list[dict]:
        return [c for chunk in self.progress.with_status("mapped").values() for c in chunk.candidates]

    def stored(self, commit_next: bool) -> None:
        """MAPPED → STORED, once their memories are in the store. Saved unless a whole commit
        follows (it deletes the progress file)."""
        mapped = self.progress.with_status("mapped")
        for c in mapped.values():
            c.status, c.candidates = "stored", []
        if mapped and (self.progress.holds() or not commit_next):
            self._save()

    def held(self) -> bool:
        """Whether SET ASIDE chunks hold part of the batch back from a commit."""
        return bool(self.progress.holds())

    def waiting(self) -> int:
        """Chunks SET ASIDE."""
        return len(self.progress.with_status("failed"))

    def commit(self) -> RunSummary:
        """PENDING → COMMITTED, or PARTIAL while chunks are SET ASIDE; the summary counts what
        this call committed."""
        holds = self.progress.holds()
        done = ledger.commit_partial(self.settings, self.path, holds, self.batch)
        if not holds:
            distilling_lock(self.path).unlink(missing_ok=True)  # whoever waits on it finds the batch gone
        return done

    def _save(self) -> None:
        ledger.save_progress(self.progress, self.path)

