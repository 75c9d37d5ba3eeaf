"""The main job on the embedded default catalog (``make demo``), run on Spark.

Starts a local Spark session, creates (or starts over) the SQLite catalog in ./warehouse and
an events table partitioned by ``day(ts)`` and ``bucket(16, user_id)``, and then, through
:mod:`icepark.spark`: ingests a batch of synthetic events (Spark executors write the files,
the driver commits), queries with pruning (and says how many files it skipped), appends a
second batch, reads the earlier snapshot by time travel, adds a column and a partition field
and appends data that has them (old and new files read together), deletes, updates and
merges late events (merge-on-read: delete files, not rewrites), compacts the table (the
files rewritten with their deletes applied; files and full-scan time before and after), and
prints the snapshot history with each snapshot's summary. It ends with upkeep: the partitions
(a metadata table), an expiry that keeps the last two snapshots, and the files and bytes it
freed, then a streaming job; last, the ``icepark ui`` command that shows its tables in the
web page. Re-running it starts the table over.

``python -m icepark.spark.demo [ROWS]`` (2,000,000 by default). The catalog is
``load_catalog()``'s, so the whole pipeline runs wherever the configuration puts the
warehouse: ``ICEPARK_WAREHOUSE=s3://bucket/wh make demo`` with the ``s3.*`` settings in
``~/.icepark.yaml`` runs it on object storage (Spark reaches S3 through icepark's Python tasks
unless the session has hadoop-aws), ``ICEPARK_SPARK_MASTER=spark://host:7077`` on a cluster.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from icepark.catalog import Catalog, load_catalog
from icepark.spec import properties as P
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DecimalType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from icepark.table import Table

__all__ = ["main", "EVENTS_SCHEMA", "events"]

EVENTS_SCHEMA = Schema(
    NestedField(1, "event_id", LongType(), required=True),
    NestedField(2, "user_id", LongType(), required=True),
    NestedField(3, "ts", TimestamptzType(), required=True),
    NestedField(4, "kind", StringType()),
    NestedField(5, "amount", DecimalType(12, 2)),
)
PARTITION_BY = ["day(ts)", "bucket(16, user_id)"]
SORT_BY = ["user_id", "ts"]
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PROPERTIES = {
    P.WRITE_TARGET_FILE_SIZE_BYTES.name: str(64 * 1024 * 1024),
    P.DELETE_MODE.name: P.MERGE_ON_READ,
    P.UPDATE_MODE.name: P.COPY_ON_WRITE,
    P.MERGE_MODE.name: P.MERGE_ON_READ,
}


def events(spark: Any, first_id: int, rows: int, days: int) -> Any:
    """A DataFrame of synthetic events in arrival order (time grows with the id), computed
    by Spark on the executors."""
    from pyspark.sql import functions as F

    start_us = int(START.timestamp() * 1_000_000)
    step_us = days * 86_400_000_000 / max(rows, 1)
    mixed = F.col("id") * 2_654_435_761
    kinds = F.array(*[F.lit(k) for k in ("view", "click", "cart", "buy")])
    return spark.range(first_id, first_id + rows).select(
        F.col("id").alias("event_id"),
        mixed.bitwiseAND(0xFFFF).alias("user_id"),
        F.timestamp_micros(
            F.floor(F.lit(start_us) + (F.col("id") - first_id) * step_us).cast("long")
        ).alias("ts"),
        F.element_at(kinds, (F.col("id").bitwiseAND(3) + 1).cast("int")).alias("kind"),
        (mixed.bitwiseAND(0x3FFF) / 100).cast("decimal(12,2)").alias("amount"),
    )


def _fresh_table(catalog: Catalog, console: Console) -> Table:
    catalog.create_namespace_if_not_exists("demo", {"comment": "icepark demo"})
    if catalog.table_exists("demo.events"):
        catalog.drop_table("demo.events", purge=True)
        console.print("[dim]dropped the previous demo.events[/dim]")
    table = catalog.create_table(
        "demo.events",
        EVENTS_SCHEMA,
        partition_by=PARTITION_BY,
        sort_by=SORT_BY,
        properties=PROPERTIES,
    )
    console.print(f"created [bold]demo.events[/bold] at {table.location}")
    console.print(f"  partitioned by {', '.join(PARTITION_BY)}; sorted by {', '.join(SORT_BY)}")
    return table


class _Timer:
    def __init__(self, console: Console, label: str) -> None:
        self.console, self.label = console, label

    def __enter__(self) -> _Timer:
        self.started = time.perf_counter()
        self.status = self.console.status(self.label + " ...")
        self.status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.status.__exit__(None, None, None)
        self.console.print(f"  {self.label}: {time.perf_counter() - self.started:.2f} s")


def _summary(table: Table, console: Console) -> None:
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    keys = (
        "added-data-files",
        "deleted-data-files",
        "added-delete-files",
        "added-records",
        "deleted-records",
        "added-position-deletes",
        "total-records",
    )
    shown = ", ".join(f"{k}={snap.summary[k]}" for k in keys if k in snap.summary)
    console.print(f"  snapshot {snap.snapshot_id} ({snap.summary['operation']}): {shown}")


def _day(n: int) -> str:
    """Midnight UTC of day ``n`` of the events (day 0 is 2024-01-01), as a filter literal."""
    return f"'{(START + dt.timedelta(days=n)).isoformat()}'"


def _ingest(spark: Any, table: Table, console: Console, first: int, rows: int, days: int) -> None:
    from icepark.spark import write

    with _Timer(console, f"ingested {rows:,} events over {days} days with Spark"):
        write(events(spark, first, rows, days=days), table)
    _summary(table, console)


def _query(spark: Any, table: Table, console: Console, days: int) -> None:
    from pyspark.sql import functions as F

    from icepark.spark import read

    first = min(2, days - 1)
    where = f"ts >= {_day(first)} and ts < {_day(first + 2)} and user_id = 4242"
    with _Timer(console, f"query [italic]{where}[/italic]"):
        df = read(spark, table, filter=where, columns=["user_id", "kind", "amount"])
        row = df.agg(F.count("*"), F.sum("amount")).collect()[0]
    scanned = len(table.scan(filter=where).plan_files())
    total = len(table.scan().plan_files())
    console.print(
        f"  read {scanned} of {total} data files ({total - scanned} skipped by partition "
        f"and column metrics); {row[0]} rows, total amount {row[1]}"
    )


def _evolve(spark: Any, table: Table, console: Console, first: int, rows: int, days: int) -> None:
    """Add a column and a partition field mid-pipeline; old and new data read together."""
    from pyspark.sql import functions as F

    from icepark.spark import read, write

    with _Timer(console, "added column 'channel' and partition field 'kind' (no rewrite)"):
        with table.update_schema() as schema:
            schema.add_column("channel", "string", doc="where the event came from")
        with table.update_spec() as spec:
            spec.add_field("kind")
    channel = F.element_at(
        F.array(F.lit("web"), F.lit("app")), (F.col("event_id") % 2 + 1).cast("int")
    )
    with _Timer(console, f"appended {rows:,} events with a channel"):
        write(events(spark, first, rows, days=days).withColumn("channel", channel), table)
    console.print(f"  specs now: {', '.join(str(s) for s in table.specs().values())}")
    one = min(9, days - 1)
    day = f"ts >= {_day(one)} and ts < {_day(one + 1)}"
    counts = read(spark, table, filter=day, columns=["channel"]).groupBy("channel").count()
    described = ", ".join(
        f"{r['channel'] or 'null (older files)'}: {r['count']:,}"
        for r in sorted(counts.collect(), key=lambda r: str(r["channel"]))
    )
    console.print(f"  one day across old and new files by channel: {described}")


def _row_level(
    spark: Any, table: Table, console: Console, first: int, late_rows: int, days: int
) -> None:
    """Delete, update and merge late events."""
    from pyspark.sql import functions as F

    from icepark.spark import delete, merge, read, update

    where = f"kind = 'view' and ts < {_day(1)}"
    with _Timer(console, f"delete [italic]{where}[/italic] (merge-on-read)"):
        delete(spark, table, where)
    _summary(table, console)
    with _Timer(console, "update amount = amount * 2 where user_id = 4242 (copy-on-write)"):
        update(spark, table, set={"amount": "amount * 2"}, where="user_id = 4242")
    _summary(table, console)
    late = (
        events(spark, first - late_rows // 2, late_rows, days=days)
        .withColumn("kind", F.lit("late"))
        .withColumn("channel", F.lit("api"))
    )
    half = late_rows // 2
    label = f"merge {late_rows:,} late events: {half:,} corrections, {half:,} new (merge-on-read)"
    with _Timer(console, label):
        merge(
            spark,
            table,
            late,
            on="event_id",
            when_matched_update={"kind": "s.kind", "amount": "s.amount"},
            when_not_matched_insert="*",
        )
    _summary(table, console)
    n = read(spark, table, filter="kind = 'late'").count()
    console.print(f"  {n:,} rows are now 'late'")


def _files(table: Table) -> tuple[int, int]:
    tasks = table.scan().plan_files()
    return len(tasks), len({(d.file_path, d.content_offset) for t in tasks for d in t.delete_files})


def _compact(spark: Any, table: Table, console: Console) -> None:
    """Compact after the merge-on-read changes: files and full-scan time before and after."""
    from pyspark.sql import functions as F

    from icepark.spark import read, rewrite_data_files

    def scan() -> float:
        started = time.perf_counter()
        read(spark, table).agg(F.count("*"), F.sum("amount")).collect()
        return time.perf_counter() - started

    scan()  # warm up
    data, deletes = _files(table)
    before = scan()
    options = {"min-input-files": "2", "delete-file-threshold": "1"}
    with _Timer(console, f"compact (rewrite_data_files, bin-pack, {options})"):
        result = rewrite_data_files(spark, table, options=options)
    table.refresh()
    after_data, after_deletes = _files(table)
    after = scan()
    console.print(
        f"  {result.rewritten_data_files_count:,} files rewritten into "
        f"{result.added_data_files_count:,}; {result.removed_delete_files_count:,} delete files "
        f"removed"
    )
    console.print(
        f"  data files {data:,} -> {after_data:,}, delete files {deletes:,} -> {after_deletes:,};"
        f" full scan {before:.2f} s -> {after:.2f} s"
    )


def _history(table: Table, console: Console) -> None:
    out = RichTable(title="snapshot history")
    columns = {
        "operation": "operation",
        "added-data-files": "+data files",
        "deleted-data-files": "-data files",
        "added-delete-files": "+delete files",
        "added-records": "+records",
        "deleted-records": "-records",
        "total-records": "records",
    }
    out.add_column("snapshot id")
    out.add_column("at (UTC)")
    for title in columns.values():
        out.add_column(title, justify="right")
    for snap in table.snapshots():
        summary: Mapping[str, str] = snap.summary or {}
        when = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, dt.UTC).strftime("%H:%M:%S")
        out.add_row(str(snap.snapshot_id), when, *[summary.get(key, "") for key in columns])
    console.print(out)


def _partitions(table: Table, console: Console, limit: int = 8) -> None:
    """The ``partitions`` metadata table (``table.inspect.partitions()``: rows, files and
    delete files per partition)."""
    rows = table.inspect.partitions()
    out = RichTable(title=f"partitions ({rows.num_rows}, first {min(limit, rows.num_rows)})")
    for name in rows.column_names:
        out.add_column(name)
    for row in rows.slice(0, limit).to_pylist():
        out.add_row(*(str(row[name]) for name in rows.column_names))
    console.print(out)


def _upkeep(table: Table, console: Console) -> None:
    """Expire every snapshot but the last two and delete the files only they reached."""
    _partitions(table, console)
    before = len(table.snapshots())
    with _Timer(console, "expired old snapshots, keeping the last two"):
        result = table.expire_snapshots(older_than=int(time.time() * 1000), retain_last=2)
    counts = ", ".join(
        f"{n} {name.removeprefix('deleted_').removesuffix('_count').replace('_', ' ')}"
        for name, n in result.counts().items()
        if n
    )
    console.print(
        f"  {before} snapshots -> {len(table.snapshots())}; deleted {counts or 'nothing'}"
    )
    console.print(
        f"  freed {len(result.deleted_files):,} files, "
        f"{result.deleted_bytes / 1024 / 1024:,.1f} MiB"
        + (f"; {len(result.failed)} could not be deleted" if result.failed else "")
    )


STREAM_SCHEMA = Schema(
    NestedField(1, "event_id", LongType(), required=True),
    NestedField(2, "ts", TimestamptzType(), required=True),
    NestedField(3, "kind", StringType()),
)


def _when_idle(query: Any, timeout: float = 60.0) -> None:
    """Wait until no micro-batch is running: stopping a query in the middle of one is safe
    (:class:`~icepark.spark.streaming.sink.BatchInterruptedError`), but Spark logs the write
    job it aborts, which would clutter the demo's output."""
    deadline = time.monotonic() + timeout
    while query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)


def _streaming(spark: Any, catalog: Catalog, console: Console, batches: int = 4) -> None:
    """Stream events into a table through the sink while another query follows it."""
    import tempfile

    from pyspark.sql import functions as F

    from icepark.spark import read_stream, write_stream
    from icepark.spark.streaming.sink import EPOCH_ID_PROPERTY

    if catalog.table_exists("demo.stream_events"):
        catalog.drop_table("demo.stream_events", purge=True)
    table = catalog.create_table("demo.stream_events", STREAM_SCHEMA, partition_by=["hour(ts)"])
    console.print("[bold]streaming[/bold]: rate source -> demo.stream_events -> counts per minute")
    checkpoints = tempfile.mkdtemp(prefix="icepark-demo-")
    kinds = F.array(*[F.lit(k) for k in ("view", "click", "cart", "buy")])
    rate = spark.readStream.format("rate").option("rowsPerSecond", 500).load()
    events = rate.select(
        F.col("value").alias("event_id"),
        F.col("timestamp").alias("ts"),
        F.element_at(kinds, (F.col("value") % 4 + 1).cast("int")).alias("kind"),
    )
    sink = write_stream(
        events,
        table,
        checkpoint_location=f"{checkpoints}/sink",
        trigger={"processingTime": "2 seconds"},
    )
    per_minute = (
        read_stream(spark, table).groupBy(F.window("ts", "1 minute").start.alias("minute")).count()
    )
    follower = (
        per_minute.writeStream.format("memory")
        .queryName("demo_per_minute")
        .outputMode("complete")
        .option("checkpointLocation", f"{checkpoints}/follow")
        .trigger(processingTime="1 second")
        .start()
    )

    def show_counts() -> int:
        rows = spark.sql("SELECT minute, `count` FROM demo_per_minute ORDER BY minute").collect()
        shown = ", ".join(f"{r['minute']:%H:%M}: {r['count']:,}" for r in rows)
        console.print(f"  follower: counts per minute {shown or '(none yet)'}")
        return sum(r["count"] for r in rows)

    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 300
        while len(seen) < batches and time.monotonic() < deadline:
            time.sleep(1)
            for snap in table.refresh().snapshots():
                if snap.snapshot_id in seen or snap.summary is None:
                    continue
                seen.add(snap.snapshot_id)
                console.print(
                    f"  sink: epoch {snap.summary.get(EPOCH_ID_PROPERTY)} committed snapshot "
                    f"{snap.snapshot_id} with {snap.summary.get('added-records', '0')} events"
                )
            show_counts()
        _when_idle(sink)
        sink.stop()
        follower.processAllAvailable()
        total = show_counts()
        stored = table.refresh().scan().count()
        console.print(
            f"  stopped: the table holds {stored:,} events, the follower counted {total:,}"
        )
    finally:
        for query in (sink, follower):
            _when_idle(query)
            query.stop()


def _session() -> Any:
    import os

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from icepark.spark.runtime import set_log_level

    remote = os.environ.get("ICEPARK_SPARK_REMOTE")  # sc://host:15002: a Connect server
    builder = (
        SparkSession.builder.remote(remote)
        if remote
        else SparkSession.builder.master(os.environ.get("ICEPARK_SPARK_MASTER", "local[2]"))
    )
    spark = (
        builder.appName("icepark-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    set_log_level(spark, "ERROR")
    return spark


def main(rows: int = 2_000_000, days: int = 30) -> None:
    console = Console(width=None if sys.stdout.isatty() else 132)
    started = time.perf_counter()
    with _Timer(console, "started Spark"):
        spark = _session()
    catalog = load_catalog()
    console.print(
        f"catalog [bold]{catalog.name}[/bold]: {catalog.properties.get('uri')}, "
        f"warehouse {catalog.properties.get('warehouse')}"
    )
    table = _fresh_table(catalog, console)
    _ingest(spark, table, console, 0, rows, days)
    first = table.current_snapshot()
    assert first is not None
    _query(spark, table, console, days)
    _ingest(spark, table, console, rows, rows // 4, days)
    from icepark.spark import read

    with _Timer(console, "count now and at the first snapshot (time travel)"):
        now = read(spark, table).count()
        before = read(spark, table, snapshot_id=first.snapshot_id).count()
    console.print(f"  {now:,} rows now; {before:,} rows as of snapshot {first.snapshot_id}")
    second = rows + rows // 4
    _evolve(spark, table, console, second, rows // 4, days)
    _row_level(spark, table, console, second + rows // 4, max(rows // 200, 1_000), days)
    _compact(spark, table, console)
    _history(table, console)
    _upkeep(table, console)

    _streaming(spark, catalog, console)
    console.print(f"[green]done in {time.perf_counter() - started:.1f} s[/green]")
    _ui_hint(catalog, console)


def _ui_hint(catalog: Catalog, console: Console) -> None:
    """How to look at the demo's tables in the web page (``icepark ui``, same catalog)."""
    from icepark.ui.urls import page_url

    names = [".".join(t) for t in catalog.list_tables("demo")]
    script = Path(sys.executable).with_name("icepark")  # the venv's, when it is not on PATH
    command = os.path.relpath(script) if script.exists() else "icepark"
    console.print("[bold]look at the tables[/bold] (the web page, from this folder):")
    console.print(f"  {command} ui demo.events", markup=False)
    for name in names:
        console.print(f"    {name}: {page_url(table=name)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
