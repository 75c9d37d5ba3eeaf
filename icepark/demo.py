"""The main job on the embedded default catalog (``make demo``).

Creates (or reopens) the SQLite catalog in ./warehouse, a namespace and a partitioned,
sorted events table, and shows what Iceberg recorded for it. Re-running it is harmless.
"""

from __future__ import annotations

import time

import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from icepark.catalog import Catalog, load_catalog
from icepark.table import Table

__all__ = ["main", "EVENTS_SCHEMA"]

EVENTS_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("user_id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("attrs", pa.map_(pa.string(), pa.string())),
    ]
)
PARTITION_BY = ["day(ts)", "bucket(16, user_id)"]
SORT_BY = ["user_id", "ts desc nulls last"]


def _events_table(catalog: Catalog, console: Console) -> Table:
    catalog.create_namespace_if_not_exists("demo", {"owner": "icepark demo"})
    if catalog.table_exists("demo.events"):
        console.print("[dim]demo.events exists already: reopening it[/dim]")
        return catalog.load_table("demo.events")
    table = catalog.create_table(
        "demo.events",
        EVENTS_SCHEMA,
        partition_by=PARTITION_BY,
        sort_by=SORT_BY,
        properties={"write.parquet.compression-codec": "zstd"},
    )
    console.print(f"created [bold]demo.events[/bold] at {table.location}")
    return table


def _show(table: Table, console: Console) -> None:
    schema = RichTable(title=f"{table.name}: schema (format v{table.format_version})")
    for col in ("id", "name", "type", "required"):
        schema.add_column(col)
    for f in table.schema().fields:
        schema.add_row(str(f.field_id), f.name, str(f.field_type), "yes" if f.required else "no")
    console.print(schema)
    spec = RichTable(title="partitioning")
    for col in ("field id", "name", "transform", "source"):
        spec.add_column(col)
    for pf in table.spec().fields:
        source = table.schema().find_column_name(pf.source_id) or str(pf.source_id)
        spec.add_row(str(pf.field_id), pf.name, str(pf.transform), source)
    console.print(spec)
    console.print(f"sort order {table.sort_order().order_id}: {table.sort_order()}")
    example = table.spec().partition_to_path([19727, 3], table.schema())
    console.print(f"a partition folder: [bold]{example}[/bold]")
    console.print(f"metadata file: {table.metadata_location}")
    snapshot = table.current_snapshot()
    console.print(f"current snapshot: {snapshot.snapshot_id if snapshot else 'none yet'}")


def main() -> None:
    console = Console()
    started = time.perf_counter()
    catalog = load_catalog()
    console.print(f"catalog [bold]{catalog.name}[/bold]: {catalog.properties.get('uri')}")
    table = _events_table(catalog, console)
    _show(table, console)
    console.print(f"[green]done in {time.perf_counter() - started:.2f} s[/green]")


if __name__ == "__main__":
    main()
