"""Judging what the scenarios of ``s3_scenarios.py`` did, the same way whichever Spark ran them:
the rows Spark read must equal a Python model of the operations, icepark's one-machine read
of the table, and PyIceberg's read of it; every file the table references must exist."""

from __future__ import annotations

import decimal
import uuid
from pathlib import Path
from typing import Any

from s3_scenarios import CATALOG_NAME
from services import create_bucket

from icepark.catalog import load_catalog

__all__ = [
    "catalog_props",
    "model_row",
    "model_rows",
    "expected_write_modes",
    "expected_row_level",
    "expected_source",
    "one_machine_rows",
    "pyiceberg_rows",
    "check_table",
    "check_upkeep",
    "missing_referenced_files",
]

_EPOCH_US = 1704067200000000
_STEP_US = 300_000_000
_DAY_US = 86_400_000_000


def catalog_props(tmp_path: Path, s3: dict[str, str]) -> dict[str, str]:
    """A SQLite catalog in ``tmp_path`` whose warehouse is a fresh bucket on the S3 server."""
    bucket = create_bucket(s3)
    return {
        "uri": f"sqlite:///{tmp_path}/catalog-{uuid.uuid4().hex[:8]}.db",
        "warehouse": f"s3://{bucket}/wh",
        **s3,
    }


def _amount(value: decimal.Decimal) -> str:
    return str(value.quantize(decimal.Decimal("0.01")))


def model_row(
    i: int, name: str | None = None, ts: int | None = None, amount: Any = None
) -> list[Any]:
    """A row of the scenarios' SOURCE (with any of its values replaced)."""
    return [
        i,
        name if name is not None else f"n{i % 3}",
        ts if ts is not None else _EPOCH_US + i * _STEP_US,
        _amount(
            decimal.Decimal(i) * decimal.Decimal("1.25")
            if amount is None
            else decimal.Decimal(amount)
        ),
    ]


def model_rows(start: int, end: int) -> list[list[Any]]:
    return [model_row(i) for i in range(start, end)]


def expected_write_modes() -> list[list[Any]]:
    rows = model_rows(0, 400)
    rows = [r for r in rows if r[1] != "n1"] + [r for r in model_rows(1000, 1030) if r[1] == "n1"]
    new = [model_row(i, "n2", _EPOCH_US + i * _STEP_US - 6 * _DAY_US) for i in range(2000, 2010)]
    days = {r[2] // _DAY_US for r in new}
    rows = [r for r in rows if not (r[1] == "n2" and r[2] // _DAY_US in days)] + new
    return sorted(rows)


def expected_row_level() -> list[list[Any]]:
    rows = {r[0]: r for r in model_rows(0, 300)}
    rows = {i: r for i, r in rows.items() if i >= 40}
    rows = {i: r for i, r in rows.items() if not (r[1] == "n1" and decimal.Decimal(r[3]) > 300)}
    for i, r in rows.items():
        if i >= 280:
            rows[i] = [i, "n9", r[2], _amount(decimal.Decimal(r[3]) * 2)]
    for i in range(250, 330):
        if i in rows:
            rows[i] = [*rows[i][:3], _amount(decimal.Decimal(-1))]
        else:
            rows[i] = model_row(i, amount=-1)
    return sorted(rows.values())


def expected_source() -> list[list[Any]]:
    rows = model_rows(0, 160)
    new = [r for r in model_rows(500, 510) if r[1] == "n2"]
    return sorted([r for r in rows if r[1] != "n2"] + new)


def _arrow_rows(table: Any) -> list[list[Any]]:
    import pyarrow as pa

    ts = table.column("ts").cast(pa.int64()).to_pylist()
    ids, names, amounts = (table.column(c).to_pylist() for c in ("id", "name", "amount"))
    return sorted([i, n, t, _amount(a)] for i, n, t, a in zip(ids, names, ts, amounts))


def one_machine_rows(props: dict[str, str], name: str) -> list[list[Any]]:
    table = load_catalog(CATALOG_NAME, properties=props).load_table(name)
    return _arrow_rows(table.scan().to_arrow())


def pyiceberg_rows(props: dict[str, str], name: str) -> list[list[Any]]:
    from pyiceberg.table import StaticTable

    location = load_catalog(CATALOG_NAME, properties=props).load_table(name).metadata_location
    s3 = {k: v for k, v in props.items() if k.startswith("s3.")}
    return _arrow_rows(StaticTable.from_metadata(location, properties=s3).scan().to_arrow())


def missing_referenced_files(props: dict[str, str], name: str) -> list[str]:
    """The files the table's metadata references that do not exist (none, if all is well)."""
    from icepark.planning.reachable import referenced_files

    table = load_catalog(CATALOG_NAME, properties=props).load_table(name)
    found = referenced_files(table.io, table.metadata, metadata_location=table.metadata_location)
    # (the walk names version-hint.text too, which only the file-system catalog writes)
    paths = [p for p in found.paths() if not p.endswith("/version-hint.text")]
    return sorted(p for p in paths if not table.io.exists(p))


def check_table(
    props: dict[str, str], name: str, spark_rows: list[list[Any]], expected: list[list[Any]]
) -> None:
    """Spark's rows are the model's, icepark's one-machine read's and PyIceberg's."""
    assert spark_rows == expected, "Spark's rows"
    assert one_machine_rows(props, name) == expected, "icepark's one-machine read"
    assert pyiceberg_rows(props, name) == expected, "PyIceberg's read"
    missing = missing_referenced_files(props, name)
    assert missing == [], f"referenced files missing: {missing}"


def check_upkeep(props: dict[str, str], name: str, out: dict[str, Any]) -> None:
    """What ``s3_scenarios.upkeep`` did: the stream copied every row (a commit per
    micro-batch at most), position deletes were merged and the data files compacted, and the
    rows are still the model's."""
    check_table(props, f"{name}_copy", out["streamed"], model_rows(0, 300))
    assert 1 <= out["stream_commits"] <= 3
    check_table(props, name, out["rows"], model_rows(20, 290))
    # three writes of three partitions; two deletes touching every partition
    assert out["files_before"] >= 9 and out["delete_files_before"] >= 6
    rewritten = out["rewritten_deletes"]
    assert rewritten["rewritten_delete_files_count"] == out["delete_files_before"]
    assert rewritten["added_delete_files_count"] == 3
    assert out["compacted"]["rewritten_data_files_count"] == out["files_before"]
    assert out["files_after"] == 3 and out["delete_files_after"] == 0
