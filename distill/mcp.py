"""``distill mcp``: the shared memory table as Model Context Protocol tools.

Any MCP client (Claude Code, Codex, an IDE) gets ``recall``, ``remember``, ``list_facts``,
``check_duplicate`` and ``forget`` over the LanceDB table the pipeline writes, so what one agent
learned every agent can recall. Built on the official SDK's ``MCPServer``; every tool has a
pydantic-typed result, which the SDK publishes as the tool's output schema and returns as
structured content.

Start-up builds the tool list only: LanceDB and the embedder load on the first call. The store
takes its write lock per write (``MemoryStore``), never while idle, so this server, the worker,
cron and other servers share one table. A memory's scope is chosen here, by code: the server's
``--agent`` (``agent:<id>``) or ``global`` when the caller asks for it; the text never names it.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from .errors import DistillError, ToolFailure

if TYPE_CHECKING:
    from .config import Settings
    from .store.memory import MemoryStore

Category = Literal["preference", "fact", "decision", "entity", "other"]
SERVER_NAME = "distill"
INSTRUCTIONS = (
    "Long-term memory shared by every agent of this user (distilled from past sessions). "
    "Call recall with the error message, tool or topic at hand before solving something that may "
    "have come up before; call remember for a durable fact, decision, preference or pitfall worth "
    "keeping (one short self-contained statement, no secrets)."
)


# ---------------------------------------------------------------- results (the tools' output schemas)
class Provenance(BaseModel):
    """Where a memory came from: the first session it was distilled from, and how often it recurred."""

    agent: str | None = None
    session: str | None = None
    file: str | None = None
    stored_at: str = Field(description="when the memory was stored (UTC, ISO 8601)")
    first_seen: str | None = None
    last_seen: str | None = None
    seen_count: int = 1


class Memory(BaseModel):
    id: str
    text: str
    category: str
    scope: str
    importance: float
    provenance: Provenance


class Hit(Memory):
    score: float = Field(description="relevance 0-1; hits under the server's floor are not returned")


class RecallResult(BaseModel):
    query: str
    hits: list[Hit]
    note: str = Field(description="what was searched; says so when nothing was relevant")


class RememberResult(BaseModel):
    status: Literal["added", "duplicate", "rejected"]
    answer: str = Field(description="'added', 'duplicate of <id>', or why the memory was rejected")
    id: str | None = None
    scope: str | None = None
    redacted: list[str] = Field(default_factory=list, description="kinds of secrets removed from the text")


class FactList(BaseModel):
    count: int
    facts: list[Memory]


class DuplicateCheck(BaseModel):
    decision: Literal["duplicate", "new"]
    scope: str
    nearest: Hit | None = Field(description="the closest stored memory in that scope (score = cosine)")
    reason: str


class Forgotten(BaseModel):
    forgotten: str
    text: str


# ---------------------------------------------------------------- the tools' backend
class Memories:
    """What the tools do, synchronously (the SDK runs sync tools on worker threads).

    One ``MemoryStore`` per server, opened on first use; a thread lock serialises calls into it
    (it keeps an in-memory dedup copy), the store's file lock serialises writers across processes.
    The reading tools (``recall``, ``list_facts``, ``check_duplicate``) open it read-only, also on
    a writable server: a store with no table yet is an empty answer, never a table created. Only
    ``remember`` and ``forget`` open it for writing (creating the table, or the FTS index where a
    table has none).
    """

    def __init__(self, settings: "Settings", *, agent: str | None = None, read_only: bool = False,
                 store: "MemoryStore | None" = None):
        self.settings = settings
        self.agent = agent
        self.read_only = read_only
        self._store = store
        self._writable = store is not None  # a store handed in is the caller's (tests): used as it is
        self._lock = threading.Lock()

    @property
    def store(self) -> "MemoryStore":
        """The store for writing (``remember``, ``forget``): created if missing."""
        if self.read_only:
            raise ToolFailure("this server was started with --read-only: it does not write")
        if self._store is None or not self._writable:
            from .store.memory import MemoryStore

            self._store = MemoryStore.open(self.settings)
            self._writable = True
        return self._store

    def reader(self) -> "MemoryStore | None":
        """The store for reading, opened read-only; None while no table exists (nothing stored)."""
        if self._store is None:
            from .store.memory import MemoryStore

            self._store = MemoryStore.open_existing(self.settings)
        return self._store

    def _nothing_stored(self) -> str:
        return f"nothing has been stored yet (no table {self.settings.table!r} in {self.settings.db})"

    def own_scope(self, scope: Literal["agent", "global"]) -> str:
        """Where this server writes: its agent's scope, or global (also for a server without --agent)."""
        return f"agent:{self.agent}" if scope == "agent" and self.agent else "global"

    def readable_scopes(self, scope: str | None) -> str | list[str] | None:
        """An explicit scope is searched alone; by default, global plus this server's agent."""
        if scope:
            return _checked_scope(scope)
        return ["global", f"agent:{self.agent}"] if self.agent else None

    def recall(self, query: str, limit: int = 5, scope: str | None = None,
               category: Category | None = None, include_history: bool = False) -> RecallResult:
        query = query.strip()
        if not query:
            raise ToolFailure("query is empty: pass the words to look for")
        scopes = self.readable_scopes(scope)
        with self._lock:
            store = self.reader()
            hits = [] if store is None else store.search(query, scope=scopes, category=category,
                                                         limit=max(1, min(limit, 50)),
                                                         include_history=include_history, count_use=True)
        where = "every scope" if scopes is None else (scopes if isinstance(scopes, str) else " + ".join(scopes))
        note = (f"{len(hits)} relevant {'memory' if len(hits) == 1 else 'memories'} in {where}" if hits
                else self._nothing_stored() if store is None else f"nothing relevant to {query!r} in {where}")
        return RecallResult(query=query, hits=[_hit(h) for h in hits], note=note)

    def remember(self, text: str, category: Category, importance: float = 0.7,
                 scope: Literal["agent", "global"] = "agent", replaces: str | None = None) -> RememberResult:
        from .text.redact import redact
        from .store.models import MemoryDraft

        target = self.own_scope(scope)
        clean, found = redact(text.strip())
        reason = text_problem(clean)
        if reason:
            return RememberResult(status="rejected", answer=f"rejected: {reason}", redacted=sorted(found))
        draft = MemoryDraft(text=clean, category=category, scope=target, importance=importance,
                            metadata={"provenance": {"agent": self.agent or "mcp", "via": "mcp"},
                                      "kind": category})
        with self._lock:
            outcome = self.store.add([draft], replaces=replaces.strip() if replaces else None)[0]
        answer = "added" if outcome.status == "added" else f"duplicate of {outcome.id}"
        if outcome.relation:
            answer += f", {outcome.relation} {outcome.related}"
        return RememberResult(status=outcome.status, answer=answer, id=outcome.id, scope=target,
                              redacted=sorted(found))

    def list_facts(self, scope: str | None = None, category: Category | None = None, since: str | None = None,
                   limit: int = 20, include_history: bool = False) -> FactList:
        from .store.search import parse_since

        try:
            since_ms = parse_since(since)
        except DistillError as exc:
            raise ToolFailure(str(exc).replace("--since", "since")) from None
        scopes = self.readable_scopes(scope)
        with self._lock:
            store = self.reader()
            rows = [] if store is None else store.list(scope=scopes, category=category, since_ms=since_ms,
                                                       limit=max(1, min(limit, 200)),
                                                       include_history=include_history)
        return FactList(count=len(rows), facts=[_memory(r) for r in rows])

    def check_duplicate(self, text: str, scope: Literal["agent", "global"] = "agent") -> DuplicateCheck:
        from .text.redact import redact

        target = self.own_scope(scope)
        clean, _ = redact(text.strip())
        if not clean:
            raise ToolFailure("text is empty")
        with self._lock:
            decision, nearest, reason = duplicate_decision(self.reader(), clean, target)
        return DuplicateCheck(decision=decision, scope=target, nearest=_hit(nearest) if nearest else None,
                              reason=reason)

    def forget(self, id: str) -> Forgotten:
        with self._lock:
            row = self.store.forget(id)
        return Forgotten(forgotten=row.id, text=row.text)


def text_problem(text: str) -> str | None:
    """Why a memory text handed to ``remember`` is refused, or None: the distiller's own bounds
    and junk rules (``distill.distiller.validate``), applied to text with no transcript behind it."""
    from .distiller.validate import MAX_TEXT, MIN_TEXT, junk_reason

    body = text.split("\nKeywords (zh)")[0].strip()
    if len(body) < MIN_TEXT:
        return f"too short ({len(body)} characters; at least {MIN_TEXT}): state the fact in a full sentence"
    if len(body) > MAX_TEXT:
        return f"too long ({len(body)} characters; at most {MAX_TEXT}): keep one fact per memory"
    junk = junk_reason(body)
    if junk:
        return f"looks like {junk}, not a durable fact"
    return None


def duplicate_decision(store: "MemoryStore | None", text: str, scope: str):
    """The store's own decision for ``text`` in ``scope`` (``MemoryStore.check_duplicate``, the
    rule every write uses), as (decision, nearest row, reason); no store (no table yet): new."""
    if store is None:
        return "new", None, f"no memory stored in {scope} yet"
    verdict = store.check_duplicate(text, scope=scope)
    if verdict.id is None:
        return "new", None, f"no memory stored in {scope} yet"
    cosine = 1.0 if verdict.reason == "exact" else (verdict.cosine if verdict.cosine is not None else 0.0)
    nearest = _as_hit(store.get(verdict.id), cosine)
    if verdict.duplicate:
        return "duplicate", nearest, f"same fact as {verdict.id} ({verdict.reason})"
    return "new", nearest, f"nearest memory {verdict.id} is not the same fact: {verdict.reason}"


def _checked_scope(scope: str) -> str:
    from .store.models import check_scope

    try:
        return check_scope(scope.strip())
    except ValueError as exc:
        raise ToolFailure(str(exc)) from None


def _iso(ms: Any) -> str | None:
    try:
        return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _provenance(row) -> Provenance:
    from .store.search import provenance_of

    p = provenance_of(row.metadata)
    return Provenance(agent=p["agent"], session=(p["sessions"] or [None])[0], file=(p["files"] or [None])[0],
                      stored_at=_iso(row.timestamp) or "", first_seen=_iso(p["first_seen"]),
                      last_seen=_iso(p["last_seen"]), seen_count=p["seen_count"])


def _memory(row) -> Memory:
    return Memory(id=row.id, text=row.text, category=row.category, scope=row.scope,
                  importance=round(row.importance, 3), provenance=_provenance(row))


def _hit(hit) -> Hit:
    return Hit(**_memory(hit).model_dump(), score=round(float(hit.score), 3))


def _as_hit(row, score: float):
    from .store.models import MemoryHit

    return MemoryHit(**row.model_dump(), score=score)


# ---------------------------------------------------------------- the server
def build_server(memories: Memories):
    """An ``MCPServer`` with the tools; ``memories.read_only`` leaves out the writing ones."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")

    def tool(fn, description: str, *, writes: bool = False, destructive: bool = False):
        def call(**kwargs):
            try:
                return getattr(memories, fn.__name__)(**kwargs)
            except (ToolFailure, DistillError, ValueError) as exc:
                raise ToolError(str(exc)) from None

        call.__name__, call.__doc__ = fn.__name__, description
        call.__signature__ = _signature(fn)  # the SDK builds the JSON schema from it
        annotations = ToolAnnotations(read_only_hint=not writes, destructive_hint=destructive if writes else None,
                                      open_world_hint=False)
        server.add_tool(call, name=fn.__name__, description=description, annotations=annotations)

    tool(Memories.recall,
         "Search the shared long-term memory (hybrid: meaning + exact words, any language). Returns the most "
         "relevant memories with a 0-1 score and where each came from; nothing when nothing is relevant. "
         "scope: 'global' or 'agent:<id>' (default: global + this agent); category narrows further. "
         "Superseded and archived memories are left out unless include_history.")
    tool(Memories.list_facts,
         "List stored memories, newest first. since: YYYY-MM-DD, an ISO time, or 7d / 12h / 30m ago.")
    tool(Memories.check_duplicate,
         "Would remember() store this text, or is it a duplicate? Returns the store's decision, the nearest "
         "stored memory and the reason. Writes nothing.")
    if not memories.read_only:
        tool(Memories.remember,
             "Store one durable memory (a fact, decision, preference or pitfall, one self-contained statement). "
             "Secrets are redacted; duplicates are not stored twice (the answer says 'duplicate of <id>'). "
             "scope='agent' keeps it for this agent, 'global' shares it with every agent. replaces: the id of a "
             "memory this one corrects (kept as history, no longer recalled).", writes=True)
        tool(Memories.forget, "Delete one memory by id (or an unambiguous prefix of at least 8 characters).",
             writes=True, destructive=True)
    return server


def _signature(fn):
    import inspect

    sig = inspect.signature(fn, eval_str=True)
    params = [p for name, p in sig.parameters.items() if name != "self"]
    return sig.replace(parameters=params)


def _version() -> str:
    from . import __version__

    return __version__


def serve(settings: "Settings", *, agent: str | None, read_only: bool, http: bool, port: int,
          host: str = "127.0.0.1") -> None:
    server = build_server(Memories(settings, agent=agent, read_only=read_only))
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
