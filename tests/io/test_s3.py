"""S3 in FileIO: the ``s3.*`` properties (retries included), throttling answered by retries
(a proxy in front of moto answers ``503 SlowDown``), and errors that name the bucket and the
endpoint: wrong credentials, a missing bucket, an endpoint that does not answer."""

from __future__ import annotations

import pickle

import pyarrow.fs as pafs
import pytest
from s3_faults import FaultyS3Proxy
from services import create_bucket, free_port

from icepark.errors import CatalogConfigError, NoSuchFileError, StorageError
from icepark.io import PyArrowFileIO, load_file_io
from icepark.io.s3 import s3_options

pytestmark = pytest.mark.s3


def test_options_from_properties() -> None:
    options = s3_options(
        {
            "s3.endpoint": "http://127.0.0.1:9000/",
            "s3.access-key-id": "a",
            "s3.secret-access-key": "b",
            "s3.session-token": "t",
            "s3.region": "eu-west-1",
            "s3.path-style-access": "false",
            "s3.connect-timeout": "2.5",
            "s3.retry.num-retries": "7",
        }
    )
    strategy = options.pop("retry_strategy")
    assert isinstance(strategy, pafs.AwsStandardS3RetryStrategy)
    assert strategy.max_attempts == 8
    assert options == {
        "access_key": "a",
        "secret_key": "b",
        "session_token": "t",
        "region": "eu-west-1",
        "scheme": "http",
        "endpoint_override": "127.0.0.1:9000",
        "force_virtual_addressing": True,
        "connect_timeout": 2.5,
    }
    # Java's default: 5 retries
    assert s3_options({"s3.region": "us-east-1"})["retry_strategy"].max_attempts == 6
    for bad in ("-1", "many"):
        with pytest.raises(CatalogConfigError, match=r"s3\.retry\.num-retries"):
            s3_options({"s3.retry.num-retries": bad})
    with pytest.raises(CatalogConfigError, match="both"):
        s3_options({"s3.access-key-id": "a"})


def test_properties_travel_with_a_pickled_fileio(s3_endpoint: dict[str, str]) -> None:
    """What a Spark task receives: the FileIO and its catalog properties, nothing else."""
    bucket = create_bucket(s3_endpoint)
    fileio = load_file_io({**s3_endpoint, "s3.retry.num-retries": "2"})
    fileio.new_output(f"s3://{bucket}/a").write_bytes(b"x")
    copy = pickle.loads(pickle.dumps(fileio))
    assert copy.properties == fileio.properties
    assert copy.new_input(f"s3://{bucket}/a").read_bytes() == b"x"


def test_throttling_is_retried(s3_endpoint: dict[str, str]) -> None:
    bucket = create_bucket(s3_endpoint)
    with FaultyS3Proxy(s3_endpoint["s3.endpoint"], share=0.15, seed=11) as proxy:
        fileio = PyArrowFileIO({**s3_endpoint, "s3.endpoint": proxy.endpoint})
        # (each throttled request waits the SDK's backoff, ~0.5 s: keep the count small)
        payloads = {f"s3://{bucket}/f{i}": bytes([i]) * (100 + i) for i in range(10)}
        for location, data in payloads.items():
            fileio.new_output(location).write_bytes(data)
        for location, data in payloads.items():
            assert fileio.new_input(location).read_bytes() == data
        assert proxy.served_errors >= 3
        # when every request is throttled, the error names the endpoint and the bucket
        proxy.fail_when = lambda method, path: True
        strict = PyArrowFileIO(
            {**s3_endpoint, "s3.endpoint": proxy.endpoint, "s3.retry.num-retries": "1"}
        )
        with pytest.raises(StorageError, match=f"at endpoint {proxy.endpoint}, bucket '{bucket}'"):
            strict.new_input(f"s3://{bucket}/f1").read_bytes()
        with pytest.raises(StorageError, match=r"SLOW_DOWN|503"):
            strict.new_output(f"s3://{bucket}/new").write_bytes(b"y", overwrite=True)


def test_large_files_are_uploaded_in_parts(s3_endpoint: dict[str, str]) -> None:
    """A file larger than a part goes up as a multipart upload (parts throttled on the way
    are retried), completed on close: the object appears whole or not at all."""
    bucket = create_bucket(s3_endpoint)
    data = bytes(range(256)) * (48 * 1024)  # 12 MiB: more than two 5 MiB parts
    with FaultyS3Proxy(s3_endpoint["s3.endpoint"], share=0.2, seed=5) as proxy:
        fileio = PyArrowFileIO({**s3_endpoint, "s3.endpoint": proxy.endpoint})
        fileio.new_output(f"s3://{bucket}/big").write_bytes(data)
        uploads = [path for method, path in proxy.seen if method == "PUT" and "partNumber=" in path]
        assert len({p.split("partNumber=")[1].split("&")[0] for p in uploads}) >= 2
        assert any(m == "POST" and "uploadId=" in p for m, p in proxy.seen)  # completed
    assert PyArrowFileIO(s3_endpoint).new_input(f"s3://{bucket}/big").read_bytes() == data


def test_wrong_credentials_name_bucket_and_endpoint(s3_with_auth: dict[str, str]) -> None:
    good = PyArrowFileIO(s3_with_auth)
    good.new_output("s3://secured/k").write_bytes(b"v", overwrite=True)
    good.check_access("s3://secured/wh")
    bad = PyArrowFileIO({**s3_with_auth, "s3.secret-access-key": "nope"})
    endpoint = s3_with_auth["s3.endpoint"]
    for action in (
        lambda: bad.check_access("s3://secured/wh"),
        lambda: bad.new_input("s3://secured/k").read_bytes(),
        lambda: bad.new_output("s3://secured/k2").write_bytes(b"v"),
    ):
        with pytest.raises(StorageError) as error:
            action()
        message = str(error.value)
        assert "Access denied to S3 bucket 'secured'" in message and endpoint in message
        assert isinstance(error.value, OSError)


def test_missing_bucket(s3_endpoint: dict[str, str]) -> None:
    fileio = PyArrowFileIO(s3_endpoint)
    where = f"at endpoint {s3_endpoint['s3.endpoint']}"
    with pytest.raises(StorageError, match=f"S3 bucket 'no-such-bucket' does not exist {where}"):
        fileio.check_access("s3://no-such-bucket/wh/db/t")
    with pytest.raises(StorageError, match=f"S3 bucket 'no-such-bucket' does not exist {where}"):
        fileio.new_output("s3://no-such-bucket/x").write_bytes(b"x")
    with pytest.raises(NoSuchFileError):  # reading: the file is missing, as before
        fileio.new_input("s3://no-such-bucket/x").read_bytes()


def test_endpoint_that_does_not_answer() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    fileio = PyArrowFileIO(
        {
            "s3.endpoint": endpoint,
            "s3.access-key-id": "a",
            "s3.secret-access-key": "b",
            "s3.region": "us-east-1",
            "s3.retry.num-retries": "0",
        }
    )
    with pytest.raises(StorageError, match=f"Cannot reach S3 endpoint {endpoint} for bucket 'b1'"):
        fileio.check_access("s3://b1/wh")
    with pytest.raises(StorageError, match=f"Cannot reach S3 endpoint {endpoint} for bucket 'b2'"):
        fileio.new_input("s3://b2/k").read_bytes()
