"""systemd's readiness protocol (sd_notify) over ``NOTIFY_SOCKET``, with no dependency.

Outside systemd (no ``NOTIFY_SOCKET``) every call is a no-op, so the daemon runs the same
under launchd, in a terminal or in tests.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None):
        env = os.environ if environ is None else environ
        addr = env.get("NOTIFY_SOCKET", "")
        if addr.startswith("@"):
            addr = "\0" + addr[1:]  # abstract namespace
        self.address = addr or None
        self._watchdog = _watchdog_interval(env)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def watchdog_interval(self) -> float | None:
        """How often to ping: half of ``WatchdogSec``, or None when systemd does not watch us."""
        return self._watchdog

    def send(self, *lines: str) -> bool:
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.setblocking(False)  # a reader that stopped reading must not freeze the daemon
                sock.sendto("\n".join(lines).encode(), self.address)
            return True
        except OSError:
            return False  # systemd gone, socket removed or full: not a reason to stop working

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self, status: str) -> bool:
        return self.send("STOPPING=1", f"STATUS={status}")


def _watchdog_interval(env) -> float | None:
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 1e6 / 2, 0.1)
    except ValueError:
        return None
