"""The crash campaign's operations on Spark: row-level deletes and merges (copy-on-write and
merge-on-read), compaction, the rewrite of position deletes, and one streaming sink
micro-batch. Each child starts its own local Spark session (the driver is the process that
is killed; its JVM goes with it); data files come from Spark's writers, the commit from
icepark on the driver, so the named steps apply as for the one-machine operations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.reliability.crash import OPS, Op, _deleted, rows

_SESSION: Any = None


def _spark() -> Any:
    global _SESSION
    if _SESSION is None:
        from icepark.spark.session import session

        _SESSION = session(
            "local[1]",
            "icepark-crash",
            {
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.driver.memory": "768m",
            },
        )
    return _SESSION


def _spark_delete(table: Any) -> None:
    from icepark import spark as ispark

    ispark.delete(_spark(), table, f"id in {(3, 7, 21, 22, 38)} or kind = 'b'")


def _merge_source() -> pa.Table:
    """Ids 0-9 get v = -1; ids 9000-9009 are new."""
    old = rows(0, 10)
    old = old.set_column(2, "v", pa.array([-1.0] * 10))
    return pa.concat_tables([old, rows(9000, 10)])


def _spark_merge(table: Any) -> None:
    from icepark import spark as ispark

    spark = _spark()
    source = spark.createDataFrame(_merge_source().to_pandas())
    ispark.merge(
        spark,
        table,
        source,
        on="id",
        when_matched_update={"v": "s.v"},
        when_not_matched_insert="*",
    )


def _merged(before: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    changed = {r["id"]: (r["id"], r["kind"], r["v"]) for r in _merge_source().to_pylist()}
    out = {r[0]: r for r in before}
    out.update(changed)
    return sorted(out.values())


def _spark_compact(table: Any) -> None:
    from icepark import spark as ispark

    ispark.rewrite_data_files(_spark(), table, options={"min-input-files": "2"})


def _with_position_deletes(table: Any, _: Path) -> None:
    for i in range(3):
        table.delete(f"id = {i * 10 + 1}")


def _spark_rewrite_deletes(table: Any) -> None:
    from icepark import spark as ispark

    ispark.rewrite_position_delete_files(_spark(), table, options={"rewrite-all": "true"})


def _stream_input(table: Any) -> Path:
    return Path(table.location).parent / f"{Path(table.location).name}-stream"


def _stream_files(table: Any, _: Path) -> None:
    folder = _stream_input(table) / "in"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows(7000, 25), folder / "part-0.parquet")


def _spark_stream(table: Any) -> None:
    """One micro-batch of a file source into the table (Trigger.AvailableNow); the
    checkpoint sits beside the input, so a re-run resumes the same query."""
    from icepark import spark as ispark

    spark = _spark()
    folder = _stream_input(table)
    files = str(folder / "in")
    source = spark.readStream.schema(spark.read.parquet(files).schema).parquet(files)
    query = ispark.write_stream(
        source,
        table,
        checkpoint_location=str(folder / "checkpoint"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(300)


def _streamed(before: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    new = [(r["id"], r["kind"], r["v"]) for r in rows(7000, 25).to_pylist()]
    return sorted(before + new)


SPARK_OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op(
            "spark-delete-copy-on-write",
            _spark_delete,
            _deleted,
            {"write.delete.mode": "copy-on-write"},
            exact_rerun=True,
        ),
        Op(
            "spark-merge-merge-on-read",
            _spark_merge,
            _merged,
            {"write.merge.mode": "merge-on-read"},
            exact_rerun=True,
        ),
        Op("spark-rewrite-data-files", _spark_compact, exact_rerun=True),
        Op(
            "spark-rewrite-position-deletes",
            _spark_rewrite_deletes,
            properties={"write.delete.mode": "merge-on-read"},
            prepare=_with_position_deletes,
            exact_rerun=True,
        ),
        # exactly once: whatever instant the kill came at, the restarted query leaves the
        # batch in the table once
        Op("spark-stream-sink", _spark_stream, _streamed, prepare=_stream_files, exact_rerun=True),
    )
}
OPS.update(SPARK_OPS)
