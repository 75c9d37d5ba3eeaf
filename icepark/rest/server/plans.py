"""The server's scan plans, kept in memory until they expire (:class:`PlanStore`).

A plan is the list of file scan tasks the planner produced for one ``planTableScan``, cut
into pages of ``page_size`` tasks; a page's plan task (the opaque string a client sends to
``POST .../tasks``) is ``"<plan-id>:<page>"``. Plans belong to one table and are forgotten
``ttl_seconds`` after they were made, or when cancelled; the process's plans are lost on
restart (a client then gets 404 and plans again).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icepark.errors import NoSuchPlanError
from icepark.planning.planner import FileScanTask
from icepark.spec.types import StructType

__all__ = ["Plan", "PlanStore"]


@dataclass(frozen=True)
class Plan:
    plan_id: str
    table: tuple[str, ...]
    pages: tuple[tuple[FileScanTask, ...], ...]
    expires_at: float
    partition_types: Mapping[int, StructType]  # the table's, as planned (to write the pages)

    def plan_tasks(self) -> list[str]:
        return [f"{self.plan_id}:{i}" for i in range(len(self.pages))]


class PlanStore:
    """Plans by id, thread-safe; expired ones are dropped whenever the store is used."""

    def __init__(self, page_size: int = 1000, ttl_seconds: float = 600.0) -> None:
        if page_size < 1 or ttl_seconds <= 0:
            raise ValueError(f"Invalid plan page size {page_size} or ttl {ttl_seconds}")
        self.page_size = page_size
        self.ttl_seconds = ttl_seconds
        self._plans: dict[str, Plan] = {}
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        for plan_id in [p for p, plan in self._plans.items() if plan.expires_at <= now]:
            del self._plans[plan_id]

    def add(
        self,
        table: tuple[str, ...],
        tasks: Sequence[FileScanTask],
        partition_types: Mapping[int, StructType],
    ) -> Plan:
        size = self.page_size
        pages = tuple(tuple(tasks[i : i + size]) for i in range(0, len(tasks), size))
        now = time.monotonic()
        plan = Plan(uuid.uuid4().hex, table, pages, now + self.ttl_seconds, partition_types)
        with self._lock:
            self._expire(now)
            self._plans[plan.plan_id] = plan
        return plan

    def get(self, table: tuple[str, ...], plan_id: str) -> Plan:
        with self._lock:
            self._expire(time.monotonic())
            plan = self._plans.get(plan_id)
        if plan is None or plan.table != table:
            raise NoSuchPlanError(
                f"No scan plan {plan_id!r} for table {'.'.join(table)} (expired or cancelled?)"
            )
        return plan

    def cancel(self, table: tuple[str, ...], plan_id: str) -> None:
        self.get(table, plan_id)
        with self._lock:
            self._plans.pop(plan_id, None)

    def page(self, table: tuple[str, ...], plan_task: str) -> tuple[FileScanTask, ...]:
        plan_id, _, number = plan_task.rpartition(":")
        plan = self.get(table, plan_id) if plan_id else None
        if plan is None or not number.isdigit() or int(number) >= len(plan.pages):
            raise NoSuchPlanError(f"No plan task {plan_task!r} for table {'.'.join(table)}")
        return plan.pages[int(number)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._plans)
