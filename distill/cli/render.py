"""Readable text for every result a command returns; the models themselves hold only data.

:func:`render` picks the renderer by the class name of the result (or of one of its bases), so
this module imports none of the models — ``distill status`` and ``distill run`` pay only for the
modules they already load, and the worker logs a run through the same :func:`summary_line`.
Every size a person reads goes through :func:`format_size` (binary units: 1 KiB = 1024 bytes).
"""

from __future__ import annotations

import os
import time

from collections.abc import Callable
from typing import Any

RENDERERS: dict[str, Callable[[Any], str]] = {}


def renders(*names: str):
    """Register the decorated function as the text of results whose class is one of ``names``."""
    def add(fn):
        for name in names:
            RENDERERS[name] = fn
        return fn
    return add


def renderer_for(cls: type) -> Callable[[Any], str] | None:
    return next((RENDERERS[c.__name__] for c in cls.__mro__ if c.__name__ in RENDERERS), None)


def render(result: Any) -> str:
    fn = renderer_for(type(result))
    return fn(result) if fn else str(result)


def format_size(n: float) -> str:
    """``512 B``, ``3.1 KiB``, ``248.0 MiB``, ``2.0 GiB``: the one way sizes are printed."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------- runs
@renders("RunSummary")
def summary_line(s) -> str:
    """The one line every run ends with (and the worker logs)."""
    from ..trust import summary_note

    dropped = "".join(f", {n} {why}" for why, n in s.dropped().items() if n) + summary_note(s.counters)
    return (
        f"{s.action}: {s.files} files, {s.bytes} bytes, {s.turns} turns, "
        f"{s.memories_added} memories added{_lifecycle_note(s.counters)}, "
        f"{s.memories_duplicate} skipped as duplicate{dropped}, "
        f"{s.llm_calls} LLM calls, {s.tokens} tokens, {s.seconds:.2f} s"
    )


def _lifecycle_note(counters: dict) -> str:
    """How many added memories replace or contradict a stored one (``distill memories history ID``)."""
    parts = [f"{n} superseding an older one" for n in [counters.get("memories_supersedes", 0)] if n]
    parts += [f"{n} contradicting a stored one (kept both: `distill memories history ID`)"
              for n in [counters.get("memories_contradicts", 0)] if n]
    return f" ({'; '.join(parts)})" if parts else ""


def set_aside_note(s) -> str:
    """A second line when chunks are set aside, so a cron log shows it (empty otherwise)."""
    n = s.counters.get("chunks_waiting", 0)
    if not n:
        return ""
    return (f"{_plural(n, 'chunk')} set aside, their turns not committed: see `distill status`, "
            "then `distill retry` (or `distill retry --drop`)")


def _summary_lines(s) -> str:
    return "\n".join(filter(None, [summary_line(s), set_aside_note(s), *(f"warning: {e}" for e in s.errors)]))


@renders("StepResult")
def _step(r) -> str:
    return _summary_lines(r.summary)


@renders("DistillOutput")
def _distill_output(r) -> str:
    text = _summary_lines(r)
    if r.action == "distilled" and r.batch_file:
        text += f"\nnext: distill commit --batch-file {r.batch_file}"
    return text


@renders("RetryOutput")
def _retry_output(r) -> str:
    if r.action == "noop":
        return "no set-aside chunks: nothing to retry"
    return _summary_lines(r)


@renders("BatchResult")
def _batch(r) -> str:
    lines = [summary_line(r.summary)]
    if r.batch_file:
        lines.append(f"batch file: {r.batch_file}")
    others = [f for f in r.batch_files if f != r.batch_file]
    if others:
        lines.append("pending batch files (distill them, then `distill commit --batch-file F`):")
        lines += [f"  {f}" for f in others]
    for bid in r.released:
        lines.append(f"released pending batch {bid}: its file is gone")
    lines += [f"warning: {e}" for e in r.errors]
    return "\n".join(lines)


@renders("InitResult")
def _init(r) -> str:
    return "\n".join([f"init: {r.marked_files} files marked read to their end ({r.marked_bytes} bytes skipped); "
                      f"{r.tracked_files} files tracked in {r.cursor_path}", *(f"warning: {e}" for e in r.errors)])


def _shared_table(t) -> list[str]:
    if t.error:
        return [f"shared table {t.table} in {t.db}: cannot read it: {t.error}"]
    out = [f"shared table {t.table} in {t.db}: {t.rows} memories, version {t.version}"]
    for h in t.hosts[:10]:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(h.last_seen_ms / 1000))
        out.append(f"  host {h.host}: last wrote {when} ({_plural(h.sources, 'source')} among the newest rows)")
    return out


@renders("StatusResult")
def _status(r) -> str:
    out = [f"cursor: {r.cursor_path} ({len(r.files)} files)"]
    if r.last_run:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(r.last_run.at_ms / 1000))
        if r.last_run.error:  # the figures are what it did before failing
            out.append(f"last run: {when}: failed: {r.last_run.error}")
            out.append(f"  before failing: {summary_line(r.last_run.summary)}")
        else:
            out.append(f"last run: {when}: {summary_line(r.last_run.summary)}")
    else:
        out.append("last run: never")
    out.append("pending batches: " + (", ".join(r.pending_batches) if r.pending_batches else "none"))
    if r.shared_table:
        out += _shared_table(r.shared_table)
    out += [f"warning: {e}" for e in r.errors]
    if r.set_aside:
        out.append(f"set-aside chunks: {len(r.set_aside)} (`distill retry` tries them again, "
                   "`distill retry --drop` gives them up)")
    for c in r.set_aside:
        spans = "; ".join(f"{p} bytes {a}-{b}" for p, a, b in c.ranges)
        out.append(f"  {os.path.basename(c.batch_file)} chunk {c.chunk} (agent {c.agent_id}, "
                   f"{_plural(c.attempts, 'attempt')}): {c.error}")
        out.append(f"    holds {spans}")
    for a in r.agents:
        out.append(f"agent {a.agent_id}: {a.files} files, {format_size(a.behind)} behind"
                   + (f", pending {', '.join(a.pending)}" if a.pending else ""))
        for f in r.files:
            if f.agent_id == a.agent_id and (f.behind or f.pending or f.state not in ("tracked",)):
                extra = f" [pending {', '.join(f.pending)}]" if f.pending else ""
                out.append(f"  {f.path}: {format_size(f.behind)} behind, {f.state}{extra}")
    return "\n".join(out)


@renders("BackfillReport")
def _backfill(r) -> str:
    if r.action == "dry-run":
        lines = [f"would read {_plural(len(r.todo), 'file')}, {format_size(r.bytes)}:"]
        lines += [f"  {t.agent:<20} {format_size(t.bytes):>10}  {t.path}  [{t.start}, {t.stop})" for t in r.todo[:50]]
        if len(r.todo) > 50:
            lines.append(f"  … and {len(r.todo) - 50} more")
        e = r.estimate
        if e is None:
            from ..backfill import Estimate

            e = Estimate()
        calls = (f"{e.llm_calls} LLM calls, about {e.tokens:,} tokens sent and at most "
                 f"{e.output_tokens_max:,} answer tokens ({e.provider})" if e.provider != "rules"
                 else "0 LLM calls, 0 tokens (the rules provider runs offline)")
        lines.append(f"estimate: {e.turns} turns, {e.chunks} chunks, {calls}; nothing was spent")
    elif r.action == "noop":
        lines = ["nothing to backfill: every selected file is read up to where the main cursor stood"]
    else:
        from ..model import RunSummary

        lines = [summary_line(r.summary or RunSummary())]
    return "\n".join([*lines, *(f"warning: {w}" for w in r.errors)])


@renders("Queued")
def _queued(task) -> str:
    from ..enqueue import human_line

    return human_line(task)


@renders("HookResult")
def _hook_result(r) -> str:
    """``--dry-run``: the unified diff; otherwise each file changed and its backup; then the notes."""
    verb = "installed" if r.action == "install" else "uninstalled"
    if not r.changed:
        lines = [f"{r.action} {r.agent}: nothing to change (already {verb})"]
    elif r.dry_run:
        lines = [r.diff.rstrip("\n"), f"{r.action} {r.agent} (dry run, nothing written): would change "
                 + ", ".join(r.changed)]
    else:
        lines = [f"{verb} {r.agent}: changed " + ", ".join(r.changed)]
        lines += [f"  backup: {b}" for b in r.backups]
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


@renders("HooksDoctorReport")
def _hooks_doctor(r) -> str:
    if not r.outcomes:
        return f"nothing installed for {', '.join(r.agents)}: run `distill hooks install AGENT` first"
    lines = []
    for o in r.outcomes:
        lines.append(f"{'starts' if o.starts else 'FAILS '}  {o.agent} {o.kind:4}  {o.detail}  ({o.seconds:.1f} s)")
        lines.append(f"        {o.where}: {o.command}")
    bad = sum(not o.starts for o in r.outcomes)
    lines.append("every entry starts" if not bad else f"{bad} of {len(r.outcomes)} entries do not start")
    return "\n".join(lines)


# ---------------------------------------------------------------- memories
def _day(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


def _when(ms) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(int(ms) / 1000))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def memory_line(m: dict) -> str:
    """One memory on one line: short id, category and scope, the first line of its text, its day."""
    text = m.get("text") or ""
    first = text.splitlines()[0] if text else ""
    if len(first) > 100:
        first = first[:97] + "..."
    return f"[{m['id'][:8]}] [{m['category']}:{m['scope']}] {first} ({_day(m['timestamp'])})"


def memory_full(m: dict) -> str:
    """A memory in full: its text, then where it came from (files, byte ranges, sessions, entry
    ids, when it was first and last seen, how often)."""
    from ..store.search import provenance_of

    p = provenance_of(m.get("metadata") or {})
    lines = [f"{m['id']}  [{m['category']}:{m['scope']}]  importance {m['importance']:.2f}  stored {_when(m['timestamp'])}",
             *(f"  {line}" for line in m["text"].splitlines())]
    seen = f"seen {p['seen_count']}x"
    if p["first_seen"]:
        seen += f", first {_when(p['first_seen'])}, last {_when(p['last_seen'])}"
    lines.append(f"  -- {seen}; agent {', '.join(p['agents']) or 'unknown'}")
    for label, key in (("session", "sessions"), ("entry ids", "entry_ids")):
        if p[key]:
            lines.append(f"  -- {label}: {', '.join(map(str, p[key]))}")
    ranges: dict[str, list[str]] = {}
    for r in p["ranges"]:
        if isinstance(r, dict) and r.get("file"):
            ranges.setdefault(str(r["file"]), []).append(f"[{r.get('start')}, {r.get('end')})")
    for f in p["files"]:
        ranges.setdefault(str(f), [])
    for f, spans in ranges.items():
        lines.append(f"  -- file: {f}" + (f" bytes {' '.join(spans)}" if spans else ""))
    lines.extend(f"  -- {line}" for line in lifecycle_lines(m))
    return "\n".join(lines)


def lifecycle_lines(m: dict) -> list[str]:
    """A row's place in its history, in the plugin's terms (distill.store.lifecycle)."""
    from ..store.lifecycle import lifecycle_of, now_ms

    md = m.get("metadata") or {}
    life = lifecycle_of(md, m.get("timestamp"))
    at = now_ms()
    status = ("current" if life.current_at(at) else "archived" if life.state == "archived"
              else f"superseded {_when(life.invalidated_at)}" if life.invalidated_at and life.invalidated_at <= at
              else f"not yet valid (from {_when(life.valid_from)})")
    lines = [f"status: {status}" + (f"; fact_key {life.fact_key}" if md.get("fact_key") else "")
             + (f"; recalled {life.access_count}x, last {_when(life.last_accessed_at)}" if life.access_count else "")]
    if life.supersedes:
        lines.append(f"supersedes {life.supersedes} (valid from {_when(life.valid_from)})")
    if life.superseded_by:
        lines.append(f"superseded by {life.superseded_by}")
    lines += [f"{r['type'].replace('_', ' ')} {r['targetId']}" for r in life.relations
              if r["type"] not in ("supersedes", "superseded_by")]
    return lines


def _rows_dicts(rows) -> list[dict]:
    from ..store.models import MemoryRow

    return [MemoryRow(**m).model_dump() for m in rows]


@renders("MemoryRow")
def _memory_row(row) -> str:
    return memory_line(row.model_dump())


@renders("MemoryHit")
def _memory_hit(hit) -> str:
    return f"{hit.score:.3f} {memory_line(hit.model_dump())}"


@renders("RowsResult")
def _rows(r) -> str:
    if not r.memories:
        return "no memories match"
    rows = _rows_dicts(r.memories)
    if r.full:
        return "\n\n".join(memory_full(m) for m in rows)
    return "\n".join(memory_line(m) for m in rows)


@renders("SearchResult")
def _search(r) -> str:
    if not r.memories:
        if r.floor is None:
            return "no memories match"
        return (f"nothing relevant to {r.query!r} (no memory scored {r.floor:.0%} or more); "
                "try other words, or --mode vector for the nearest memories anyway")
    lines = []
    for m, row in zip(r.memories, _rows_dicts(r.memories)):
        score = f"{m['score']:4.0%}" if r.mode == "hybrid" else f"{m['score']:.3f}"
        lines.append(f"{score}  {memory_line(row)}")
    return "\n".join(lines)


@renders("ShowResult")
def _show(r) -> str:
    out = memory_full(_rows_dicts([r.memory])[0])
    chain = [m for m in _rows_dicts(r.chain) if m["id"] != r.memory["id"]]
    if chain:
        out += "\n  history (oldest first; `distill memories history ID` for each in full):\n" + "\n".join(
            f"    {lifecycle_lines(m)[0].split(';')[0]:<30} {memory_line(m)}" for m in chain)
    return out


@renders("HistoryResult")
def _history(r) -> str:
    from ..store.models import MemoryRow

    rows = [MemoryRow(**m).model_dump() for m in r.memories]
    if len(rows) == 1:
        return memory_full(rows[0]) + "\n  (no other version: nothing superseded, replaced or contradicts it)"
    return "\n\n".join(memory_full(m) for m in rows)


@renders("SupersedeResult")
def _supersede(r) -> str:
    return (f"superseded {memory_line(r.superseded)}\n"
            f"        by {memory_line(r.by)}\n"
            "the old one is kept as history: `distill memories restore ID` brings it back")


@renders("RestoreResult")
def _restore(r) -> str:
    out = f"restored {memory_line(r.restored)}\n  {lifecycle_lines(r.restored)[0]}"
    return out + (f"\nnote: {r.note}" if r.note else "")


@renders("ForgetResult")
def _forget(r) -> str:
    return f"forgot {r.forgotten['id']}: {r.forgotten['text'].splitlines()[0][:100]}"


@renders("ExportResult")
def _export(r) -> str:
    if r.output is None:
        from ..store.interchange import dumps

        return dumps(r.document)
    return f"exported {r.count} memories to {r.output}"


@renders("ConvergeReport")
def _converge(r) -> str:
    return (f"converged {r.table} in {r.db}: {r.checked} recent memories checked, {r.merged} folded into an older "
            f"duplicate, {r.copies} extra copies of one id removed (version {r.version})")


@renders("CompactResult")
def _compact(r) -> str:
    return (f"compacted: {format_size(r.size_bytes_before)} -> {format_size(r.size_bytes_after)} "
            f"(version {r.version})")


@renders("StoreStats")
def _stats(s) -> str:
    return "\n".join([
        f"{s.total} memories in {s.db} (table {s.table}, {s.vector_dim}-d vectors, "
        f"embedder {s.embedder}, {format_size(s.size_bytes)} on disk, version {s.version})",
        "by scope:",
        *(f"  {k}: {v}" for k, v in sorted(s.by_scope.items())),
        "by category:",
        *(f"  {k}: {v}" for k, v in sorted(s.by_category.items())),
    ])


@renders("ImportReport")
def _import(r) -> str:
    verb = "would add" if r.dry_run else "added"
    text = (f"import{' (dry run, nothing written)' if r.dry_run else ''}: {r.total} entries, "
            f"{r.added} {verb}, {r.duplicate} duplicate, {r.invalid} invalid")
    return "\n".join([text, *(f"  skipped: {e}" for e in r.errors[:20])])


@renders("ReembedReport")
def _reembed(r) -> str:
    return (f"re-embedded {r.rows} memories: {r.old_embedder} ({r.old_dim}-d) -> "
            f"{r.new_embedder} ({r.new_dim}-d); the old table is kept as {r.backup_table}")


@renders("DoctorReport")
def _doctor(r) -> str:
    from ..store.doctor import PINNED_CLIENT

    return "\n".join([
        f"table {r.table} in {r.db}: {r.rows} rows, version {r.version}",
        f"file format: {r.file_format or 'no data files yet'}"
        + (f" (older files on disk: {', '.join(f for f in r.file_formats_on_disk if f != r.file_format)})"
           if len(r.file_formats_on_disk) > 1 else ""),
        f"vectors: {r.vector_dim}-d; recorded embedder: {r.recorded_embedder or 'none recorded'}; "
        f"distill embeds with: {r.embedder or 'nothing that fits'}",
        "indexes:" if r.indexes else "indexes: none",
        *(f"  {i.name}: {i.type} on {', '.join(i.columns)}"
          + (f", tokenizer {i.tokenizer}" if i.tokenizer else "")
          + (f", index format {i.index_version}" if i.index_version is not None else "")
          + f", made by {i.made_by}" for i in r.indexes),
        f"memory-lancedb-pro ({PINNED_CLIENT}) can read it: {'yes' if r.pinned_client_reads else 'NO'}",
        *(f"- {a}" for a in r.advice),
    ])


@renders("MigrateReport")
def _migrate(r) -> str:
    return (f"rewrote {r.rows} memories from Lance {r.old_format} to {r.new_format} "
            f"(version {r.version}); the old table is kept as {r.backup_table}")


@renders("Scores")
def _scores(s) -> str:
    return f"precision {s.precision:.3f}  recall {s.recall:.3f}  (n={s.pairs}, tp={s.tp} fp={s.fp} fn={s.fn})"
