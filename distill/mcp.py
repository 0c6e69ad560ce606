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

The tools also take the Memory MCP server's spellings (shared/seeds 000), so prompts and scripts
written for it work unchanged: ``remember(content, tags?, agent?, importance?)``,
``recall(query, top_k?, agent_filter?)``, ``list_facts(agent?, tag?)``,
``check_duplicate(content, threshold?)``, ``forget(memory_id)``; every answer carries its fields
too (``ok``, ``memory_id``; hits and facts with ``memory_id``, ``content``, ``tags``, ``agent``;
``is_duplicate``, ``similar``). ``agent`` on ``remember`` is recorded as who wrote the memory,
never as its scope; ``agent_filter`` / ``agent`` on the readers search that agent's scope.
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
    memory_id: str = Field(description="the same as id (the Memory MCP server's name)")
    content: str = Field(description="the same as text (the Memory MCP server's name)")
    tags: list[str] = Field(default_factory=list)
    agent: str | None = Field(default=None, description="the agent that wrote it")


class Hit(Memory):
    score: float = Field(description="relevance 0-1; hits under the server's floor are not returned")


class RecallResult(BaseModel):
    query: str
    hits: list[Hit]
    note: str = Field(description="what was searched; says so when nothing was relevant")


class RememberResult(BaseModel):
    ok: bool = Field(description="stored now or already stored (false: rejected)")
    memory_id: str | None = None
    status: Literal["added", "duplicate", "rejected"]
    answer: str = Field(description="'added', 'duplicate of <id>', or why the memory was rejected")
    id: str | None = None
    scope: str | None = None
    redacted: list[str] = Field(default_factory=list, description="kinds of secrets removed from the text")


class FactList(BaseModel):
    count: int
    facts: list[Memory]


class DuplicateCheck(BaseModel):
    is_duplicate: bool = Field(description="the store's decision, or (with threshold) nearest cosine >= threshold")
    similar: list[Hit] = Field(default_factory=list, description="the nearest memory, as a list")
    decision: Literal["duplicate", "new"]
    scope: str
    nearest: Hit | None = Field(description="the closest stored memory in that scope (score = cosine)")
    reason: str


class Forgotten(BaseModel):
    ok: bool = True
    memory_id: str
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

    def recall(self, query: str, limit: int | None = None, scope: str | None = None,
               category: Category | None = None, top_k: int | None = None,
               agent_filter: str | None = None, include_history: bool = False) -> RecallResult:
        query = query.strip()
        if not query:
            raise ToolFailure("query is empty: pass the words to look for")
        limit = _one_of(limit, "limit", top_k, "top_k", default=5)
        scopes = self.readable_scopes(_one_of(scope, "scope", _agent_scope(agent_filter), "agent_filter", default=None))
        with self._lock:
            store = self.reader()
            hits = [] if store is None else store.search(query, scope=scopes, category=category,
                                                         limit=max(1, min(limit, 50)),
                                                         include_history=include_history, count_use=True)
        where = "every scope" if scopes is None else (scopes if isinstance(scopes, str) else " + ".join(scopes))
        note = (f"{len(hits)} relevant {'memory' if len(hits) == 1 else 'memories'} in {where}" if hits
                else self._nothing_stored() if store is None else f"nothing relevant to {query!r} in {where}")
        return RecallResult(query=query, hits=[_hit(h) for h in hits], note=note)

    def remember(self, text: str | None = None, category: Category | None = None, importance: float = 0.7,
                 scope: Literal["agent", "global"] = "agent", content: str | None = None,
                 tags: list[str] | None = None, agent: str | None = None,
                 replaces: str | None = None) -> RememberResult:
        from .store.models import MemoryDraft
        from .text.keywords import keyword_draft
        from .text.redact import redact

        text = _one_of(text, "text", content, "content", default=None)
        if text is None:
            raise ToolFailure("pass the memory as text (or content)")
        tags = [t.strip() for t in tags or [] if t.strip()]
        category = category or _category_of(tags)
        target = self.own_scope(scope)
        clean, found = redact(text.strip())
        reason = text_problem(clean)
        if reason:
            return RememberResult(ok=False, status="rejected", answer=f"rejected: {reason}", redacted=sorted(found))
        writer = (agent or "").strip().removeprefix("agent:") or self.agent or "mcp"
        metadata: dict[str, Any] = {"provenance": {"agent": writer, "via": "mcp"}, "kind": category}
        if tags:
            metadata["tags"] = tags
        draft = keyword_draft(MemoryDraft(text=clean, category=category, scope=target, importance=importance,
                                          metadata=metadata))
        with self._lock:
            outcome = self.store.add([draft], replaces=replaces.strip() if replaces else None)[0]
        answer = "added" if outcome.status == "added" else f"duplicate of {outcome.id}"
        if outcome.relation:
            answer += f", {outcome.relation} {outcome.related}"
        return RememberResult(ok=True, memory_id=outcome.id, status=outcome.status, answer=answer, id=outcome.id,
                              scope=target, redacted=sorted(found))

    def list_facts(self, scope: str | None = None, category: Category | None = None, since: str | None = None,
                   limit: int = 20, agent: str | None = None, tag: str | None = None,
                   include_history: bool = False) -> FactList:
        from .store.search import parse_since

        try:
            since_ms = parse_since(since)
        except DistillError as exc:
            raise ToolFailure(str(exc).replace("--since", "since")) from None
        scopes = self.readable_scopes(_one_of(scope, "scope", _agent_scope(agent), "agent", default=None))
        limit = max(1, min(limit, 200))
        with self._lock:
            store = self.reader()
            rows = [] if store is None else store.list(scope=scopes, category=category, since_ms=since_ms,
                                                       limit=None if tag else limit, include_history=include_history)
        if tag:  # the Memory MCP server's tags; its "decision" tag is distill's category
            rows = [r for r in rows if tag in _tags(r) or r.category == tag][:limit]
        return FactList(count=len(rows), facts=[_memory(r) for r in rows])

    def check_duplicate(self, text: str | None = None, scope: Literal["agent", "global"] = "agent",
                        content: str | None = None, threshold: float | None = None) -> DuplicateCheck:
        from .text.keywords import with_keywords
        from .text.redact import redact

        text = _one_of(text, "text", content, "content", default="")
        target = self.own_scope(scope)
        clean, _ = redact(text.strip())
        if not clean:
            raise ToolFailure("text is empty")
        with self._lock:  # judged as remember would store it: with its keyword lines
            decision, nearest, reason = duplicate_decision(self.reader(), with_keywords(clean), target)
        hit = _hit(nearest) if nearest else None
        duplicate = decision == "duplicate" or (threshold is not None and hit is not None and hit.score >= threshold)
        return DuplicateCheck(is_duplicate=duplicate, similar=[hit] if hit else [], decision=decision, scope=target,
                              nearest=hit, reason=reason)

    def forget(self, id: str | None = None, memory_id: str | None = None) -> Forgotten:
        target = _one_of(id, "id", memory_id, "memory_id", default=None)
        if not target:
            raise ToolFailure("pass the memory's id (or memory_id)")
        with self._lock:
            row = self.store.forget(target)
        return Forgotten(memory_id=row.id, forgotten=row.id, text=row.text)


def _one_of(a: Any, a_name: str, b: Any, b_name: str, *, default: Any) -> Any:
    """One argument under either of its two spellings (distill's, the Memory MCP server's)."""
    if a is not None and b is not None and a != b:
        raise ToolFailure(f"{a_name} and {b_name} are the same argument: pass one")
    return a if a is not None else b if b is not None else default


def _agent_scope(agent: str | None) -> str | None:
    """``agent_filter`` / ``agent``: ``agent:<id>`` or a bare id → that agent's scope."""
    agent = (agent or "").strip()
    return None if not agent else agent if agent.startswith("agent:") else f"agent:{agent}"


def _category_of(tags: list[str]) -> Category:
    """A Memory MCP caller passes tags, not a category: a tag that names one is taken."""
    for tag in tags:
        if tag in ("preference", "fact", "decision", "entity"):
            return tag  # type: ignore[return-value]
    return "fact"


def _tags(row) -> list[str]:
    tags = row.metadata.get("tags")
    return [str(t) for t in tags] if isinstance(tags, list) else []


def text_problem(text: str) -> str | None:
    """Why a memory text handed to ``remember`` is refused, or None: the distiller's own bounds
    and junk rules (``distill.distiller.validate``), applied to text with no transcript behind it."""
    from .distiller.validate import MAX_TEXT, MIN_TEXT, junk_reason
    from .trust import refusal

    body = text.split("\nKeywords (zh)")[0].strip()
    if len(body) < MIN_TEXT:
        return f"too short ({len(body)} characters; at least {MIN_TEXT}): state the fact in a full sentence"
    if len(body) > MAX_TEXT:
        return f"too long ({len(body)} characters; at most {MAX_TEXT}): keep one fact per memory"
    junk = junk_reason(body)
    if junk:
        return f"looks like {junk}, not a durable fact"
    return refusal(body)


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
    if verdict.relation:
        return "new", nearest, f"not a duplicate: remember would store it, and it {verdict.reason}"
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
    provenance = _provenance(row)
    return Memory(id=row.id, text=row.text, category=row.category, scope=row.scope,
                  importance=round(row.importance, 3), provenance=provenance, memory_id=row.id, content=row.text,
                  tags=_tags(row), agent=provenance.agent)


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
         "Also takes the Memory MCP server's top_k (= limit) and agent_filter (= scope agent:<id>). "
         "Superseded and archived memories are left out unless include_history.")
    tool(Memories.list_facts,
         "List stored memories, newest first. since: YYYY-MM-DD, an ISO time, or 7d / 12h / 30m ago. "
         "agent: that agent's scope; tag: memories with that tag (or category).")
    tool(Memories.check_duplicate,
         "Would remember() store this text, or is it a duplicate? Returns the store's decision, the nearest "
         "stored memory and the reason. Writes nothing. text may be passed as content; with threshold, "
         "is_duplicate is also true when the nearest memory's cosine reaches it.")
    if not memories.read_only:
        tool(Memories.remember,
             "Store one durable memory (a fact, decision, preference or pitfall, one self-contained statement). "
             "Secrets are redacted; duplicates are not stored twice (the answer says 'duplicate of <id>'). "
             "scope='agent' keeps it for this agent, 'global' shares it with every agent. text may be passed as "
             "content; tags are kept (a tag naming a category sets it; default fact); agent records who wrote it. "
             "replaces: the id of a memory this one corrects (kept as history, no longer recalled).", writes=True)
        tool(Memories.forget, "Delete one memory by id or memory_id (or an unambiguous prefix of at least 8 "
             "characters).",
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
