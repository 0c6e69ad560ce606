"""The shapes a memory's halves must never have, whoever wrote the memory.

Both distillers answer to these: the offline ``rules`` extractor uses them to choose what it
quotes, and the validator (:mod:`.validate`) rejects an LLM's candidate in the same shapes,
whatever the model says. They were read off the junk that real transcripts produced (issue 21):

- an *error* that is agent-harness noise (Claude Code's ``<tool_use_error>``, "File has not
  been read yet", a rejected tool use, a permission prompt, a blocked command, hook output),
  or no error at all (an INFO log line, a source line that contains the word Error, a check
  that passed, a count of zero failures, a bullet or a heading);
- a *fix* that is a heading, a status line ("Fixed and deployed."), a table row, a bullet,
  narration ("Let me try a different approach"), or a lead-in cut at a colon;
- a *rule* that is text the person pasted (a table row, a bullet, a heading, a quote), a task
  for today, a complaint, or a diary line with health or other personal details.

Each function answers for one piece of text, cheaply (a few regexes): they run on candidates,
never on the read path.
"""

from __future__ import annotations

import re

# --- errors ------------------------------------------------------------------------------

# what the agent's own harness reports about a tool call: nothing about the user's software
_HARNESS = re.compile(
    r"</?tool_use_error>|file has not been read yet|read it first before writing|"
    r"old_string and new_string are exactly the same|no changes to make|string to replace not found|"
    r"found \d+ matches of the string to replace|file has been (?:modified|changed) since (?:it was )?read|"
    r"doesn'?t want to proceed with this tool use|tool use was rejected|permission for this tool use|"
    r"permission to use \w+ (?:has been|was) denied|requires? (?:your )?(?:approval|permission)|"
    r"requested permissions?|\bblocked(?: by)?\s*:|was blocked by|\bhook\b.{0,40}\b(?:blocked|denied|error|failed|output)|"
    r"\b(?:pre|post)tooluse\b|request interrupted by user|interrupted by user|"
    r"file does not exist\.\s*note: your current working directory|"
    r"validation failed for tool|inputvalidationerror|invalid tool parameters|unknown tool\b|"
    r"exceeds maximum allowed tokens|\(no new output\)|^\(?command exited with code \d+\)?$|"
    r"tool_use_id|user rejected|user denied|approval (?:was )?denied",
    re.IGNORECASE,
)
# a log line below error level; a count of zero failures; a check that passed
_LOG_BELOW_ERROR = re.compile(r"\b(?:INFO|DEBUG|TRACE|NOTICE)\b")
_LOG_ERROR_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b|Traceback|[A-Z]\w*(?:Error|Exception):")
_ZERO_FAILURES = re.compile(r"\b(?:failed|failures|errors?)\s*[=:]\s*0\b|\b0 (?:failed|failures|errors?)\b|"
                            r"\ball (?:checks|tests) pass|\bpassed\b|✓|✅", re.IGNORECASE)
# a line of source code (raise/return/if …, an assignment, a call ending a statement)
_CODE_LINE = re.compile(
    r"^\s*(?:raise|return|if|elif|else|except|def|class|import|from|const|let|var|function|throw|catch|try|"
    r"await|async|export|public|private|self\.|this\.)\b|^\s*[\w.\[\]'\"]+\s*[+\-*/]?=[^=]|[;{}]\s*$|=>|\)\s*\{",
)
# markdown structure: a heading, bullet, numbered item, quote or table row
_STRUCTURE = re.compile(r"^\s*(?:#{1,6}\s|[-*+•]\s|\d{1,2}[.)]\s|>|\|)")


def harness_error(text: str) -> bool:
    """The text is the agent harness talking (a tool-use error, a prompt, a block), not a program."""
    return _HARNESS.search(text) is not None


def reports_nothing(text: str) -> bool:
    """The text reports no failure: a log line below error level, zero failures, a passed check."""
    s = text.strip()
    return (_LOG_BELOW_ERROR.search(s) is not None or _ZERO_FAILURES.search(s) is not None) and \
        _LOG_ERROR_LEVEL.search(s) is None


def not_an_error(text: str) -> bool:
    """A tool's line that is no error: it reports nothing (see :func:`reports_nothing`), or it
    is source code or markdown that happens to contain the word."""
    s = text.strip()
    if reports_nothing(s):
        return True
    if re.match(r'\{\s*"(?:error|message|detail)"', s):
        return False  # an HTTP API's error body
    return _CODE_LINE.search(s) is not None or _STRUCTURE.match(s) is not None


# an error a program reports, as a person pastes it into a message: an exception name with
# its message, a traceback, an errno, an HTTP status, a non-zero exit, a shell's complaint
PROGRAM_ERROR = re.compile(
    r"(?:\b[\w.]*[A-Z]\w*(?:Error|Exception)\b\s*[:(]|Traceback \(most recent call last\)|"
    r"(?<![`'\"])\b(?:ENOENT|EACCES|EADDRINUSE|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPERM|EEXIST|ENOTFOUND|"
    r"EINTEGRITY|ERESOLVE|ENOSPC|EMFILE)\b(?![`'\"])|\bHTTP(?:/\d(?:\.\d)?)? [45]\d\d\b|\bstatus(?: code)? [45]\d\d\b|"
    r"\bexit(?:ed with)? (?:code|status) [1-9]\d*|command not found|no such file or directory|permission denied|"
    r"\bSQLSTATE\[|\bfatal:|\berror(?:\[\w+\])?:\s|^\s*(?:error|fatal|exception) while\b)",
    re.IGNORECASE,
)


def program_error(text: str) -> re.Match | None:
    """Where a program's error starts in a person's message (None: it holds none)."""
    return PROGRAM_ERROR.search(text)


# --- fixes -------------------------------------------------------------------------------

_MARKDOWN = re.compile(r"[*_`#>]+|^\s*[-+•]\s+|[✅✔️🎉🚀]")
# a line that only reports a state: "Fixed and deployed.", "The fix is working", "Done!"
_STATUS = re.compile(
    r"^(?:(?:it'?s |it is |that'?s |everything is |all )?(?:now )?(?:fixed|done|resolved|solved|working|deployed|"
    r"complete|completed|ready|good|sorted|updated|upgraded|installed)(?: and (?:\w+ ?){1,2})?|"
    r"(?:the )?(?:fix|issue|problem|error|view|module|build|change|it) (?:is|was|has been|have been) "
    r"(?:now )?(?:working|fixed|resolved|applied|deployed|done|solved|complete)(?: now)?|"
    r"(?:the )?fix is working|works now|it works|success(?:ful)?|perfect|great|all set)[\s!.]*$",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"^(?:now,? )?(?:let me|let'?s|let us|i'?ll|i will|i'?m going to|i need to|i should|we need to|"
    r"looking at|i see|i can see|checking|trying|first,? (?:let me|i'?ll)|okay,? (?:let me|so)|ok,? let me|"
    r"based on the error|the error (?:shows|says|indicates|is)|you should see|you'?ll see|try (?:running|again)|"
    r"if|unless|you'?d need|you (?:could|can|may|might)|the issue is|the problem is)\b",
    re.IGNORECASE,
)


# the "** " a sentence split inside bold leaves ("**Fixed! ** I swapped …")
_ORPHAN_BOLD = re.compile(r"^\s*\*\*\s+")


def strip_orphan_bold(sentence: str) -> str:
    return _ORPHAN_BOLD.sub("", sentence)


def not_a_fix(sentence: str, raw_line: str = "") -> str | None:
    """Why ``sentence`` cannot be the fix of a pitfall (``heading``, ``status``, ``table``,
    ``bullet``, ``narration``, ``cut``), or None. ``raw_line``: the whole line it came from,
    whose markdown tells a heading or a bullet from prose."""
    sentence = strip_orphan_bold(sentence)
    line = strip_orphan_bold((raw_line or sentence).strip())
    if line.startswith("#") or re.fullmatch(r"\*\*[^*]+\*\*[\s:：!.]*", line):
        return "heading"
    if line.count("|") >= 2:
        return "table"
    if re.match(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s", line):
        return "bullet"
    plain = _MARKDOWN.sub("", sentence).strip()
    plain = re.sub(r"^(?:fixed|done|success|great|perfect)\s*[!.:]+\s*", "", plain, flags=re.IGNORECASE)
    if len(plain) < 8 or plain.endswith((":", "：", "-", ",", "，")) or sentence.count("**") % 2:
        return "cut"
    if _STATUS.match(plain):
        return "status"
    if _CODE_LINE.search(plain):
        return "code"
    if _NARRATION.match(plain):
        return "narration"
    return None


# --- a person's standing rules -----------------------------------------------------------

# a task for today: a numbered step, "let's …", "can you …", "also …"
_TASK = re.compile(
    r"\b(?:let'?s|lets|1st|2nd|first,|can you|could you|i want you to|we need to|i need you to|how (?:we|can))\b",
    re.IGNORECASE,
)
_COMPLAINT = re.compile(
    r"\b(?:why (?:did|do|are|is|would) you|you (?:didn'?t|did not|forgot|left|broke|keep|ignored|missed)|"
    r"what the|wtf|annoying|stupid|frustrat\w*|again\?|i told you)\b|为什么又|又忘了|怎么又",
    re.IGNORECASE,
)
_PERSONAL = re.compile(
    r"\b(?:i (?:slept|feel|felt|ate|woke|cried)|my (?:health|doctor|blood|weight|sleep|mood|diary|journal|"
    r"wife|husband|girlfriend|boyfriend|therapist)|headaches?|migraine|sick|medication|medicine|pills?|"
    r"hospital|symptoms?|diagnos\w+|therapy|insomnia|anxiety|depress\w+|dear diary)\b|"
    r"日记|睡眠|失眠|吃药|医院|身体不|血压|体重|头疼|头痛|心情|焦虑|抑郁",
    re.IGNORECASE,
)


def pasted_line(line: str) -> bool:
    """The line is document structure (a table row, a bullet, a heading, a quote, a bold label),
    which a person pastes rather than types as an instruction."""
    s = line.strip()
    return _STRUCTURE.match(s) is not None or s.count("|") >= 2 or s.startswith("**")


_BARE_URL = re.compile(r"^\s*<?https?://\S+>?\s*$")


def looks_pasted(text: str) -> bool:
    """A whole message that is a document or forwarded text: three or more structure lines or
    bare links, or a code block."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "```" in text or sum(1 for ln in lines if pasted_line(ln) or _BARE_URL.match(ln)) >= 3


def statement_reason(sentence: str) -> str | None:
    """Why a person's sentence is no standing rule (``complaint``, ``personal``), or None."""
    if _PERSONAL.search(sentence):
        return "personal"
    if _COMPLAINT.search(sentence):
        return "complaint"
    return None


def task_for_today(sentence: str, message: str) -> bool:
    """A request about the work at hand, even if it says "always": a step list, "let's",
    "can you", or a long message of several requests."""
    return _TASK.search(sentence) is not None or len(message) > 400 or sentence.count(",") >= 3
