"""The main job on the embedded default catalog (``make demo``).

Creates (or reopens) the SQLite catalog in ./warehouse and an events table partitioned by
``day(ts)`` and ``bucket(16, user_id)``, ingests a batch of synthetic events, queries with
pruning (and says how many files it skipped), appends a second batch, reads the earlier
snapshot by time travel, adds a column and a partition field and appends data that has them
(old and new files read together), and prints the snapshot history. Re-running it starts
the table over.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.table import Table as RichTable

from icepark.catalog import Catalog, load_catalog
from icepark.table import Table

__all__ = ["main", "EVENTS_SCHEMA", "events"]

EVENTS_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("user_id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("amount", pa.decimal128(12, 2)),
    ]
)
PARTITION_BY = ["day(ts)", "bucket(16, user_id)"]
SORT_BY = ["user_id", "ts"]
KINDS = pa.array(["view", "click", "cart", "buy"])
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def events(
    first_id: int, rows: int, days: int, batch_rows: int = 250_000
) -> Iterator[pa.RecordBatch]:
    """Synthetic events in arrival order (time grows with the id), streamed in batches;
    vectorised, with no Python loop per row."""
    start_us = int(START.timestamp() * 1_000_000)
    step_us = days * 86_400_000_000 / max(rows, 1)
    for offset in range(0, rows, batch_rows):
        n = min(batch_rows, rows - offset)
        ids = pa.array(range(first_id + offset, first_id + offset + n), pa.int64())
        mixed = pc.multiply(ids, 2_654_435_761)
        user = pc.bit_wise_and(mixed, 0xFFFF)
        ts_us = pc.add(start_us, pc.multiply(pc.subtract(ids, first_id), step_us))
        ts = pc.cast(pc.cast(pc.floor(ts_us), pa.int64()), pa.timestamp("us", tz="UTC"))
        kind = pc.take(KINDS, pc.bit_wise_and(ids, 3))
        cents = pc.cast(pc.bit_wise_and(mixed, 0x3FFF), pa.float64())
        amount = pc.cast(pc.round(pc.divide(cents, 100.0), 2), pa.decimal128(12, 2), safe=False)
        yield pa.record_batch([ids, user, ts, kind, amount], schema=EVENTS_SCHEMA)


def _fresh_table(catalog: Catalog, console: Console) -> Table:
    catalog.create_namespace_if_not_exists("demo", {"owner": "icepark demo"})
    if catalog.table_exists("demo.events"):
        catalog.drop_table("demo.events", purge=True)
        console.print("[dim]dropped the previous demo.events[/dim]")
    table = catalog.create_table(
        "demo.events",
        EVENTS_SCHEMA,
        partition_by=PARTITION_BY,
        sort_by=SORT_BY,
        properties={"write.target-file-size-bytes": str(64 * 1024 * 1024)},
    )
    console.print(f"created [bold]demo.events[/bold] at {table.location}")
    console.print(f"  partitioned by {', '.join(PARTITION_BY)}; sorted by {', '.join(SORT_BY)}")
    return table


def _timed(console: Console, label: str) -> _Timer:
    return _Timer(console, label)


class _Timer:
    def __init__(self, console: Console, label: str) -> None:
        self.console, self.label = console, label

    def __enter__(self) -> _Timer:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.console.print(f"  {self.label}: {time.perf_counter() - self.started:.2f} s")


def _ingest(table: Table, console: Console, first_id: int, rows: int, days: int) -> None:
    with console.status(f"writing {rows:,} events"), _timed(console, f"ingested {rows:,} events"):
        reader = pa.RecordBatchReader.from_batches(EVENTS_SCHEMA, events(first_id, rows, days))
        table.append(reader)
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    console.print(
        f"  snapshot {snap.snapshot_id}: {snap.summary.get('added-data-files')} files, "
        f"{snap.summary.get('added-records')} records"
    )


def _query(table: Table, console: Console) -> None:
    where = "ts >= '2024-01-03' and ts < '2024-01-05' and user_id = 4242"
    scan = table.scan(filter=where, columns=["user_id", "kind", "amount"])
    with _timed(console, f"query [italic]{where}[/italic]"):
        tasks = scan.plan_files()
        result = scan.to_arrow()
    total = len(table.scan().plan_files())
    console.print(
        f"  read {len(tasks)} of {total} data files ({total - len(tasks)} skipped by partition "
        f"and column metrics); {result.num_rows} rows, total amount "
        f"{pc.sum(result.column('amount')).as_py()}"
    )


def _evolve(table: Table, console: Console, first_id: int, rows: int) -> None:
    """Add a column and a partition field mid-pipeline; old and new data read together."""
    with _timed(console, "added column 'channel' and partition field 'kind' (no rewrite)"):
        with table.update_schema() as schema:
            schema.add_column("channel", "string", doc="where the event came from")
        with table.update_spec() as spec:
            spec.add_field("kind")
    channels = pa.array(["web", "app", "api"])
    evolved = pa.schema([*EVENTS_SCHEMA, pa.field("channel", pa.string())])

    def with_channel() -> Iterator[pa.RecordBatch]:
        for batch in events(first_id, rows, days=30):
            channel = pc.take(channels, pc.bit_wise_and(batch.column(0), 1))
            yield pa.record_batch([*batch.columns, channel], schema=evolved)

    table.append(pa.RecordBatchReader.from_batches(evolved, with_channel()))
    console.print(f"  specs now: {', '.join(str(s) for s in table.specs().values())}")
    mixed = table.scan(filter="ts >= '2024-01-10' and ts < '2024-01-11'", columns=["channel"])
    counts = pc.value_counts(mixed.to_arrow().column("channel").combine_chunks()).to_pylist()
    described = ", ".join(f"{c['values'] or 'null (older files)'}: {c['counts']:,}" for c in counts)
    console.print(f"  one day across old and new files by channel: {described}")


def _history(table: Table, console: Console) -> None:
    out = RichTable(title="snapshot history")
    for column in (
        "snapshot",
        "committed (UTC)",
        "operation",
        "added files",
        "added records",
        "total records",
    ):
        out.add_column(column)
    for snap in table.snapshots():
        summary: Mapping[str, str] = snap.summary or {}
        when = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, dt.UTC).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        out.add_row(
            str(snap.snapshot_id),
            when,
            str(summary.get("operation")),
            str(summary.get("added-data-files")),
            str(summary.get("added-records")),
            str(summary.get("total-records")),
        )
    console.print(out)


def main(rows: int = 2_000_000) -> None:
    console = Console()
    started = time.perf_counter()
    catalog = load_catalog()
    console.print(f"catalog [bold]{catalog.name}[/bold]: {catalog.properties.get('uri')}")
    table = _fresh_table(catalog, console)
    _ingest(table, console, 0, rows, days=30)
    first = table.current_snapshot()
    assert first is not None
    _query(table, console)
    _ingest(table, console, rows, rows // 4, days=30)
    with _timed(console, "count now and at the first snapshot (time travel)"):
        now = table.scan().count()
        before = table.scan(snapshot_id=first.snapshot_id).count()
    console.print(f"  {now:,} rows now; {before:,} rows as of snapshot {first.snapshot_id}")
    _evolve(table, console, rows + rows // 4, rows // 4)
    _history(table, console)
    console.print(f"[green]done in {time.perf_counter() - started:.1f} s[/green]")


if __name__ == "__main__":
    main()
