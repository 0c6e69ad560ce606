"""The offline, deterministic distiller: the default when no LLM is configured.

Precision first (issue 21): what it is unsure of it does not store, and counts under
``unsure_<reason>`` (summed in the run's summary line). What it finds:
- standing instructions in the person's own words: "remember …", "save in memory …", "from
  now on …", "I prefer …", 记住 / 記住 / 以后 / 偏好 / 不要再 …, and decisions ("we decided …",
  决定 / 決定) by either side, with the "because …" that follows. Not a line the person pasted
  (a table row, bullet, heading, quote), not a bare "always / never" in a task for today,
  not a complaint or a personal line (:mod:`.shapes`);
- pitfalls from evidence: an error a program reported (a failed tool call's trace that is
  not harness noise, or a program's error a person pasted) and, within a few turns, the
  sentence that says the change made for it and names what the error names (see
  ``RulesExtractor._pitfalls``), kept with both halves quoted;
- entities copied verbatim: commands, paths, files, packages, flags, error names and codes,
  environment variables, identifiers in backticks.

What it cannot do: paraphrase or translate (a Chinese statement is quoted as it was said),
infer knowledge nobody stated explicitly, follow a fix told over several turns, or judge
whether a stated rule is still current. A statement with no concrete entity in it ("I
always forget my umbrella") is never kept, which is how small talk stays out.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from . import shapes
from ..sources.toolfail import exception_line
from .chunking import Chunk
from .extract import Extraction
from .schema import CandidateOut

MODEL = "rules-v1"
MAX_QUOTE = 220
MAX_ENTITIES = 5
FIX_WINDOW = 6  # turns after an error in which a fix is looked for

_TOOLS = (
    "pip pip3 pipx uv uvx poetry pdm conda mamba pnpm npm npx yarn bun deno node nodejs python python3 "
    "pytest tox nox ruff black mypy pyright flake8 isort git gh docker podman docker-compose kubectl helm "
    "terraform ansible systemctl journalctl systemd launchctl cron crontab make cmake cargo rustc rustup "
    "go gofmt brew apt apt-get dnf yum apk snap nginx caddy redis postgres postgresql psql mysql sqlite "
    "sqlite3 lancedb ollama vllm llama.cpp ssh scp rsync curl wget jq tmux screen vim nvim bash zsh fish "
    "sudo chmod chown openclaw claude codex gemini eslint prettier tsc vite webpack jest vitest playwright "
    "selenium gunicorn uvicorn fastapi flask django celery alembic kafka rabbitmq ffmpeg tesseract pandoc latex "
    "huggingface transformers torch pytorch tensorflow numpy pandas pydantic httpx requests aiohttp"
).split()
_SUBCOMMAND_TOOLS = frozenset(
    "pip pip3 uv poetry pnpm npm yarn git gh docker podman kubectl helm systemctl brew apt apt-get cargo "
    "go conda openclaw launchctl terraform".split()
)
_NAMED = ("中文", "英文", "简体中文", "繁體中文", "English", "Chinese", "Markdown", "UTC", "Asia/Shanghai")
_OS_RE = re.compile(r"\b((?:Debian|Ubuntu|CentOS|Alpine|Fedora|RHEL|Rocky|macOS|Windows|Arch)(?:\s\d+(?:\.\d+)*)?)\b")
_PACKAGE_RE = re.compile(r"(?:install|add|安装|安裝)\s+(?:-{1,2}[\w-]+\s+)*([A-Za-z][\w.@/=<>-]*[\w])")
_TOOL_RE = re.compile(
    r"(?<![\w./-])(" + "|".join(sorted(map(re.escape, _TOOLS), key=len, reverse=True)) + r")"
    r"(?:\s+(install|add|remove|uninstall|run|exec|build|push|pull|commit|rebase|merge|checkout|switch|"
    r"clone|status|restart|start|stop|enable|disable|logs|apply|get|describe|sync|lock|update|upgrade|"
    r"init|test|publish|compose|ci|dlx|tool|venv|reset|stash|config|daemon-reload|fetch|diff|log|"
    r"lint|check|format|fmt|dev|serve|typecheck|audit|outdated|prune))?(?![\w-])"
    # the long flags a subcommand is given: "pnpm lint --fix" is one command, not "pnpm" and
    # "--fix" (a short flag often takes a value: "git commit -m" would be half of one)
    r"((?:[ \t]+--[a-z][\w-]*)*)(?![\w-])",
    re.IGNORECASE,
)
# backticked code, the backticks paired in order: the text *between* two spans ("` works
# where the default key gets `" after a span too long to keep) is never one
_BACKTICKS = re.compile(r"`([^`\n]*)`")
_ENTITY_RES = [
    re.compile(r"(?<![\w@])((?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+/?)"),  # paths
    re.compile(r"(?<![\w/.-])([\w-]+\.(?:py|js|ts|tsx|json|jsonl|toml|ya?ml|md|sh|txt|lock|cfg|ini|conf|"
               r"service|timer|plist|rs|go|env|sql|csv|log))(?![\w])"),
    re.compile(r"(?<![\w-])(--[a-z][\w-]{1,30})"),  # flags
    re.compile(r"\b([A-Z][A-Za-z]+(?:Error|Exception))\b"),
    re.compile(r"\b(E[A-Z]{3,12})\b"),  # errno names
    re.compile(r"\b([A-Z]{1,4}\d{3,5})\b"),  # compiler / linter codes: E0433, TS2345
    re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b"),  # env vars, constants
    re.compile(r"\b([a-z][a-z0-9]+_[a-z0-9_]+)\b"),  # snake_case settings
    re.compile(r"(?:HTTP|status|error|错误|状态码)\s*([45]\d\d)\b", re.IGNORECASE),
    re.compile(r"(?:port|端口)\s*(\d{2,5})\b", re.IGNORECASE),
    re.compile(r"\b((?:\d{1,3}(?:\.\d{1,3}){3}|localhost|[\w-]+(?:\.[\w-]+)+):\d{2,5})\b"),  # host:port
    re.compile(r"\b([A-Za-z][\w.-]*\s\d+\.\d+(?:\.\d+)?)\b(?!\.\d)"),  # "Python 3.11", not "ECONNREFUSED 127.0.0"
    re.compile(r"(?<![\w\\])([A-Za-z]:\\(?:[^\\\s:*?\"<>|，。；]+\\)*[^\\\s:*?\"<>|，。；]+)"),  # Windows paths
    # a Latin word set inside Chinese text ("以后数据库迁移都用 alembic"): a name, whatever it is
    re.compile(r"(?:(?<=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff] ))([A-Za-z][\w.+-]{2,30}[\w+])(?= ?[\u4e00-\u9fff，。；、！]| ?$)"),
]
# "make check" is a command; "make sure" is English
_MAKE_RE = re.compile(r"(?<![\w-])(make\s+(?!(?:sure|it|this|that|the|a|an|sense|them|me|you|us|use|changes?|"
                      r"progress|room|time|way|do|things?|any|some|one|it's|certain|clear)\b)[a-z][\w.-]{1,30})\b")
# a branch named as where work goes ("never push directly to main")
_BRANCH_RE = re.compile(r"\b(?:push|merge|commit|rebase|deploy)\w*(?:\s+\w+){0,2}?\s+(?:to|into|on|onto|from)\s+"
                        r"(main|master|develop|trunk|release/[\w.-]+)\b", re.IGNORECASE)
# how often a standing instruction recurs: the entity of "以后每天中午把新闻发给我"
_RECURRENCE = re.compile(r"每(?:天|日|周[一二三四五六日天]?|星期[一二三四五六日天]|月|晚|早|个工作日|次)"
                         r"(?:早上|上午|中午|下午|晚上|凌晨|\d{1,2}点)?|"
                         r"\bevery (?:day|morning|evening|night|week|month|weekday|"
                         r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)(?: (?:at|before|after) \d{1,2}(?::\d\d)?\s?(?:am|pm)?)?",
                         re.IGNORECASE)
# never a keyword: English filler, the tool a failure trace names, chat-platform ids
_NOT_ENTITY = frozenset("go make it this that with for the to and run use new all get set bash exec shell "
                        "tool exec_command".split())
_PLATFORM_ID = re.compile(r"^(?:o[ucmn]_[0-9a-f]{8,}|\d{6,}|[0-9a-f]{16,}|[\w-]*[0-9a-f]{8}-[0-9a-f]{4}-[\w-]+)$")
_BRACKETS = {")": "(", "]": "[", "}": "{"}
_NAMED_RE = re.compile("|".join(re.escape(n) for n in _NAMED))
# data formats and the applications that open them, as written in prose ("I prefer the CSV
# exports with semicolons …, our accountants open them in German Excel"): a concrete name,
# upper case or capitalised only (the verb "excel" is not one)
_FORMAT_RE = re.compile(r"(?<![\w./-])(CSV|TSV|JSONL?|YAML|TOML|XML|PDF|HTML|SVG|Parquet|Excel|LibreOffice|"
                        r"Google Sheets)(?![\w-])")

_DECISION = re.compile(
    r"\b(?:we|i)(?:\s+have|'ve)?\s+decided\b|\bdecided to\b|\bdecision\s*[:：]|\bwe(?:'ll| will) go with\b|"
    r"(?:我们|我們|我|咱们|咱們|大家|团队|團隊|最终|最終|最后|最後)(?:已经|已經|还是|還是|一致)?(?:决定|決定)|(?:决定|決定)(?:了)?\s*[:：]|"
    r"定下来|拍板",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\bi\s+(?:much\s+|really\s+|strongly\s+)?prefer\b|\bprefer(?:s|red)?\b.{0,40}\b(?:over|to|instead)\b|"
    r"\bmy preference\b|偏好|更喜欢|更喜歡|我喜欢用|我習慣用|我习惯用",
    re.IGNORECASE,
)
_RULE = re.compile(
    r"^\s*(?:please\s+)?remember\b|\bremember (?:that|to)\b|\bfrom now on\b|\bgoing forward\b|"
    r"\bkeep in mind\b|记住|記住|以后|以後|今后|今後|\balways\b|\bnever\b|总是|總是|永远不要|永遠不要|"
    r"务必|務必|一律|不要再|别再|別再|"
    r"\bsave (?:this |it |that )?(?:to|in|into) (?:your |the )?memory\b|\bmake a note\b|\bnote (?:that|down)\b|"
    r"\b(?:do not|don't) ever\b|记下|記下|记一下|記一下|请记录|請記錄|每次都",
    re.IGNORECASE,
)
_NOT_A_RULE = re.compile(
    r"\b(?:don't|do not|can't|cannot|didn't|couldn't) remember\b|\bremember when\b|"
    r"以后再说|以後再說|之后再说|以后再看",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[?？]\s*$|吗[。.]?\s*$|^\s*(?:should|shall|can|could|do|does|is|are|what|why|how)\b",
                       re.IGNORECASE)
_REASON = re.compile(r"^\s*(?:because|since|as|reason|因为|因為|由于|由於|原因)", re.IGNORECASE)
_CAUSE = re.compile(
    r"\b(?:because|caused by|root cause|the (?:issue|problem|cause|culprit) (?:was|is)|turned out|predates|"
    r"(?:is|was) (?:missing|not installed|too old))\b|原因是|原来是|原來是|因为|因為|由于|由於",
    re.IGNORECASE,
)
_FIX_LABEL = re.compile(r"^(?:the\s+)?fix(?:ed)?\s*[:：]\s*", re.IGNORECASE)
# where a sentence may end: after 。！？!? (not ；, which joins the clauses of one sentence:
# "…的原因是 X；更新 Y 后就好了" is a cause and its fix), after a period and whitespace, at a newline
_SENTENCE_END = re.compile(r"[。！？!?]+|(?<=[.…])\s+|\n+")
# an ellipsis that leaves something out inside a sentence: standing alone ("SELECT ... FOR
# UPDATE", "run(...)") or followed by more of the sentence in lower case or Chinese
_ELLIPSIS = re.compile(r"(?:\.{2,}|…)$")
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_TRACE = re.compile(r"\[tool exec failed:?\s*(.+?)\]?$", re.IGNORECASE | re.DOTALL)

_KIND_ZH = {"pitfall": "踩坑", "decision": "决策", "preference": "偏好", "rule": "规则"}
_KIND_PREFIX = {"decision": "Decision", "preference": "Preference", "rule": "Rule"}
_IMPORTANCE = {"pitfall": 0.75, "decision": 0.8, "preference": 0.7, "rule": 0.8}


def find_entities(text: str, limit: int = MAX_ENTITIES) -> list[str]:
    """Concrete names in ``text``, each a verbatim substring, most specific first."""
    found: list[tuple[int, str]] = []
    for m in _TOOL_RE.finditer(text):
        tool, sub = m.group(1), m.group(2)
        if sub and tool.lower() in _SUBCOMMAND_TOOLS:
            found.append((m.start(), m.group(0)))
        else:
            found.append((m.start(1), tool))
    for m in _BACKTICKS.finditer(text):
        code = m.group(1)
        if 2 <= len(code) <= 60 and code == code.strip():
            found.append((m.start(1), code))
    for rx in _ENTITY_RES:
        for m in rx.finditer(text):
            found.append((m.start(1), m.group(1).strip()))
    for rx in (_OS_RE, _PACKAGE_RE, _MAKE_RE, _BRANCH_RE, _FORMAT_RE):
        for m in rx.finditer(text):
            found.append((m.start(1), m.group(1)))
    for m in _NAMED_RE.finditer(text):
        found.append((m.start(), m.group(0)))
    out: list[str] = []
    for _, ent in sorted(found, key=lambda p: p[0]):
        ent = _balanced(ent.rstrip(".,;:，。；："))
        if (len(ent) < 2 or "REDACTED" in ent or ent.startswith("//") or ent in out
                or ent.lower() in _NOT_ENTITY or _PLATFORM_ID.match(ent)):
            continue
        out.append(ent)
    # drop names contained in a longer one ("pip" inside "pip install")
    out = [e for e in out if not any(e != o and _contains_word(o, e) for o in out)]
    return out[:limit]


def _balanced(ent: str) -> str:
    """``ent`` with its brackets and quotes paired: a dangling opener is cut off with what
    follows it, a dangling closer is dropped (``process.exit(0`` → ``process.exit``)."""
    stack: list[int] = []
    for i, ch in enumerate(ent):
        if ch in "([{":
            stack.append(i)
        elif ch in _BRACKETS:
            if stack and ent[stack[-1]] == _BRACKETS[ch]:
                stack.pop()
            else:
                return _balanced(ent[:i])
    if stack:
        ent = ent[:stack[0]]
    for q in "\"'`":
        if ent.count(q) % 2:
            ent = ent[:ent.index(q)]
    return ent.strip().rstrip(".,;:")


def _contains_word(longer: str, word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", longer) is not None


def zh_keywords(text: str, kind: str, limit: int = 3) -> list[str]:
    """What this memory is about, in Chinese (:mod:`distill.text.keywords`); the kind's name
    (踩坑, 规则, …) only when nothing more specific is found (on every row it would tell nothing)."""
    from ..text.keywords import zh_keywords as subject_words

    return subject_words(text, limit) or [_KIND_ZH[kind]]


def sentences(text: str) -> list[str]:
    text = _CODE_BLOCK.sub(" ", text)
    parts, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.group(0)[0].isspace() and not m.group(0).startswith("\n") and _inside_sentence(text, m):
            continue
        parts.append(text[start:m.end()])
        start = m.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _inside_sentence(text: str, gap: re.Match) -> bool:
    """The whitespace after a period does not end the sentence: the period is an ellipsis
    that stands alone (``SELECT ... FOR UPDATE``) or that more of the same sentence follows
    (``it hung... and then``, ``SELECT ... 做队列``)."""
    before = text[max(0, gap.start() - 40):gap.start()]
    dots = _ELLIPSIS.search(before)
    if not dots:
        return False
    alone = dots.start() == 0 or before[dots.start() - 1].isspace()
    nxt = text[gap.end():gap.end() + 1]
    return alone or nxt.islower() or nxt.isdigit() or "\u4e00" <= nxt <= "\u9fff"


def _quote(s: str, limit: int = MAX_QUOTE) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


# a decision that says it reverses an earlier one: "改主意了：我们决定不用 Redis 了", "we changed our
# mind", "scratch that", "no longer use …"
_REVERSAL = re.compile(
    r"改主意|改变主意|改變主意|不用\s*\S{1,30}?\s*了|不再用|换掉|換掉|撤掉|推翻|"
    r"\b(?:changed? (?:my|our) minds?|scratch that|on second thought|reverse (?:the|that|our) decision|"
    r"no longer (?:use|go with)|not (?:use|go with) \S+ after all)\b",
    re.IGNORECASE,
)


def _drop_superseded(found: list[CandidateOut], entities: list[str], counters: Counter) -> list[CandidateOut]:
    """An earlier decision of the chunk about what a reversing decision names (Redis in "我们决定
    用 Redis + RQ" … "改主意了：我们决定不用 Redis 了，改用 PostgreSQL …") is no longer current:
    only the later one is kept, the earlier one counted ``dropped_superseded``."""
    names = {e.lower() for e in entities}
    kept = []
    for c in found:
        if c.category == "decision" and names & {e.lower() for e in c.entity_keywords}:
            counters["dropped_superseded"] += 1
        else:
            kept.append(c)
    return kept


def _author(msg: Any) -> str:
    """Who wrote a batch message (batches written before ``author`` existed: by its role)."""
    return msg.author or {"user": "person", "assistant": "assistant"}.get(msg.role, "tool")


def _statement_kind(sentence: str, author: str) -> str | None:
    if _QUESTION.search(sentence) or _NOT_A_RULE.search(sentence):
        return None
    if _DECISION.search(sentence):
        return "decision"
    if author != "person":
        return None
    if _PREFERENCE.search(sentence):
        return "preference"
    if _RULE.search(sentence):
        return "rule"
    return None


class RulesExtractor:
    """The offline extractor: reads a chunk's turns, no prompt, no call, no cost."""

    name = "rules"
    model = MODEL
    written = False  # its bodies are labelled quotes, not a model's prose

    def extract(self, chunk: Chunk, budget: Any = None) -> Extraction:
        turns = chunk.turns()
        counters: Counter = Counter()
        found = [*self._statements(turns, counters), *self._pitfalls(turns, counters)]
        counters["candidates_proposed"] += len(found) + counters["dropped_superseded"]
        return Extraction(candidates=found, counters=counters)

    def close(self) -> None:
        pass

    def _statements(self, turns: list, counters: Counter) -> list[CandidateOut]:
        out: list[CandidateOut] = []
        for tid, msg in turns:
            author = _author(msg)
            # only a person's words and the assistant's own decisions: never a notice, a
            # schedule's prompt or a parent agent's task spec
            if author not in ("person", "assistant") or msg.text.lstrip().startswith("[tool exec failed"):
                continue
            pasted = shapes.looks_pasted(msg.text)
            sents = _line_sentences(msg.text)
            for i, (line, sent) in enumerate(sents):
                kind = _statement_kind(sent, author)
                if kind is None:
                    continue
                why = _not_standing(kind, line, sent, msg.text, pasted) if author == "person" else None
                if why:
                    counters[f"unsure_{why}"] += 1
                    continue
                quote = sent
                if kind == "decision" and i + 1 < len(sents) and _REASON.search(sents[i + 1][1]):
                    quote = f"{sent} {sents[i + 1][1]}"
                entities = find_entities(quote)
                if not entities and kind == "rule":
                    entities = [m.group(0) for m in _RECURRENCE.finditer(quote)][:1]
                if not entities:
                    continue
                who = "the user" if author == "person" else "the assistant"
                text = f'{_KIND_PREFIX[kind]} ({who}, verbatim): "{_quote(quote, 400)}"'
                if kind == "decision" and _REVERSAL.search(quote):
                    out = _drop_superseded(out, entities, counters)
                out.append(self._candidate(kind, text, entities, quote, [tid]))
        return out

    def _pitfalls(self, turns: list, counters: Counter) -> list[CandidateOut]:
        """One memory per error a program reported, with the fix that names what failed.

        The error is a failed tool call's trace (harness noise and non-errors left out) or a
        program's error a person pasted; never the assistant's prose about an error. The fix
        is the first sentence of a later person or assistant turn (within ``FIX_WINDOW``) that
        says a change, names the failing thing, and is no heading, status line, table row,
        bullet or narration. A fix serves one error: the one among those still open that it
        names most; an error that comes back after its fix was not fixed by it."""
        out: list[CandidateOut] = []
        errors = [(k, _symptom(msg, counters)) for k, (_, msg) in enumerate(turns)]
        used: set[tuple[str, str]] = set()
        done: set[str] = set()
        by_session: dict[str, list] = {}
        for t in turns:
            by_session.setdefault(t[1].session_id, []).append(t)
        # common names per session: a chunk holding several sessions on one topic must tie what each alone ties
        commons = ({sid: _common_names(ts) for sid, ts in by_session.items()} if any(s for _, s in errors) else {})
        for i, symptom in errors:
            if symptom is None or _same_error(symptom) in done:
                continue
            common = commons.get(turns[i][1].session_id, frozenset())
            context = _error_context(turns[i][1], symptom)
            found = None
            for j in range(i + 1, min(i + 1 + FIX_WINDOW, len(turns))):
                if _author(turns[j][1]) in ("person", "assistant"):
                    found = _remedy(turns[j][1].text, context, common, person=_author(turns[j][1]) == "person")
                    if found:
                        break
            if found is None:
                continue
            cause, fix = found
            fid = turns[j][0]
            rivals = [s for k, s in errors[i + 1:j] if s and _same_error(s) != _same_error(symptom)]
            if any(_tie(s, fix, common) > _tie(context, fix, common) for s in rivals):
                continue  # the fix names a later error better: it is that one's
            if any(s and _same_error(s) == _same_error(symptom) for _, s in errors[j + 1:j + 1 + FIX_WINDOW]):
                counters["unsure_pitfall_came_back"] += 1
                continue
            if (fid, fix) in used:
                counters["unsure_pitfall_fix_reused"] += 1
                continue
            used.add((fid, fix))
            entities = find_entities(f"{symptom}\n{cause or ''}\n{fix}")
            if entities:
                done.add(_same_error(symptom))
                text = f"Pitfall: {_quote(symptom, 160)}"
                if cause:
                    text += f" Cause: {_quote(cause, 140)}"
                text += f" Fix: {_quote(fix, 200)}"
                out.append(self._candidate("pitfall", text, entities, f"{symptom} {cause or ''} {fix}",
                                           [turns[i][0], fid]))
        return out

    @staticmethod
    def _candidate(kind: str, text: str, entities: list[str], source: str, evidence: list[str]) -> CandidateOut:
        entities = [e for e in entities if e in text]  # a keyword the (clipped) text lost would mislead
        keywords = list(dict.fromkeys([*entities[:4], *zh_keywords(source, kind)]))[:8]
        return CandidateOut(
            text=text,
            category=kind,
            importance=_IMPORTANCE[kind],
            scope="global" if kind in ("pitfall", "preference", "rule") else "agent",
            keywords=keywords,
            entity_keywords=entities,
            evidence=evidence,
        )


_TOKEN = re.compile(r"[A-Za-z0-9][\w.+-]*[\w+]|\d{2,}")
# words that tie nothing: an error and a fix both saying "file" or "module" are not about one thing
_GENERIC = frozenset(
    "error errors failed fail failure not found cannot can't could the and with for from this that was is are "
    "when then into exec bash shell tool command file files module modules line code exit process now run runs "
    "again install installed fixed fix it its has have had been use used using new old all any also only just "
    "will would should need needs must does did done get got set see out but which what where there here their "
    "they them you your our because instead issue issues problem problems value values name names field fields "
    "view views type types data table tables list item items page pages test tests check works working work "
    "powershell true false none null http https www com org".split()
)
# a sentence that says a change was made, or prescribes one: "I changed X to Y", "X has been
# escaped", "Changed X", "Use X instead of Y", "the fix is to …", "fixed by …", "改成 …". A
# sentence that only describes a state ("X is installed on the host", "X will use Y") is none.
_VERBS = (r"(?:chang|replac|add|remov|renam|mov|escap|swapp|install|reinstall|upgrad|downgrad|pinn|switch|updat|"
          r"correct|delet|revert|wrapp|quot|restart|enabl|disabl|creat|import|register|regenerat|"
          r"rebuil|drop|reorder|set|convert|split|merg|expos|mount|point|increas|decreas|rais|lower|"
          r"cast|encod|decod|stripp|trimm|fix|resolv)(?:e|es|ed|ing|s|t)?")
_CHANGE = re.compile(
    r"\b(?:i|i'?ve|i have|we|we'?ve|we have)\s+(?:\w+\s+){0,2}?(?:[\w-]*-)?" + _VERBS + r"\b|"
    r"\b(?:has|have|was|were|is|are) (?:now )?been (?:\w+ly )?(?:[\w-]*-)?" + _VERBS + r"\b|"
    r"^(?:\W*)(?:chang|replac|add|remov|renam|mov|escap|swapp|install|upgrad|downgrad|pinn?|switch|updat|"
    r"correct|delet|revert|wrapp?|quot|restart|enabl|disabl|creat|set|us|run|rais|increas|lower|convert)"
    r"(?:e|ed|ing)?\b|"
    r"\bthe (?:fix|solution|workaround) (?:is|was) (?:to )?|\b(?:fixed|solved|resolved) (?:it |this |that )?by\b|"
    r"^\W*(?:use|switch to)\b.{1,80}\binstead(?: of)?\b|\b(?:switched to|replaced (?:it )?with|now uses)\b|"
    r"^\W*(?:the )?fix(?:ed)?\s*[:：]\s*\S|\b(?:fixed|solved|resolved) (?:it|this|that|the (?:issue|problem|error))\b|"
    r"改成|改为|改為|换成|換成|改用|加上|删掉|删除了|刪除了|安装了|安裝了|设置为|設置為|升级到|降级到|就好了|解决了|"
    r"(?:更新|重启|重啟|安装|安裝|设置|設置|删除|刪除|加上|添加|配置|修改|执行|執行)\S{0,40}?后|修复了|修復了|可以了|"
    r"需要(?:加上?|用|改用|改成|设置|安装|指定)",
    re.IGNORECASE,
)
# the failing step now succeeds: "now passes", "再跑 npm ci 就成功了"
_RERUN_OK = re.compile(
    r"\b(?:now (?:passes|pass|succeeds|works|runs|starts|exits|builds|imports|connects|writes)|(?:works|passes|succeeds) now"
    r"|pass(?:es)? now|re-?run\w* (?:succeeds|passes|works))\b|再(?:运行|跑|執行|执行|试)\S{0,6}(?:就)?(?:可以了|成功|通过|好了)"
    r"|重新\S{0,8}(?:成功|通过)|就成功|成功了|连接成功|已经?成功",
    re.IGNORECASE,
)
_PERSON_FIX = re.compile(
    r"\bthe (?:fix|solution|workaround) (?:is|was)\b|\b(?:fixed|solved|resolved) (?:it |this |that )?by\b|"
    r"^\W*(?:use|switch to)\b.{1,80}\binstead(?: of)?\b|改成|改为|改為|换成|換成|改用|就好了|解决了",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:hasn'?t|haven'?t|wasn'?t|weren'?t|isn'?t|not yet|never|didn'?t|doesn'?t|won'?t|can'?t|"
                      r"cannot|if you|you'?d|you could|you can|you may|would|when you|expects?|but we|but i|let me know|i can|"
                      r"i could|i'?ll|paste|send me|share the)\b", re.IGNORECASE)


def _names(text: str) -> set[str]:
    """The names in ``text`` an error and its fix can share: tokens and their dotted or
    underscored parts, three characters or more, not generic words."""
    out = set()
    for t in _TOKEN.findall(text):
        t = t.lower().strip(".")
        out.update(p for p in [t, *re.split(r"[./:+_-]", t)] if len(p) >= 3 and p not in _GENERIC)
    return out


def _tie(symptom: str, remedy: str, common: frozenset[str] = frozenset()) -> int:
    """How many names the fix shares with the error (0: it is about something else), not
    counting ``common`` ones (names all over the chunk)."""
    err, fix = _names(symptom) - common, _names(remedy) - common
    return len(err & fix) + sum(1 for a in fix for b in err if a != b and len(min(a, b, key=len)) >= 5
                                and (a in b or b in a))


_PART = re.compile(r"[a-z0-9]{3,}")


def _common_names(turns: list) -> frozenset[str]:
    """Names in a quarter of a session's turns (at least 5): "odoo" in an Odoo session ties
    nothing. Two regex scans a turn (a superset of :func:`_names`, at a fraction of its cost)."""
    seen: Counter = Counter()
    for _, m in turns:
        low = m.text.lower()
        seen.update({*_PART.findall(low), *(t.strip(".") for t in _TOKEN.findall(low))})
    return frozenset(n for n, c in seen.items() if c >= max(5, len(turns) // 4))


def _same_error(symptom: str) -> str:
    """What makes two reports one error: the text without numbers, times and addresses."""
    return re.sub(r"[\d:,.]+|0x[0-9a-f]+", "", symptom.lower())[:120]


def _line_sentences(text: str) -> list[tuple[str, str]]:
    """(the line, a sentence of it) for every sentence; code blocks left out."""
    return [(line, sent) for line in _CODE_BLOCK.sub(" ", text).splitlines() for sent in sentences(line)]


def _not_standing(kind: str, line: str, sentence: str, message: str, pasted: bool) -> str | None:
    """Why a person's rule-like sentence is no standing instruction of theirs: text pasted
    (``pasted``), a task for today (``task``), a complaint or a personal line, or None."""
    if shapes.pasted_line(line):
        return "pasted"
    why = shapes.statement_reason(sentence)
    if why:
        return why
    explicit = kind != "rule" or _EXPLICIT.search(sentence)
    if pasted and not explicit:
        return "pasted"
    if not explicit and shapes.task_for_today(sentence, message):
        return "task"
    return None


# a standing marker that is more than "always" / "never": those alone also fill tasks for today
# ("keep in mind" is a document's phrase as often as a person's)
_EXPLICIT = re.compile(_RULE.pattern.replace(r"\balways\b|\bnever\b|总是|總是|", "").replace(r"\bkeep in mind\b|", ""),
                       re.IGNORECASE)


ERROR_CONTEXT_LINES = 15


def _error_context(msg: Any, symptom: str) -> str:
    """What a fix must name: the error, and when a person pasted it, the lines of the log
    that follow it (the traceback's frames and message), not the rest of their message."""
    if _author(msg) != "person":
        return symptom
    lines = msg.text.splitlines()
    at = next((k for k, ln in enumerate(lines) if symptom[:30].strip() in ln), None)
    return symptom if at is None else "\n".join(lines[max(0, at - 1):at + ERROR_CONTEXT_LINES])


def _symptom(msg: Any, counters: Counter) -> str | None:
    """The error a turn reports: a failed tool call's trace that is not harness noise, or a
    program's error pasted by a person. Never the assistant's prose about an error, a
    platform notice, a schedule's prompt or a parent's task spec."""
    author = _author(msg)
    if author not in ("person", "tool"):
        return None
    text = msg.text.strip()
    m = _TRACE.match(text) if author == "tool" else None
    if m:
        symptom = m.group(1).strip()
        detail = symptom.split(": ", 1)[-1]
        if shapes.harness_error(symptom) or shapes.harness_error(detail):
            counters["unsure_harness_error"] += 1
            return None
        if shapes.not_an_error(detail) or len(detail) < 12:
            counters["unsure_not_an_error"] += 1
            return None
        return symptom
    if author != "person":
        return None
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if _TRACEBACK_HEAD.search(line):
            line = exception_line(lines[k + 1:]) or ""
        found = shapes.program_error(line)
        if found and not shapes.pasted_line(line) and not shapes.harness_error(line):
            err = line[found.start():].strip()
            if err.endswith((":", "：")):  # "Error while parsing view:" and the line that says what
                err = " ".join([err, *[ln.strip() for ln in lines[k + 1:] if ln.strip()][:1]])
            if not shapes.not_an_error(err) and len(err) >= 12:
                return _REQUEST_TAIL.sub("", err)
    return None


_TRACEBACK_HEAD = re.compile(r"Traceback \(most recent call last\)")
# ", fix it and remember the fix" / "，帮我修一下": the person's request, not part of the error
_REQUEST_TAIL = re.compile(r"(?:\s*[,，;；]\s*(?:(?:can you|could you|please|pls)\s+)?"
                           r"(?:fix|solve|debug|look into|help|remember|check|帮我|请|麻烦|记住|修)[^,，;；]*)+$",
                           re.IGNORECASE)


def _remedy(text: str, symptom: str, common: frozenset[str] = frozenset(), *,
            person: bool = False) -> tuple[str | None, str] | None:
    """(cause, fix) from a turn for ``symptom``, or None. The fix is the first whole sentence
    that says a change, names it (an entity, a number or a code: a change that can be
    repeated) and has no junk shape (:func:`shapes.not_a_fix`), tied to the error:
    it names what the error names, or the cause sentence just before it does, or it says
    the failing step now succeeds. The cause: a sentence that states
    one and names the error's or the fix's subject. A person's turn states a fix only in so
    many words ("the fix is …", "use X instead"): otherwise it is their next request."""
    sents = [(line, s) for line, s in _line_sentences(text) if not _QUESTION.search(s)]
    fix = None
    for k, (line, s) in enumerate(sents):
        change = (_PERSON_FIX if person else _CHANGE).search(s) or _RERUN_OK.search(s)
        if not change or _NEGATED.search(s) or shapes.not_a_fix(s, line) or (person and shapes.program_error(s)):
            continue
        if not (find_entities(s) or _NUMBER.search(s)):
            continue  # a change nobody can repeat: "I've fixed the approach", "removed the problematic template"
        before = sents[k - 1][1] if k else ""
        if _tie(symptom, s, common) or (_CAUSE.search(before) and _tie(symptom, before, common)) or \
                _RERUN_OK.search(s):
            fix = _FIX_LABEL.sub("", _LEAD.sub("", shapes.strip_orphan_bold(s))).strip()
            break
    if fix is None or not _complete(fix):
        return None
    cause = next((s for line, s in sents if s != fix and _CAUSE.search(s) and shapes.not_a_fix(s, line) is None
                  and (_tie(symptom, s, common) or _tie(fix, s, common))), None)
    if cause and cause in fix:
        cause = None
    return cause, fix


_NUMBER = re.compile(r"\d{2,}")
# "**Fixed!** " / "Done. " before the sentence that says what was done
_LEAD = re.compile(r"^(?:\*\*)?(?:fixed|done|success|great|perfect)\s*[!.:]+\s*(?:\*\*)?\s*", re.IGNORECASE)


def _complete(sentence: str) -> bool:
    """A whole sentence, not a label or a cut-off lead-in ("Fix:", "The fix is to run:")."""
    s = sentence.strip()
    return len(s) >= 8 and not s.endswith((":", "：", "…", "-", ",", "，"))
