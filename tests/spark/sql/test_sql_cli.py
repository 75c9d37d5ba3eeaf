"""``icepark sql``: a statement, a script file and the interactive shell, on the test's
Spark session (the command uses the active one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from icepark.cli.main import cli

pytestmark = pytest.mark.spark


def test_sql_statement_file_and_shell(spark: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    base = ["--type", "filesystem", "--warehouse", str(wh), "sql"]
    runner = CliRunner()
    script = tmp_path / "s.sql"
    script.write_text(
        "CREATE NAMESPACE db;\n"
        "CREATE TABLE db.t (id bigint, name string) USING iceberg;\n"
        "INSERT INTO db.t VALUES (1, 'a;b'), (2, 'c');\n"
    )
    done = runner.invoke(cli, [*base, "-f", str(script)])
    assert done.exit_code == 0, done.output
    out = runner.invoke(cli, [*base, "--json", "SELECT * FROM db.t ORDER BY id"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == [{"id": 1, "name": "a;b"}, {"id": 2, "name": "c"}]
    bad = runner.invoke(cli, [*base, "SELECT * FROM db.nope"])
    assert bad.exit_code == 1 and "db.nope" in bad.output
    history = tmp_path / "history"
    shell = runner.invoke(
        cli,
        [*base, "--history", str(history)],
        input="SELECT name\nFROM db.t WHERE id = 2;\nSELECT * FROM db.nope;\nquit\n",
    )
    assert shell.exit_code == 0, shell.output
    assert "c" in shell.output and "db.nope" in shell.output
    assert history.is_file()
