"""A real HTTP server on 127.0.0.1 that answers from a script, for testing real clients.

Each request consumes the next *behaviour* from a queue (``push``); when the queue is
empty the ``default`` behaviour answers. A behaviour is a tuple such as ``("json", {...})``
or ``("status", 429, {"Retry-After": "1"})``, or a callable ``fn(request) -> behaviour``
so a test can answer by what was asked. Subclasses turn behaviours into one provider's
wire format; this module only does the HTTP plumbing, the queue and the recording.

Behaviours every fake understands (see the subclasses for the format-specific ones):

- ``("sleep", seconds)`` / ``("sleep", seconds, then)``: wait, then answer with ``then``
  (default: the default behaviour) -- a client with a shorter timeout gives up first.
- ``("drop",)``: close the connection without answering (a connection error).
- ``("body", status, text[, content_type[, headers]])``: send these bytes verbatim.
- ``("trickle", seconds_per_byte)``: a 200 whose body never finishes in time: one space
  every ``seconds_per_byte`` (a model that keeps streaming), until the client hangs up.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

Behaviour = tuple | Callable[["Recorded"], tuple]


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # lower-cased names
    raw: bytes
    body: Any  # parsed JSON, or None if the body was not JSON
    peer: tuple[str, int] = ("", 0)  # the client's address: same port = connection reused
    at: float = field(default_factory=time.monotonic)


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str]
    drip: float = 0.0  # seconds between bytes of the body (0: send at once)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler still sleeping must not hold up stop()

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        pass  # the client hung up first (timeout tests); nothing to report


class ScriptedServer:
    """Context manager: ``with FakeX() as fake: client(base_url=fake.base_url)``."""

    def __init__(self, behaviours: Iterable[Behaviour] = (), default: Behaviour | None = None):
        self._queue: deque[Behaviour] = deque(behaviours)
        self.default: Behaviour = default if default is not None else self.default_behaviour()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # --- scripting
    def push(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    @property
    def pending(self) -> int:
        """Behaviours not consumed yet (a test can assert the script was used up)."""
        with self._lock:
            return len(self._queue)

    def default_behaviour(self) -> Behaviour:
        raise NotImplementedError

    # --- lifecycle
    def start(self) -> "ScriptedServer":
        handler = _make_handler(self)
        self._server = _Server(("127.0.0.1", 0), handler)
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """Kept after stop(), so a test can aim a client at a port nothing listens on."""
        assert self._port is not None, "server not started"
        return self._port

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- request handling
    def _next(self, rec: Recorded) -> tuple:
        with self._lock:
            self.requests.append(rec)
            behaviour = self._queue.popleft() if self._queue else self.default
        while callable(behaviour):
            behaviour = behaviour(rec)
        return behaviour

    def _answer(self, rec: Recorded, behaviour: tuple) -> Reply | None:
        """Common behaviours; ``None`` means drop the connection."""
        kind = behaviour[0]
        if kind == "sleep":
            time.sleep(behaviour[1])
            then = behaviour[2] if len(behaviour) > 2 else self.default
            while callable(then):
                then = then(rec)
            return self._answer(rec, then)
        if kind == "drop":
            return None
        if kind == "trickle":
            return Reply(200, b" " * 100_000, {"Content-Type": "application/json"}, drip=behaviour[1])
        if kind == "body":
            status, text = behaviour[1], behaviour[2]
            ctype = behaviour[3] if len(behaviour) > 3 else "text/plain"
            headers = {"Content-Type": ctype, **(behaviour[4] if len(behaviour) > 4 else {})}
            data = text.encode() if isinstance(text, str) else text
            return Reply(status, data, headers)
        return self.render(rec, behaviour)

    def render(self, rec: Recorded, behaviour: tuple) -> Reply:
        """Format-specific behaviours; subclasses implement."""
        raise NotImplementedError

    @staticmethod
    def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        data = json.dumps(payload, ensure_ascii=False).encode()
        return Reply(status, data, {"Content-Type": "application/json; charset=UTF-8", **(headers or {})})


def _make_handler(fake: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        wbufsize = 1 << 16  # headers and body leave in one segment (no 40 ms delayed-ACK stall)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:
            self._serve()

        def do_GET(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            path, _, query = self.path.partition("?")
            rec = Recorded(
                method=self.command,
                path=path,
                query=query,
                headers={k.lower(): v for k, v in self.headers.items()},
                raw=raw,
                body=body,
                peer=self.client_address[:2],
            )
            reply = fake._answer(rec, fake._next(rec))
            if reply is None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if not reply.drip:
                self.wfile.write(reply.body)
                return
            try:
                for i in range(len(reply.body)):
                    self.wfile.write(reply.body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(reply.drip)
            except OSError:
                pass  # the client gave up, as it should

    return Handler
