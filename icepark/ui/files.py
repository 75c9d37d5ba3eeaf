"""The files page's data, from the metadata tables (:mod:`icepark.table.inspect`, read column
by column from the manifests; storage is never listed):

* the data file size histogram (``data_files``), on log-2 bins so small and large files both
  show, with ``write.target-file-size-bytes`` marked and the share of files under 75% of it
  (the doctor's "small" threshold, :func:`~icepark.table.maintenance.doctor.small_file_limit`);
* files, bytes and rows per partition, and how skewed they are (``partitions``);
* delete files per partition and the rows they hide (``partitions``: position deletes and
  deletion vectors by records deleted, equality deletes by rows in the delete files);
* manifests per snapshot, with their bytes (``all_manifests``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from markupsafe import Markup

from icepark.spec import properties as P
from icepark.table.maintenance.doctor import small_file_limit
from icepark.table.table import Table
from icepark.table.units import human_bytes
from icepark.ui.history import when
from icepark.ui.svg import Bar, bar_chart, histogram

__all__ = ["FilesPage", "PartitionRow", "files_page", "partition_label"]

MAX_PARTITION_BARS = 40
MAX_SNAPSHOT_BARS = 40


@dataclass(frozen=True)
class PartitionRow:
    """One partition of the ``partitions`` metadata table."""

    label: str
    spec_id: int
    files: int
    bytes: int
    records: int
    position_delete_files: int
    position_delete_records: int
    equality_delete_files: int
    equality_delete_records: int


@dataclass
class FilesPage:
    """Everything the files page shows."""

    data_files: int
    data_bytes: int
    target_bytes: int
    small_files: int
    size_chart: Markup
    partitions: list[PartitionRow]
    partition_files_chart: Markup
    partition_bytes_chart: Markup
    skew: dict[str, Any]
    delete_partitions: list[PartitionRow]
    delete_chart: Markup
    manifests_chart: Markup
    manifests: list[tuple[int, str, int, int, int]] = field(default_factory=list)


def partition_label(value: dict[str, Any] | None) -> str:
    """``{"day": 3, "bucket": None}`` -> ``"day=3"`` (fields of other specs are null)."""
    if not value:
        return "(unpartitioned)"
    shown = [f"{k}={v}" for k, v in value.items() if v is not None]
    return ", ".join(shown) or "(all null)"


def _size_histogram(sizes: pa.Array, target: int) -> tuple[Markup, int]:
    values = sizes.to_numpy(zero_copy_only=False).astype(np.float64)
    small = int((values < small_file_limit(target)).sum())
    if len(values) == 0:
        return histogram([], [0.0], label="data file sizes", edge_text=[""]), 0
    low = math.floor(math.log2(max(1.0, min(values.min(), target))))
    high = math.ceil(math.log2(max(values.max(), target) + 1))
    step = max(1, math.ceil((high - low) / 24))
    exponents = list(range(low, high + step, step))
    edges = [float(2**e) for e in exponents]
    edges[0] = 0.0
    counts, _ = np.histogram(values, bins=edges)
    chart = histogram(
        [int(c) for c in counts],
        edges,
        label="data file sizes",
        edge_text=[human_bytes(e) for e in edges],
        marker=float(target),
        marker_text=f"target {human_bytes(target)}",
    )
    return chart, small


def _partition_rows(parts: pa.Table) -> list[PartitionRow]:
    labels = (
        [partition_label(v) for v in parts.column("partition").to_pylist()]
        if "partition" in parts.column_names
        else ["(unpartitioned)"] * parts.num_rows
    )
    cols = {  # an unpartitioned table's partitions table has no partition or spec_id column
        name: parts.column(name).to_pylist() if name in parts.column_names else [0] * parts.num_rows
        for name in (
            "spec_id",
            "file_count",
            "total_data_file_size_in_bytes",
            "record_count",
            "position_delete_file_count",
            "position_delete_record_count",
            "equality_delete_file_count",
            "equality_delete_record_count",
        )
    }
    return [
        PartitionRow(
            labels[i],
            cols["spec_id"][i],
            cols["file_count"][i],
            cols["total_data_file_size_in_bytes"][i],
            cols["record_count"][i],
            cols["position_delete_file_count"][i],
            cols["position_delete_record_count"][i],
            cols["equality_delete_file_count"][i],
            cols["equality_delete_record_count"][i],
        )
        for i in range(parts.num_rows)
    ]


def _skew(rows: list[PartitionRow]) -> dict[str, Any]:
    if not rows:
        return {"partitions": 0}
    files = sorted(r.files for r in rows)
    sizes = sorted(r.bytes for r in rows)
    median_files = files[len(files) // 2] or 1
    median_bytes = sizes[len(sizes) // 2] or 1
    return {
        "partitions": len(rows),
        "max_files": files[-1],
        "median_files": files[len(files) // 2],
        "files_ratio": round(files[-1] / median_files, 1),
        "max_bytes": sizes[-1],
        "median_bytes": sizes[len(sizes) // 2],
        "bytes_ratio": round(sizes[-1] / median_bytes, 1),
    }


def _manifests(table: Table) -> tuple[Markup, list[tuple[int, str, int, int, int]]]:
    every = table.inspect.all_manifests()
    if every.num_rows == 0:
        return bar_chart([], label="manifests per snapshot"), []
    is_delete = pc.not_equal(every.column("content"), 0)
    grouped = (
        every.append_column("is_delete", pc.cast(is_delete, pa.int64()))
        .group_by("reference_snapshot_id")
        .aggregate([("path", "count"), ("length", "sum"), ("is_delete", "sum")])
    )
    snaps = {s.snapshot_id: s for s in table.metadata.snapshots}
    found = []
    for row in grouped.to_pylist():
        sid = row["reference_snapshot_id"]
        snap = snaps.get(sid)
        found.append(
            (
                sid,
                when(snap.timestamp_ms) if snap else "",
                row["path_count"],
                row["is_delete_sum"],
                row["length_sum"],
                snap.timestamp_ms if snap else 0,
            )
        )
    found.sort(key=lambda r: r[5], reverse=True)
    rows = [r[:5] for r in found]
    bars = [
        Bar(
            f"{sid} ({committed[:16]})",
            count,
            f"{count:,} ({deletes} delete), {human_bytes(length)}",
        )
        for sid, committed, count, deletes, length in rows[:MAX_SNAPSHOT_BARS]
    ]
    return bar_chart(bars, label="manifests per snapshot", label_width=300), rows


def files_page(table: Table) -> FilesPage:
    """The files page of ``table`` at its current snapshot."""
    target = P.WRITE_TARGET_FILE_SIZE_BYTES.get(table.metadata.properties)
    data = table.inspect.data_files().select(["file_size_in_bytes"])
    sizes = data.column("file_size_in_bytes").combine_chunks()
    chart, small = _size_histogram(sizes, target)
    rows = _partition_rows(table.inspect.partitions())
    by_files = sorted(rows, key=lambda r: r.files, reverse=True)
    by_bytes = sorted(rows, key=lambda r: r.bytes, reverse=True)
    deletes = sorted(
        (r for r in rows if r.position_delete_files or r.equality_delete_files),
        key=lambda r: r.position_delete_records + r.equality_delete_records,
        reverse=True,
    )
    manifests_chart, manifests = _manifests(table)
    return FilesPage(
        data_files=len(sizes),
        data_bytes=int(pc.sum(sizes).as_py() or 0),
        target_bytes=target,
        small_files=small,
        size_chart=chart,
        partitions=by_files,
        partition_files_chart=bar_chart(
            [Bar(r.label, r.files, f"{r.files:,} files") for r in by_files[:MAX_PARTITION_BARS]],
            label="data files per partition",
        ),
        partition_bytes_chart=bar_chart(
            [Bar(r.label, r.bytes, human_bytes(r.bytes)) for r in by_bytes[:MAX_PARTITION_BARS]],
            label="bytes per partition",
            color="#3f9e6e",
        ),
        skew=_skew(rows),
        delete_partitions=deletes,
        delete_chart=bar_chart(
            [
                Bar(
                    r.label,
                    r.position_delete_records + r.equality_delete_records,
                    f"{r.position_delete_files + r.equality_delete_files:,} files hide "
                    f"{r.position_delete_records:,} rows"
                    + (
                        f" (+{r.equality_delete_records:,} equality rows)"
                        if r.equality_delete_records
                        else ""
                    ),
                )
                for r in deletes[:MAX_PARTITION_BARS]
            ],
            label="delete files per partition",
            color="#d04a4a",
        ),
        manifests_chart=manifests_chart,
        manifests=manifests,
    )
