"""Parse speed of the source formats against "orjson.loads every line", on lines in memory.

The end-to-end figure (``distill run`` over files, against the same orjson loop and ``cat``)
is the tail benchmark's; this one isolates the parsing layer: the bytes pre-test, the
decode of the lines that pass it, and the finishing step (strip, noise, clip, redact).

    /tmp/venv/bin/python tests/bench/bench_sources.py [--mb 60] [--repeat 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.model import TurnLimits  # noqa: E402
from distill.sources import get_format  # noqa: E402
from sources_lines import (  # noqa: E402
    FIRST_LINES, cc_assistant, cc_user, cx_event, cx_item, cx_output, oc_msg, oc_tool_result, png,
)

WORDS = ("cursor inode flock batch commit pending offset lance vector scope agent memory redact token "
         "the a to of and is for with on fix bug error why how use keep drop run test file").split()


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def openclaw_lines(rng: random.Random, target: int) -> list[bytes]:
    """Mix modelled on real OpenClaw sessions: most bytes are tool output and images."""
    lines, size = [FIRST_LINES["openclaw"]], 0
    img = png(250_000)
    while size < target:
        r = rng.random()
        if r < 0.15:
            line = oc_msg("user", "Conversation info (untrusted metadata):\n```json\n{\"message_id\": \"1\"}\n```\n\n"
                          + prose(rng, rng.randint(5, 80)))
        elif r < 0.35:
            line = oc_msg("assistant", [{"type": "thinking", "thinking": prose(rng, 200)},
                                        {"type": "text", "text": prose(rng, rng.randint(10, 300))},
                                        {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "ls"}}])
        elif r < 0.45:
            line = oc_msg("assistant", [{"type": "toolCall", "id": "c", "name": "write",
                                         "arguments": {"path": "/w/x.py", "content": prose(rng, 2000)}}])
        elif r < 0.85:
            line = oc_tool_result("bash", "\n".join(prose(rng, 12) for _ in range(rng.randint(20, 1500))),
                                  details={"exitCode": 0})
        elif r < 0.88:
            line = oc_tool_result("bash", "Error: " + prose(rng, 30), is_error=True)
        elif r < 0.95:
            line = oc_tool_result("browser", [{"type": "text", "text": "screenshot"},
                                              {"type": "image", "data": img, "mimeType": "image/png"}])
        else:
            line = oc_msg("user", [{"type": "text", "text": prose(rng, 20)},
                                   {"type": "image", "data": img, "mimeType": "image/jpeg"}])
        lines.append(line.rstrip(b"\n"))
        size += len(line)
    return lines


def claude_lines(rng: random.Random, target: int) -> list[bytes]:
    lines, size, n = [], 0, 0
    while size < target:
        n += 1
        r = rng.random()
        if r < 0.15:
            line = cc_user(prose(rng, rng.randint(5, 80)))
        elif r < 0.40:
            line = cc_assistant(f"msg_{n}", [{"type": "text", "text": prose(rng, rng.randint(10, 300))}])
        elif r < 0.55:
            line = cc_assistant(f"msg_{n}", [{"type": "thinking", "thinking": prose(rng, 300), "signature": "s"}])
        else:
            out = "\n".join(prose(rng, 12) for _ in range(rng.randint(20, 1500)))
            line = cc_user([{"tool_use_id": "t", "type": "tool_result", "content": out}],
                           after={"toolUseResult": {"stdout": out, "stderr": "", "interrupted": False}})
        lines.append(line.rstrip(b"\n"))
        size += len(line)
    return lines


def codex_lines(rng: random.Random, target: int) -> list[bytes]:
    lines, size = [FIRST_LINES["codex"]], 0
    while size < target:
        r = rng.random()
        if r < 0.10:
            t = prose(rng, rng.randint(5, 80))
            new = [cx_item("message", role="user", content=[{"type": "input_text", "text": t}]),
                   cx_event("user_message", message=t)]
        elif r < 0.30:
            t = prose(rng, rng.randint(10, 300))
            new = [cx_event("agent_message", message=t),
                   cx_item("message", role="assistant", content=[{"type": "output_text", "text": t}])]
        elif r < 0.45:
            new = [cx_item("reasoning", summary=[], encrypted_content="gAAA" * 2000)]
        else:
            out = "\n".join(prose(rng, 12) for _ in range(rng.randint(20, 1500)))
            new = [cx_item("function_call", name="shell", arguments="{}", call_id="c"),
                   cx_output("c", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n" + out)]
        for line in new:
            lines.append(line.rstrip(b"\n"))
            size += len(line)
    return lines


def decode_all(lines: list[bytes]) -> int:
    n = 0
    loads = orjson.loads
    for line in lines:
        try:
            loads(line)
            n += 1
        except orjson.JSONDecodeError:
            pass
    return n


def parse_all(fmt_name: str, lines: list[bytes]) -> tuple[int, int]:
    fmt = get_format(fmt_name)
    parser = fmt.new_parser(agent_id="main", file="/b.jsonl", session_id="b", counters=Counter(), limits=TurnLimits())
    could_yield, feed = fmt.could_yield, parser.feed
    turns = decoded = pos = 0
    for line in lines:
        end = pos + len(line) + 1
        if could_yield(line):
            decoded += 1
            turns += len(feed(line, pos, end))
        pos = end
    turns += len(parser.finish())
    return turns, decoded


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(a, b, repeat: int) -> tuple[float, float]:
    """Fastest of ``repeat`` alternating runs of each: the machine is shared, so the two
    are measured under the same load and the least disturbed run of each counts."""
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(timed(a))
        tb.append(timed(b))
    return min(ta), min(tb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=60)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(1)
    target = int(args.mb * 1e6)
    for name, make in (("openclaw", openclaw_lines), ("claude-code", claude_lines), ("codex", codex_lines)):
        lines = make(rng, target if name == "openclaw" else target // 3)
        size = sum(len(x) + 1 for x in lines)
        t_json, t_parse = interleaved(lambda: decode_all(lines), lambda: parse_all(name, lines), args.repeat)
        turns, decoded = parse_all(name, lines)
        print(f"{name:12s} {size / 1e6:7.1f} MB {len(lines):7d} lines | orjson every line {size / 1e6 / t_json:7.0f} MB/s"
              f" | parse {size / 1e6 / t_parse:7.0f} MB/s | x{t_json / t_parse:5.2f} | decoded {decoded / len(lines):5.1%}"
              f" of lines, {turns} turns")


if __name__ == "__main__":
    main()
