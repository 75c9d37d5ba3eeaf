"""The test services start from the project's own scripts and answer."""

from __future__ import annotations

import subprocess

import pytest
import sqlalchemy as sa
from services import REPO_ROOT, create_bucket, s3_client


@pytest.mark.postgres
def test_postgres_accepts_a_connection(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql+psycopg2://postgres@127.0.0.1:")
    assert postgres_url.endswith("/icepark_test")
    engine = sa.create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
            assert conn.execute(sa.text("SELECT current_database()")).scalar_one() == (
                "icepark_test"
            )
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_start_is_idempotent(postgres_url: str) -> None:
    script = REPO_ROOT / "scripts" / "postgres.sh"
    subprocess.run(["bash", str(script), "start"], check=True, capture_output=True, timeout=120)
    subprocess.run(["bash", str(script), "status"], check=True, capture_output=True, timeout=60)
    url = subprocess.run(
        ["bash", str(script), "url"], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()
    assert url == postgres_url


@pytest.mark.s3
def test_moto_s3_answers(s3_endpoint: dict[str, str]) -> None:
    bucket = create_bucket(s3_endpoint)
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=bucket, Key="k", Body=b"v")
    assert client.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    assert bucket in [b["Name"] for b in client.list_buckets()["Buckets"]]
