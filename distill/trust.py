"""Who may write the rules every agent follows.

A standing rule, preference or decision is "the user's" only when the owner said it: in the
direct session (no chat envelope: the terminal, the Control UI), or in a chat from a sender
the owner's OpenClaw configuration trusts. Anyone else an agent listens to — a group-chat
member, a stranger on a channel open to DMs — is a *sender*: their words reach the batch
attributed to them (author ``sender``), never become a rule, preference or decision, and
anything else drawn only from them stays in the agent's own scope (:func:`vet`).

Whom the configuration trusts (read once per process from ``openclaw.json``, which is JSON5,
at ``<agents_dir>/../openclaw.json`` or the ``openclaw_config`` setting; never a path a
transcript names):

- ``channels.<ch>.allowFrom`` and ``channels.<ch>.accounts.<a>.allowFrom`` entries (not ``*``),
  ``commands.ownerAllowFrom``, and the paired senders in ``credentials/<ch>[-<a>]-allowFrom.json``;
- the ``trusted_senders`` setting, for ids the configuration does not hold;
- in a DM on a channel whose ``dmPolicy`` is not ``open`` (``pairing``, OpenClaw's default, or
  ``allowlist``), every sender: OpenClaw only lets through senders the owner approved.

A group member is never trusted for being in the group; only an id above makes their words the
owner's. With no configuration file DMs count as the owner's (the default ``pairing`` policy)
and group members do not.

The other half, :mod:`distill.text.danger`, decides what is too dangerous to keep from anyone
but the owner; :func:`vet` and :func:`flag_draft` apply both.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings
    from .store.models import MemoryDraft


def _warn(message: str) -> None:
    import logging  # here: every run prints a summary through this module, few ever warn

    logging.getLogger("distill").warning("%s", message)

# the Control UI's own sender id (the owner at the gateway's web page, authenticated by its token)
_CONTROL_UI = "openclaw-control-ui"
_STANDING = ("rule", "preference", "decision")  # what every agent would follow


class Speaker:
    """Who sent a chat message, as OpenClaw's envelope says (see docs/formats.md)."""

    __slots__ = ("channel", "group", "ids")

    def __init__(self, channel: str | None, group: bool, ids: tuple[str, ...]):
        self.channel = channel  # lower case ("feishu", "telegram"); None when the envelope does not say
        self.group = group
        self.ids = ids  # every id the envelope gives the sender (id, username, phone), raw

    def label(self) -> str:
        where = f"{self.channel} " if self.channel else ""
        kind = "group member" if self.group else "DM sender"
        who = f" {self.ids[0]}" if self.ids else ""
        return f"[{where}{kind}{who}, not the owner]"


def _norm(value: object) -> str:
    """An id as compared: lower case, without a channel prefix (``telegram:123``, ``feishu:ou_x``,
    ``user:ou_x``) or a leading ``@``."""
    s = str(value).strip().lower()
    if ":" in s and not s.startswith(("+", "@")) and s.split(":", 1)[0].isalpha():
        s = s.split(":", 1)[1]
    return s.lstrip("@")


class Owners:
    """Whom the owner's configuration trusts; :meth:`owns` answers for one speaker."""

    __slots__ = ("trusted", "open_dm", "problem")

    def __init__(self, trusted: frozenset[str] = frozenset(), open_dm: frozenset[str] = frozenset(),
                 problem: str | None = None):
        self.trusted = trusted
        self.open_dm = open_dm  # channels anyone may DM ("*" when a broken config leaves it unknown)
        self.problem = problem

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Owners) and (self.trusted, self.open_dm, self.problem) == (
            other.trusted, other.open_dm, other.problem)

    __hash__ = None  # type: ignore[assignment]

    def owns(self, speaker: Speaker | None) -> bool:
        if speaker is None:
            return True
        ids = {_norm(i) for i in speaker.ids}
        if ids & self.trusted or _CONTROL_UI in ids:
            return True
        if speaker.group:
            return False
        if "*" in self.open_dm:
            return False
        if speaker.channel is None:
            return not self.open_dm
        return speaker.channel not in self.open_dm


NO_CONFIG = Owners()


def config_path(settings: Settings) -> Path:
    """``openclaw_config``, else ``openclaw.json`` beside the agents folder."""
    given = getattr(settings, "openclaw_config", None)
    return Path(os.path.expanduser(given)) if given else Path(settings.agents_dir).parent / "openclaw.json"


def owners_for(settings: Settings) -> Owners:
    """The owners of this installation (cached while the files are unchanged)."""
    path = config_path(settings)
    creds = path.parent / "credentials"
    stamps = tuple(_mtime(p) for p in (path, creds))
    return _owners(str(path), stamps, tuple(getattr(settings, "trusted_senders", ()) or ()))


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@functools.lru_cache(maxsize=8)
def _owners(path: str, stamps: tuple[int, ...], extra: tuple[str, ...]) -> Owners:
    trusted = set(_ids(extra))
    config, problem = _read_config(Path(path))
    open_dm: set[str] = {"*"} if problem else set()
    for name, ch in _dict(config.get("channels")).items():
        for sec in [_dict(ch), *map(_dict, _dict(_dict(ch).get("accounts")).values())]:
            allow = _list(sec.get("allowFrom"))
            if sec.get("dmPolicy") == "open" or any(str(a).strip() == "*" for a in allow):
                open_dm.add(str(name).lower())
            trusted.update(_ids(allow))
    trusted.update(_ids(_list(_dict(config.get("commands")).get("ownerAllowFrom"))))
    for store in sorted((Path(path).parent / "credentials").glob("*-allowFrom.json")):
        data, bad = _read_config(store)
        trusted.update(_ids(_list(data.get("allowFrom"))))
        if bad:
            _warn(bad)
    if problem:
        _warn(problem)
    return Owners(frozenset(trusted), frozenset(open_dm), problem)


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _ids(values) -> list[str]:
    return [_norm(v) for v in values if str(v).strip() not in ("", "*")]


def _read_config(path: Path) -> tuple[dict, str | None]:
    """The JSON5 object in ``path`` ({} when there is none), and what is wrong with it."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"cannot read {path} ({exc.strerror}): every DM is taken as not the owner's until it can be read"
    import json5

    try:
        data = json5.loads(raw)
    except ValueError as exc:
        return {}, f"{path} is not valid JSON5 ({exc}): every DM is taken as not the owner's until it is fixed"
    return (data if isinstance(data, dict) else {}), None


# --- what a memory may be, given who said it ----------------------------------------------

def _author(msg: Any) -> str:
    return msg.author or {"user": "person", "assistant": "assistant"}.get(msg.role, "tool")


def vet(text: str, kind: str, scope: str, evidence: list[Any], counters: Counter) -> tuple[str, str] | None:
    """``(text, scope)`` a candidate may be stored with, or None after counting why not.

    ``evidence``: the batch messages it rests on. Injection phrasing, in it or in a turn it
    rests on, is dropped from anyone (``refused_injection``); a dangerous instruction is kept only when the owner's own words
    in the evidence give it, and then marked (``flagged_dangerous``; else
    ``refused_dangerous``). A rule, preference or decision from other senders is refused
    (``refused_not_owner``, :func:`_not_the_owners`); anything else drawn only from them stays
    in the agent's scope (``scope_not_owner``)."""
    from .text.danger import assess, marked

    kinds = assess(text)
    if "injection" in kinds or any("injection" in assess(m.text) for m in evidence):
        counters["refused_injection"] += 1  # it says so, or rests on a turn that does
        return None
    authors = {_author(m) for m in evidence}
    owner_turns = [m for m in evidence if _author(m) == "person"]
    if kinds:
        if not any(k in assess(m.text) for m in owner_turns for k in kinds):
            counters["refused_dangerous"] += 1
            return None
        counters["flagged_dangerous"] += 1
        text = marked(text, kinds)
    if kind in _STANDING and _not_the_owners(kind, authors):
        counters["refused_not_owner"] += 1
        return None
    if "sender" in authors and not authors & {"person", "assistant"} and scope == "global":
        counters["scope_not_owner"] += 1
        scope = "agent"
    return text, scope


def _not_the_owners(kind: str, authors: set[str]) -> bool:
    """Whether a standing rule rests on no one who may set one. The owner's turn always may;
    other chat senders never do. Without either, a rule or preference may rest on the
    assistant restating what it was told (a model cites loosely), never on a tool's output,
    a notice, a schedule or a parent agent's spec; a decision may also cite the failures it
    answers."""
    if "person" in authors:
        return False
    if "sender" in authors or not authors & {"assistant"}:
        return True
    return kind != "decision" and bool(authors - {"assistant"})


def flag_draft(draft: MemoryDraft, counts: Counter) -> MemoryDraft:
    """The store's last word on every write (distiller, ``remember``, ``import``): text a person
    would not see is removed, and a dangerous instruction carries the marker in its text and
    ``caution`` (its kinds) in its metadata."""
    from .text.danger import assess, marked
    from .text.invisible import visible

    text, hidden = visible(draft.text)
    if hidden:
        counts["invisible_removed"] += hidden
    metadata = _visible_metadata(draft.metadata, counts)
    # the body only: the keywords line names a command without the "never" before it
    kinds = [k for k in assess(text.split("\nKeywords (zh)")[0]) if k != "injection"]
    if kinds:
        text = marked(text, kinds)
        metadata = {**metadata, "caution": kinds}
    if text == draft.text and metadata == draft.metadata:
        return draft
    return draft.model_copy(update={"text": text, "metadata": metadata})


def _visible_metadata(value: Any, counts: Counter) -> Any:
    from .text.invisible import visible

    if isinstance(value, str):
        clean, hidden = visible(value)
        if hidden:
            counts["invisible_removed"] += hidden
        return clean
    if isinstance(value, dict):
        return {k: _visible_metadata(v, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible_metadata(v, counts) for v in value]
    return value


def summary_note(counters: dict[str, int]) -> str:
    """The run summary's part on other senders: ``, 3 turns from others (not the owner)``."""
    n = counters.get("author:sender", 0)
    parts = [f"{n} turn{'' if n == 1 else 's'} from others (not the owner)"] if n else []
    for key, what in (("refused_not_owner", "not the owner's"), ("refused_dangerous", "dangerous"),
                      ("refused_injection", "injection")):
        if counters.get(key):
            parts.append(f"{counters[key]} refused as {what}")
    if counters.get("flagged_dangerous"):
        parts.append(f"{counters['flagged_dangerous']} flagged ask-first")
    return "".join(f", {p}" for p in parts)


def refusal(text: str) -> str | None:
    """Why MCP ``remember`` refuses ``text`` on trust grounds, or None. Its caller is the owner's
    own agent, so a dangerous instruction is stored (marked, by :func:`flag_draft`); injection
    phrasing never is."""
    from .text.danger import assess

    if "injection" in assess(text):
        return "reads as a prompt injection (\"ignore previous instructions\" …), which is never stored"
    return None
