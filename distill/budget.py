"""Token budget per run and per day, and the record of what providers reported using.

A call is estimated before it is made and refused if it could push the run or the day past
its budget (``token_budget_run`` / ``token_budget_day``), so a budget is never exceeded by
more than one estimate's error. The day's usage lives in ``<state>/usage.json`` (UTC days),
updated under its own lock so the daemon, cron and backfill share one daily total.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import orjson

from .atomic import write_json
from .config import Settings
from .errors import BudgetExceeded
from .lock import FileLock

KEEP_DAYS = 31


def _today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


class TokenBudget:
    def __init__(self, settings: Settings, *, run_limit: int | None = None, day_limit: int | None = None):
        self.path: Path = settings.state.usage
        self.run_limit = settings.token_budget_run if run_limit is None else run_limit
        self.day_limit = settings.token_budget_day if day_limit is None else day_limit
        self.run_used = 0
        self.reserved = 0
        self.calls = 0
        self._mu = threading.Lock()

    def day_used(self) -> int:
        return int(self._load().get("days", {}).get(_today(), {}).get("tokens", 0))

    def reserve(self, estimate: int) -> int:
        """Claim ``estimate`` tokens for one call, or raise :class:`BudgetExceeded` naming the setting."""
        with self._mu:
            run_after = self.run_used + self.reserved + estimate
            if run_after > self.run_limit:
                raise BudgetExceeded(
                    f"token budget for this run would be exceeded ({self.run_used + self.reserved} used or "
                    f"in flight + ~{estimate} for the next call > {self.run_limit}); nothing more was sent. "
                    "The batch stays pending; raise DISTILL_TOKEN_BUDGET_RUN (token_budget_run) or "
                    "lower DISTILL_CHUNK_TOKENS and run again"
                )
            day_after = self.day_used() + self.reserved + estimate
            if day_after > self.day_limit:
                raise BudgetExceeded(
                    f"daily token budget would be exceeded ({self.day_used()} used today (UTC) + "
                    f"~{estimate} > {self.day_limit}); nothing more was sent. The batch stays pending and "
                    "is retried tomorrow, or raise DISTILL_TOKEN_BUDGET_DAY (token_budget_day)"
                )
            self.reserved += estimate
            return estimate

    def settle(self, reservation: int, used: int, *, provider: str, model: str | None) -> None:
        """Replace a reservation by what the provider reported and record it for the day."""
        with self._mu:
            self.reserved -= reservation
            self.run_used += used
            self.calls += 1
            self._record(used, provider, model)

    def release(self, reservation: int) -> None:
        with self._mu:
            self.reserved -= reservation

    def _load(self) -> dict:
        try:
            return orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}

    def _record(self, used: int, provider: str, model: str | None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.with_name(".usage.lock"), purpose="token usage"):
            data = self._load()
            days = data.setdefault("days", {})
            day = days.setdefault(_today(), {"tokens": 0, "calls": 0, "by_model": {}})
            day["tokens"] = int(day.get("tokens", 0)) + used
            day["calls"] = int(day.get("calls", 0)) + 1
            key = f"{provider}:{model or 'default'}"
            day.setdefault("by_model", {})[key] = int(day["by_model"].get(key, 0)) + used
            for old in sorted(days)[:-KEEP_DAYS]:
                del days[old]
            data["updatedAtMs"] = int(time.time() * 1000)
            write_json(self.path, data)
