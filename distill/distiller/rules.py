"""The offline, deterministic distiller: the default when no LLM is configured.

What it finds:
- explicit statements by the user: "remember …", "from now on …", "always / never …",
  "I prefer …", 记住 / 記住 / 以后 / 偏好 / 不要再 …, and decisions ("we decided …", 决定 / 決定)
  by either side, with the "because …" that follows;
- error-then-fix sequences: a failed tool call (``[tool exec failed: …]``) or an error message,
  followed within a few turns by a fix ("fixed by …", "the cause was …", 改成 / 解决 / 原因是 …),
  kept as a pitfall with both halves quoted;
- entities copied verbatim: commands, paths, files, packages, flags, error names and codes,
  environment variables, identifiers in backticks.

What it cannot do: paraphrase or translate (a Chinese statement is quoted as it was said),
infer knowledge nobody stated explicitly, or judge whether a stated rule is still current.
A statement with no concrete entity in it ("I always forget my umbrella") is never kept,
which is how small talk stays out.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

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
    "selenium gunicorn uvicorn fastapi flask django celery kafka rabbitmq ffmpeg tesseract pandoc latex "
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
_ERROR = re.compile(
    # an error's name and an errno are read in their own case: under IGNORECASE "\bE[A-Z]{3,12}\b"
    # was any word of 4-13 letters starting with e ("encoding", "everything")
    r"\[tool exec failed|Traceback \(most recent call last\)|(?-i:\b[A-Z][A-Za-z]+(?:Error|Exception)\b)|"
    r"\berror\b\s*[:：]|\bfailed\b|(?-i:\bE[A-Z]{3,12}\b)|command not found|permission denied|no such file|"
    r"exit (?:code|status) [1-9]|\b[45]\d\d (?:Too Many|Internal|Not Found|Forbidden|Bad|Service)|"
    r"报错|錯誤|错误|失败|失敗|异常|異常",
    re.IGNORECASE,
)
_FIX = re.compile(
    r"\bfix\s*[:：]|\b(?:fixed|the fix (?:is|was)|fix(?:ed)? (?:it|this|that) by|solved|resolved|works now|working now|"
    r"now (?:works|passes|succeeds|starts)|(?:upgraded|downgraded|pinned|switched|changed) (?:\w+ ){0,3}to|"
    r"needs? to (?:use|set|run)|instead of)\b|"
    r"解决|解決|修复|修復|修好|改成|改为|改為|换成|換成|改用|就好了|可以了|成功",
    re.IGNORECASE,
)
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

_LEXICON: list[tuple[re.Pattern, str]] = [(re.compile(p, re.IGNORECASE), zh) for p, zh in [
    (r"install|安装|安裝", "安装"), (r"deploy|部署", "部署"), (r"\btests?\b|pytest|测试|測試", "测试"),
    (r"timeout|timed out|超时|超時", "超时"), (r"permission denied|EACCES|权限|權限", "权限不足"),
    (r"not found|no such file|ENOENT|找不到|不存在", "找不到文件"), (r"\bbuild|compile|构建|编译", "构建"),
    (r"depend|依赖|依賴|lockfile|package manager|包管理", "依赖管理"), (r"config|配置|setting", "配置"),
    (r"upgrade|升级|升級", "升级"), (r"EADDRINUSE|address already in use|端口被占用", "端口占用"),
    (r"\bport\b|端口", "端口"), (r"out of memory|\bOOM\b|内存|記憶體", "内存不足"),
    (r"crash|segfault|崩溃", "崩溃"), (r"connection refused|ECONNREFUSED|连接|連線", "连接失败"),
    (r"\b429\b|rate limit|限流", "限流"), (r"encoding|utf-?8|编码|乱码|亂碼", "编码"),
    (r"\bcommit\b|\bpush\b|提交|推送", "提交代码"), (r"database|数据库|postgres|sqlite|mysql", "数据库"),
    (r"\blint|ruff|black|eslint|prettier|格式化", "代码格式"), (r"\blogs?\b|日志|日誌", "日志"),
    (r"cache|缓存|快取", "缓存"), (r"proxy|代理", "代理"), (r"version|版本", "版本"),
    (r"docker|container|容器", "容器"), (r"migrat|迁移|遷移", "迁移"),
    (r"environment variable|env var|环境变量|環境變數", "环境变量"), (r"reply|respond|answer|回复|回答", "回复风格"),
    (r"中文|英文|Chinese|English|language|语言", "语言"), (r"api key|token|密钥|金鑰", "密钥"),
    (r"\bcron|schedule|定时|定時", "定时任务"), (r"systemd|systemctl|\bservice\b|服务|服務", "系统服务"),
    (r"branch|merge|rebase|分支|合并", "分支管理"), (r"import|ModuleNotFoundError|导入|導入", "模块导入"),
    (r"venv|virtualenv|虚拟环境|虛擬環境", "虚拟环境"), (r"ssl|certificate|证书|憑證", "证书"),
    (r"disk|磁盘|磁碟", "磁盘空间"), (r"slow|performance|性能|效能|慢", "性能"), (r"backup|备份|備份", "备份"),
    (r"release|publish|发布|發布", "发布"), (r"format|格式", "格式"),
    (r"delimiter|separator|分隔符", "分隔符"), (r"spreadsheet|excel|\bcsv\b|电子表格|表格", "表格"), (r"path|路径|路徑", "路径"),
]]
def _word_alternatives(pattern: str) -> re.Pattern:
    """English alternatives match only at a word start and never inside an identifier
    (``reply`` is not in ``reply.raw.write``, ``container`` is not in ``login-container``)."""
    alts = []
    for alt in pattern.split("|"):
        if alt.isascii():
            alts.append(r"(?<![\w./-])" + alt.removeprefix(r"\b") + r"(?![\w]*[./_-]\w)")
        else:
            alts.append(alt)
    return re.compile("|".join(alts), re.IGNORECASE)


_LEXICON = [(_word_alternatives(rx.pattern), zh) for rx, zh in _LEXICON]
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
        found = [*self._statements(turns, counters), *self._pitfalls(turns)]
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
            sents = sentences(msg.text)
            for i, sent in enumerate(sents):
                kind = _statement_kind(sent, author)
                if kind is None:
                    continue
                quote = sent
                if kind == "decision" and i + 1 < len(sents) and _REASON.search(sents[i + 1]):
                    quote = f"{sent} {sents[i + 1]}"
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

    def _pitfalls(self, turns: list) -> list[CandidateOut]:
        out: list[CandidateOut] = []
        i = 0
        while i < len(turns):
            if not _symptom(turns[i][1]):
                i += 1
                continue
            window = range(i + 1, min(i + 1 + FIX_WINDOW, len(turns)))
            fix_at = next((j for j in window if _author(turns[j][1]) in ("person", "assistant")
                           and _remedy(turns[j][1].text)), None)
            if fix_at is None:
                i += 1
                continue
            errors = [(k, tid, _symptom(msg)) for k, (tid, msg) in enumerate(turns[i:fix_at]) if _symptom(msg)]
            # the most specific error message; on a tie the later one (closest to the fix)
            _, tid, symptom = max(errors, key=lambda e: (len(find_entities(e[2], limit=20)), e[0]))
            fid, fmsg = turns[fix_at]
            cause, fix = _remedy(fmsg.text)
            fix = _FIX_LABEL.sub("", fix).strip()
            if not _complete(fix) or not _tied(" ".join(e[2] for e in errors), fmsg.text):
                i = fix_at + 1
                continue
            entities = find_entities(f"{symptom}\n{cause or ''}\n{fix}")
            if entities:
                text = f"Pitfall: {_quote(symptom, 160)}"
                if cause:
                    text += f" Cause: {_quote(cause, 140)}"
                text += f" Fix: {_quote(fix, 200)}"
                out.append(self._candidate("pitfall", text, entities, f"{symptom} {cause or ''} {fix}", [tid, fid]))
            i = fix_at + 1
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
_GENERIC = frozenset(
    "error errors failed fail failure not found cannot can't could the and with for from this that was is are "
    "when then into exec bash shell tool command file module line code exit process now run runs again "
    "install installed fixed fix it".split()
)


_RERUN_OK = re.compile(
    r"\b(?:now (?:passes|pass|succeeds|works|runs|starts|exits|builds|imports|connects)|(?:works|passes|succeeds) now"
    r"|pass(?:es)? now|re-?run\w* (?:succeeds|passes|works))\b|再(?:运行|跑|執行|执行|试)\S{0,6}(?:就)?(?:可以了|成功|通过|好了)"
    r"|重新\S{0,8}(?:成功|通过)|就成功|成功了",
    re.IGNORECASE,
)


def _tied(symptom: str, remedy: str) -> bool:
    """The fix belongs to this error: it names something the error names (an entity,
    command, file, code or port), or says the failing step now succeeds. A fix-like
    sentence about something else is not this error's fix."""
    if _RERUN_OK.search(remedy):
        return True

    def names(text: str) -> set[str]:
        out = set()
        for t in _TOKEN.findall(text):
            t = t.lower().strip(".")
            out.update(p for p in [t, *re.split(r"[./:+_-]", t)] if len(p) >= 3 and p not in _GENERIC)
        return out

    err, fix = names(symptom), names(remedy)
    return bool(err & fix) or any(len(a) >= 5 and a in b for a in fix for b in err) or any(
        len(b) >= 5 and b in a for a in fix for b in err)


def _complete(sentence: str) -> bool:
    """A whole sentence, not a label or a cut-off lead-in ("Fix:", "The fix is to run:")."""
    s = sentence.strip()
    return len(s) >= 8 and not s.endswith((":", "：", "…", "-", ",", "，"))


def _symptom(msg: Any) -> str | None:
    """The error a turn reports: a failed tool call's trace, or a stated error that is not a
    fix. Never a platform notice, a schedule's prompt or a parent's task spec: their words
    must not reach a memory."""
    if _author(msg) not in ("person", "assistant", "tool"):
        return None
    m = _TRACE.match(msg.text.strip())
    if m:
        return m.group(1).strip()
    for sent in sentences(msg.text):
        if _ERROR.search(sent) and (msg.role == "tool" or not (_FIX.search(sent) or _QUESTION.search(sent))):
            return _REQUEST_TAIL.sub("", sent)
    return None


# ", fix it and remember the fix" / "，帮我修一下": the person's request, not part of the error
_REQUEST_TAIL = re.compile(r"(?:\s*[,，;；]\s*(?:(?:can you|could you|please|pls)\s+)?"
                           r"(?:fix|solve|debug|look into|help|remember|check|帮我|请|麻烦|记住|修)[^,，;；]*)+$",
                           re.IGNORECASE)


def _remedy(text: str) -> tuple[str | None, str] | None:
    """(cause, fix) sentences of a turn, or None when it states no fix."""
    sents = [s for s in sentences(text) if not _QUESTION.search(s)]
    fix_i = next((i for i, s in enumerate(sents) if _FIX.search(s)), None)
    if fix_i is None:
        return None
    fix = sents[fix_i]
    if not find_entities(fix) and fix_i + 1 < len(sents) and find_entities(sents[fix_i + 1]):
        fix = f"{fix} {sents[fix_i + 1]}"
    cause = next((s for i, s in enumerate(sents) if i != fix_i and _CAUSE.search(s)), None)
    if cause and cause in fix:
        cause = None
    return cause, fix
