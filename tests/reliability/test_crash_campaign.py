"""The crash campaign: every operation that writes or deletes, killed (SIGKILL) at each named
step and at random instants, on each catalog; after each kill the table loads, holds exactly
the rows before or after the operation, misses no referenced file, and its leftovers are
orphan candidates that orphan removal deletes, and nothing else (see :mod:`crash`).

``ICEPARK_CRASH_TRIALS=N`` runs N random-instant trials per operation and catalog (2 by
default, to keep ``make test`` short)."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.crash import (
    OPS,
    STEPS,
    CatalogSpec,
    judge,
    make_table,
    rerun,
    run_child,
    state_of,
)

TRIALS = int(os.environ.get("ICEPARK_CRASH_TRIALS", "2"))
_names = itertools.count()


def _sqlite(tmp_path: Path) -> CatalogSpec:
    return CatalogSpec("sqlite", str(tmp_path / "wh"), f"sqlite:///{tmp_path}/catalog.db")


def _filesystem(tmp_path: Path) -> CatalogSpec:
    return CatalogSpec("filesystem", str(tmp_path / "wh"))


def _trial(
    spec: CatalogSpec,
    op_name: str,
    step: str | None,
    delay: float | None,
    refspark: Any = None,
) -> tuple[str, float]:
    """One trial; returns how it ended (killed or finished / before or after) and how long
    the child ran."""
    op = OPS[op_name]
    name = f"t{next(_names)}"
    make_table(spec, name, op)
    before = state_of(spec, name)
    when = step or (f"{delay:.3f} s" if delay is not None else "no kill")
    context = f"{op_name} on {spec.kind}, killed at {when}"
    outcome = run_child(spec, name, op, step=step, kill_after=delay)
    landed = judge(spec, name, op, before, context)
    if refspark is not None:  # the reference engine reads what the crash left
        table = spec.open().load_table(f"db.{name}")
        java = refspark.rows("SELECT * FROM crashed", views={"crashed": table.metadata_location})
        assert sorted(tuple(r[:3]) for r in java) == state_of(spec, name), context
    rerun(spec, name, op, landed, context, before)
    ended = "killed" if outcome.killed else "finished"
    _record(op_name, spec.kind, step or ("random" if delay is not None else "none"), ended, landed)
    return f"{ended}/{landed}", outcome.seconds


def _record(op_name: str, kind: str, step: str, ended: str, landed: str) -> None:
    """One consistent trial, for bench/crash_campaign.py (ICEPARK_RELIABILITY_LOG)."""
    log = os.environ.get("ICEPARK_RELIABILITY_LOG")
    if log:
        line = {"op": op_name, "catalog": kind, "step": step, "ended": ended, "landed": landed}
        with open(log, "a") as out:
            out.write(json.dumps(line) + "\n")


_NAMED = [(op, step) for op in OPS for step in OPS[op].steps]


@pytest.mark.parametrize(("op_name", "step"), _NAMED)
def test_killed_at_a_named_step(tmp_path: Path, op_name: str, step: str) -> None:
    _trial(_sqlite(tmp_path), op_name, step, None)


@pytest.mark.parametrize("op_name", list(OPS))
@pytest.mark.parametrize("kind", ["sqlite", "filesystem"])
def test_killed_at_random_instants(tmp_path: Path, op_name: str, kind: str, refspark: Any) -> None:
    spec = _sqlite(tmp_path) if kind == "sqlite" else _filesystem(tmp_path)
    # how long the child takes when nothing stops it: the kills fall inside that
    full, seconds = _trial(spec, op_name, None, None)
    assert full.startswith("finished"), full
    rng = random.Random(f"{op_name}-{kind}")
    for _ in range(TRIALS):
        _trial(spec, op_name, None, rng.uniform(0.0, seconds), refspark)


# Spark children start a JVM each: make test kills two of them at the step that matters most
# (the sink's commit landed, its checkpoint not written; a merge's manifest list written),
# ICEPARK_CRASH_TRIALS above 2 every Spark operation at every step
_SPARK_OPS = (
    "spark-delete-copy-on-write",
    "spark-merge-merge-on-read",
    "spark-rewrite-data-files",
    "spark-rewrite-position-deletes",
    "spark-stream-sink",
)
_SPARK = (
    [(op, step) for op in _SPARK_OPS for step in STEPS]
    if TRIALS > 2
    else [("spark-stream-sink", "catalog-swap"), ("spark-merge-merge-on-read", "manifest-list")]
)


@pytest.mark.parametrize(("op_name", "step"), _SPARK)
def test_spark_operation_killed(tmp_path: Path, op_name: str, step: str) -> None:
    pytest.importorskip("pyspark")
    import tests.reliability.spark_ops  # noqa: F401  (registers the Spark operations)

    _trial(_sqlite(tmp_path), op_name, step, None)


@pytest.mark.postgres
@pytest.mark.parametrize("op_name", ["append", "delete-merge-on-read", "expire-snapshots"])
def test_killed_on_postgres(tmp_path: Path, postgres_url: str, op_name: str) -> None:
    spec = CatalogSpec("postgres", str(tmp_path / "wh"), postgres_url)
    for step in ("manifest-list", "catalog-swap"):
        if step in OPS[op_name].steps:
            _trial(spec, op_name, step, None)
