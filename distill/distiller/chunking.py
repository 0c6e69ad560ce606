"""Cut one agent's turns into chunks that fit a prompt, by a token estimate that weighs CJK.

A CJK character costs about 1.5 tokens and any other character about 0.25, so a Chinese
transcript fills a chunk six times faster than an English one of the same length. Turns are
never split (upstream already caps a turn at ``max_turn_chars``); consecutive chunks share
``overlap`` turns so an error and its fix are seen together even across a cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import BatchAgent, BatchMessage

CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
TURN_OVERHEAD_TOKENS = 3  # "[t12 A] " and the newline
END_TAG = "</transcript>"
# one letter per author (the instructions spell them out once); old batches have only a role
AUTHOR_CODE = {"person": "P", "assistant": "A", "tool": "T", "platform": "S", "schedule": "S",
               "parent_agent": "S", "user": "U"}
_TRACE_MARK = re.compile(r"^\[tool (?:exec )?failed: (.*)\]$", re.DOTALL)


_ERROR_LINE = re.compile(r"error|exception|failed|fatal|denied|not found|no such|traceback|refused|timed? ?out",
                         re.IGNORECASE)
TRACE_LINES = 4


def shorten_trace(text: str) -> str:
    """A tool trace as its first line (the command or the failure marker) and its error lines."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) <= TRACE_LINES:
        return text
    keep = [lines[0], *[ln for ln in lines[1:] if _ERROR_LINE.search(ln)][: TRACE_LINES - 1]]
    return "\n".join(keep) + f"\n… ({len(lines) - len(keep)} lines left out)"


# An assistant turn that only acknowledges ("Understood, I'll use uv.", "好的，记下了。") or
# narrates the tool call it makes ("Running pytest.", "开始安装。") restates or announces what
# other turns hold; one that names a cause, a fix or an error is never one of these, nor one
# with a number or a code that no earlier turn of the chunk holds ("OK, it's on port 8443.").
_ACK_OPENER = re.compile(r"(?i)^(?:understood|got it|noted|will do|okay|ok|sure|alright|roger|好的|好|明白了?|收到|"
                         r"了解|知道了|记下了?|已记住|行)(?![a-z])[\s,，.。!！:：-]*")
_NARRATION = re.compile(r"(?i)^(?:running|checking|looking|trying|let me|i'll (?:check|look|run|try)|"
                        r"开始|我先(?:看|查|跑)|正在|让我)")
_SAYS_SOMETHING = re.compile(r"(?i)because|cause|fix|error|fail|instead|原因|修复|因为|错误|失败|解决|而不是|改用")
_FACT_TOKEN = re.compile(r"\d+(?:\.\d+)*|`[^`]+`|[\w-]+[./][\w./-]*\w")
ACK_MAX_CHARS, NARRATION_MAX_CHARS = 80, 60


def carries_nothing(msg: BatchMessage, said: str = "") -> bool:
    """An assistant acknowledgement or narration of tool use, whose numbers and codes all stand
    in ``said`` (the chunk's earlier turns): not sent to the LLM."""
    if (msg.author or msg.role) != "assistant":
        return False
    text = msg.text.strip()
    if _SAYS_SOMETHING.search(text) or any(tok not in said for tok in _FACT_TOKEN.findall(text)):
        return False
    return (len(text) <= ACK_MAX_CHARS and _ACK_OPENER.match(text) is not None) or (
        len(text) <= NARRATION_MAX_CHARS and _NARRATION.match(text) is not None)


def turn_cost(msg: BatchMessage, said: str = "") -> int:
    """Tokens a turn adds to a prompt (none when it is not sent, see :func:`carries_nothing`)."""
    return 0 if carries_nothing(msg, said) else estimate_tokens(msg.text) + TURN_OVERHEAD_TOKENS


def turn_costs(msgs: list[BatchMessage]) -> list[int]:
    """:func:`turn_cost` of each turn, given the turns before it."""
    costs, said = [], []
    for m in msgs:
        costs.append(turn_cost(m, "\n".join(said[-20:])))
        said.append(m.text)
    return costs


def estimate_tokens(text: str) -> int:
    cjk = len(CJK_RE.findall(text))
    return int(cjk * 1.5 + (len(text) - cjk) * 0.25 + 0.999)


@dataclass
class Chunk:
    agent_id: str
    index: int
    messages: list[BatchMessage] = field(default_factory=list)

    @property
    def turn_ids(self) -> list[str]:
        return [f"t{i}" for i in range(1, len(self.messages) + 1)]

    def message_for(self, turn_id: str) -> BatchMessage | None:
        """Map a short turn id back to its batch message (the evidence id)."""
        m = re.fullmatch(r"\s*\[?t(\d+)(?: ?[A-Z])?\]?\s*", turn_id or "")
        if not m:
            return None
        i = int(m.group(1))
        return self.messages[i - 1] if 1 <= i <= len(self.messages) else None

    def turns(self) -> list[tuple[str, BatchMessage]]:
        return list(zip(self.turn_ids, self.messages))

    def source_text(self) -> str:
        """All turn text as sent, for checking that entity keywords are verbatim."""
        return "\n".join(m.text for m in self.messages)

    def render(self) -> str:
        """The transcript as delimited data, each turn as ``[t3 P] text``: its id and one letter
        for who wrote it (the batch's ``author``; its ``role`` in batches written before authors
        existed). Only what can carry knowledge is sent: a tool trace is cut to its command and
        error lines (the ``[tool exec failed: …]`` wrapper is said once by the letter T), an
        assistant turn that :func:`carries_nothing` is left out (its id is skipped), and a turn
        repeating an earlier one of the chunk is sent as a reference. A closing tag inside a
        turn is defused."""
        lines = [f'<transcript agent="{self.agent_id}">']
        first: dict[str, str] = {}
        said: list[str] = []
        for tid, msg in self.turns():
            if carries_nothing(msg, "\n".join(said)):
                continue
            said.append(msg.text)
            who = msg.author or msg.role
            text = msg.text.replace(END_TAG, "</ transcript>").replace("<transcript", "< transcript")
            if who == "tool" or msg.role == "tool":
                mark = _TRACE_MARK.match(text)
                text = shorten_trace(mark[1] if mark else text)
            seen = first.setdefault(text, tid)
            lines.append(f"[{tid} {AUTHOR_CODE.get(who, 'S')}] {text if seen == tid else f'(same as {seen})'}")
        lines.append(END_TAG)
        return "\n".join(lines)

    def tokens(self) -> int:
        return sum(turn_costs(self.messages))


def chunk_agent(agent: BatchAgent, *, chunk_tokens: int, overlap_turns: int, start_index: int = 0) -> list[Chunk]:
    """Greedy cut by token estimate; each chunk after the first repeats the previous chunk's
    last ``overlap_turns`` turns (fewer if that chunk is that short, so every chunk adds a new turn)."""
    msgs = agent.messages
    costs = turn_costs(msgs)
    chunks: list[Chunk] = []
    i = 0
    while i < len(msgs):
        begin = i
        if chunks:
            prev_len = len(chunks[-1].messages)
            begin = max(i - min(overlap_turns, prev_len - 1), 0)
        used = sum(costs[begin:i])
        j = i
        while j < len(msgs) and (j == i or used + costs[j] <= chunk_tokens):
            used += costs[j]
            j += 1
        chunks.append(Chunk(agent.agent_id, start_index + len(chunks), list(msgs[begin:j])))
        i = j
    return chunks


def chunk_batch(agents: list[BatchAgent], *, chunk_tokens: int, overlap_turns: int) -> list[Chunk]:
    out: list[Chunk] = []
    for agent in agents:
        out.extend(chunk_agent(agent, chunk_tokens=chunk_tokens, overlap_turns=overlap_turns,
                               start_index=len(out)))
    return out
