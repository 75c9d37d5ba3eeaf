"""Pytest fixtures for the services some tests need: PostgreSQL and an S3 server (moto).

Import the fixtures into a conftest.py (``from services import *  # noqa: F403``) or name this
module in the root conftest's ``pytest_plugins``. Both services are started by the project's
own means, so they work on a fresh machine:

* ``postgres_url`` runs ``scripts/postgres.sh start`` (which installs Debian's postgresql if
  needed) and gives its SQLAlchemy URL. ``ICEPARK_SKIP_POSTGRES=1`` skips the tests using it;
  otherwise a server that cannot start is an error, not a skip. The server is left running.
* ``s3_endpoint`` starts ``moto.server`` on a free loopback port and gives the FileIO
  properties to reach it; ``s3_bucket`` makes a fresh bucket in it for each test.
* ``s3_with_auth`` starts a second moto server that checks credentials (IAM), with one user
  allowed everything and a bucket ``secured``, and gives that user's FileIO properties.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "REPO_ROOT",
    "serving",
    "postgres_url",
    "s3_endpoint",
    "s3_bucket",
    "s3_with_auth",
    "create_bucket",
    "s3_client",
    "free_port",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
_POSTGRES_SCRIPT = REPO_ROOT / "scripts" / "postgres.sh"
_MOTO_START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Runs the ASGI ``app`` on uvicorn on 127.0.0.1 (never beyond loopback) in a thread;
    yields its base URL and stops it after."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The SQLAlchemy URL of the private test PostgreSQL server (database ``icepark_test``)."""
    if os.environ.get("ICEPARK_SKIP_POSTGRES") == "1":
        pytest.skip("ICEPARK_SKIP_POSTGRES=1: PostgreSQL tests are switched off")
    started = subprocess.run(
        ["bash", str(_POSTGRES_SCRIPT), "start"],
        capture_output=True,
        text=True,
        timeout=900,  # a first run may apt-get install postgresql
        check=False,
    )
    if started.returncode != 0:
        pytest.fail(
            "scripts/postgres.sh start failed "
            f"(exit {started.returncode}):\n{started.stdout}\n{started.stderr}",
            pytrace=False,
        )
    url = subprocess.run(
        ["bash", str(_POSTGRES_SCRIPT), "url"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    yield url


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """FileIO properties for a moto S3 server on 127.0.0.1, stopped after the session."""
    # The AWS SDKs must never go looking for credentials on the network.
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    port = free_port()
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    endpoint = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        _wait_for_http(endpoint, proc, log_path)
        yield {
            "s3.endpoint": endpoint,
            "s3.access-key-id": "testing",
            "s3.secret-access-key": "testing",
            "s3.region": "us-east-1",
            "s3.path-style-access": "true",
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto server that checks credentials (IAM), one user with a key, and a bucket."""
    import boto3

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto-auth") / "moto.log"
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        _wait_for_http(endpoint, proc, log)
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            aws_access_key_id="x",
            aws_secret_access_key="x",
            region_name="us-east-1",
        )
        iam.create_user(UserName="etl")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="etl", PolicyName="all", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="etl")["AccessKey"]
        props = {
            "s3.endpoint": endpoint,
            "s3.access-key-id": key["AccessKeyId"],
            "s3.secret-access-key": key["SecretAccessKey"],
            "s3.region": "us-east-1",
        }
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=props["s3.access-key-id"],
            aws_secret_access_key=props["s3.secret-access-key"],
            region_name="us-east-1",
        ).create_bucket(Bucket="secured")
        yield props
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_for_http(endpoint: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + _MOTO_START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            log = log_path.read_text(errors="replace")
            raise RuntimeError(f"moto server exited with {proc.returncode}:\n{log}")
        try:
            with urllib.request.urlopen(endpoint + "/moto-api/", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"moto server did not answer on {endpoint} in time")
        time.sleep(0.1)


def s3_client(properties: dict[str, str]) -> Any:
    """A boto3 S3 client for the server described by FileIO properties."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=properties["s3.endpoint"],
        aws_access_key_id=properties["s3.access-key-id"],
        aws_secret_access_key=properties["s3.secret-access-key"],
        region_name=properties.get("s3.region", "us-east-1"),
    )


def create_bucket(properties: dict[str, str], name: str | None = None) -> str:
    """Create a bucket (a fresh random name unless given) and return its name."""
    bucket = name or f"icepark-{uuid.uuid4().hex[:16]}"
    s3_client(properties).create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture
def s3_bucket(s3_endpoint: dict[str, str]) -> str:
    """A new, empty bucket on the moto server."""
    return create_bucket(s3_endpoint)
