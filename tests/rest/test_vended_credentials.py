"""Storage credentials vended by icepark's REST server, used and refreshed by its client (and
read by PyIceberg's), against a moto S3 server that checks credentials (IAM): the server's
catalog holds the real keys, the clients hold none.

moto's IAM mode checks an assumed role's own policies but not the inline session policy of
``AssumeRole``, so the read-only scoping of STS credentials is judged on the policy document
the vendor sends, evaluated by moto's IAM policy evaluator.
"""

from __future__ import annotations

import json
import logging
import pickle
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icepark
from icepark.catalog.base import Catalog
from icepark.errors import StorageError
from icepark.io import load_file_io
from icepark.rest import Principals, create_app
from icepark.rest.catalog import RestCatalog
from icepark.rest.server.credentials import (
    CredentialVendor,
    StaticCredentials,
    StsCredentials,
    session_policy,
)
from icepark.rest.vended_io import VendedFileIO
from tests.rest.conftest import serving

boto3 = pytest.importorskip("boto3")

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
ROWS = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=SCHEMA)
SECRETS = {"etl": "etl-secret-1", "analyst": "analyst-secret-2"}
EXPIRES = "s3.session-token-expires-at-ms"


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The client process has no AWS keys of its own: only what the server vends."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def backend(tmp_path: Path, s3_with_auth: dict[str, str]) -> Catalog:
    """The server's catalog, on the IAM-checked bucket, with the only real keys."""
    props = {
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"s3://secured/{uuid.uuid4().hex[:12]}",
        **s3_with_auth,
    }
    catalog = icepark.load_catalog("server", properties=props)
    catalog.create_namespace("db")
    return catalog


def _iam(props: Mapping[str, str]) -> Any:
    return boto3.client(
        "iam",
        endpoint_url=props["s3.endpoint"],
        aws_access_key_id=props["s3.access-key-id"],
        aws_secret_access_key=props["s3.secret-access-key"],
        region_name="us-east-1",
    )


def _principals() -> Principals:
    return Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": SECRETS["etl"], "grants": {"*": "write"}},
                {
                    "client-id": "analyst",
                    "client-secret": SECRETS["analyst"],
                    "grants": {"db": "read"},
                },
            ]
        }
    )


def _client(url: str, **props: str) -> RestCatalog:
    return RestCatalog("client", {"uri": url, **props})


def _ids(catalog: Catalog, name: str = "db.t") -> list[int]:
    ids: list[int] = catalog.load_table(name).scan().to_arrow().column("id").to_pylist()
    return sorted(ids)


# -- static ---------------------------------------------------------------------------------


def test_static_vendor_client_writes_and_reads_with_vended_keys_only(
    backend: Catalog, s3_with_auth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    vendor = StaticCredentials(backend.properties)
    caplog.set_level(logging.INFO, logger="icepark.rest.server.access")
    with serving(create_app(backend, credentials=vendor)) as url:
        client = _client(url)
        assert not any(k.startswith("s3.") for k in client.properties)
        assert (
            "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials" in client.endpoints
        )
        table = client.create_table("db.t", SCHEMA)
        assert table.io.properties["s3.access-key-id"] == s3_with_auth["s3.access-key-id"]
        assert table.io.properties["s3.endpoint"] == s3_with_auth["s3.endpoint"]
        table.append(ROWS)
        table = client.load_table("db.t")
        table.append(pa.table({"id": [4], "name": ["d"]}, schema=SCHEMA))
        assert _ids(client) == [1, 2, 3, 4]
        assert _ids(backend) == [1, 2, 3, 4]  # the server's own view of what the client wrote
        assert backend.load_table("db.t").location.startswith("s3://secured/")
        # secrets: never in the access log nor in any repr
        secret = s3_with_auth["s3.secret-access-key"]
        assert caplog.records, "the access log wrote nothing"
        assert secret not in caplog.text
        for obj in (vendor, table.io, client, table):
            assert secret not in repr(obj)


def test_without_vending_s3_refuses_the_client(
    backend: Catalog, s3_with_auth: dict[str, str]
) -> None:
    backend.create_table("db.t", SCHEMA).append(ROWS)
    with serving(create_app(backend)) as url:
        client = _client(url, **{"s3.endpoint": s3_with_auth["s3.endpoint"]})
        assert not any(e.endswith("/credentials") for e in client.endpoints), (
            "credentials advertised without a vendor"
        )
        table = client.load_table("db.t")  # metadata comes from the server
        assert "s3.access-key-id" not in table.io.properties
        with pytest.raises(StorageError, match="secured"):
            table.scan().to_arrow()
        # and the same client, with the server vending, reads it
    with serving(create_app(backend, credentials=StaticCredentials(backend.properties))) as url:
        assert _ids(_client(url)) == [1, 2, 3]


def test_delegation_header_is_needed(backend: Catalog) -> None:
    from fastapi.testclient import TestClient

    backend.create_table("db.t", SCHEMA)
    app = create_app(backend, credentials=StaticCredentials(backend.properties))
    http = TestClient(app)
    plain = http.get("/v1/namespaces/db/tables/t").json()
    assert "storage-credentials" not in plain
    assert "s3.secret-access-key" not in plain.get("config", {})
    asked = http.get(
        "/v1/namespaces/db/tables/t",
        headers={"X-Iceberg-Access-Delegation": "vended-credentials"},
    ).json()
    (credential,) = asked["storage-credentials"]
    assert credential["prefix"] == backend.load_table("db.t").location
    assert asked["config"]["s3.access-key-id"] == credential["config"]["s3.access-key-id"]
    # static keys do not expire: no refresh endpoint (Java would insist on refreshing)
    assert "client.refresh-credentials-endpoint" not in asked["config"]
    refresh = "v1/namespaces/db/tables/t/credentials"
    again = http.get("/" + refresh).json()
    assert again["storage-credentials"][0]["config"] == credential["config"]
    # no vendor: no route and nothing advertised
    bare = TestClient(create_app(backend))
    assert bare.get("/" + refresh).status_code in (404, 405)
    assert not any(e.endswith("/credentials") for e in bare.get("/v1/config").json()["endpoints"])


def test_static_vendor_needs_keys() -> None:
    with pytest.raises(icepark.errors.CatalogConfigError, match=r"s3\.access-key-id"):
        StaticCredentials({"s3.endpoint": "http://127.0.0.1:1"})


# -- STS ------------------------------------------------------------------------------------


class Recording:
    """An STS client that remembers the session policies it was asked for."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.policies: list[dict[str, Any]] = []

    def assume_role(self, **kwargs: Any) -> Any:
        self.policies.append(json.loads(kwargs["Policy"]))
        return self.client.assume_role(**kwargs)


@pytest.fixture
def sts_vendor(s3_with_auth: dict[str, str]) -> Iterator[tuple[StsCredentials, Recording]]:
    iam = _iam(s3_with_auth)
    etl_arn = iam.get_user(UserName="etl")["User"]["Arn"]
    name = f"vended-{uuid.uuid4().hex[:8]}"
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": etl_arn}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    allow_s3 = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }
    iam.put_role_policy(RoleName=name, PolicyName="s3", PolicyDocument=json.dumps(allow_s3))
    sts = boto3.client(
        "sts",
        endpoint_url=s3_with_auth["s3.endpoint"],
        aws_access_key_id=s3_with_auth["s3.access-key-id"],
        aws_secret_access_key=s3_with_auth["s3.secret-access-key"],
        region_name="us-east-1",
    )
    recording = Recording(sts)
    yield (
        StsCredentials(role["Arn"], s3_with_auth, duration_seconds=900, client=recording),
        recording,
    )


def _permitted(policy: dict[str, Any], action: str, resource: str) -> bool:
    from moto.iam.access_control import IAMPolicy, PermissionResult

    result = IAMPolicy(json.dumps(policy)).is_action_permitted(action, resource)
    return bool(result == PermissionResult.PERMITTED)


def test_sts_vendor_scopes_credentials_to_the_table_and_grant(
    backend: Catalog,
    s3_with_auth: dict[str, str],
    sts_vendor: tuple[StsCredentials, Recording],
    caplog: pytest.LogCaptureFixture,
) -> None:
    vendor, recording = sts_vendor
    caplog.set_level(logging.INFO, logger="icepark.rest.server.access")
    app = create_app(backend, auth=_principals(), token_key="k", credentials=vendor)
    with serving(app) as url:
        writer = _client(url, credential=f"etl:{SECRETS['etl']}")
        table = writer.create_table("db.t", SCHEMA)
        io_props = table.io.properties
        assert io_props["s3.access-key-id"] != s3_with_auth["s3.access-key-id"]
        assert io_props["s3.session-token"]
        assert int(io_props[EXPIRES]) > time.time() * 1000
        assert isinstance(table.io, VendedFileIO)
        assert io_props["client.refresh-credentials-endpoint"] == (
            "v1/namespaces/db/tables/t/credentials"
        )
        # the assumed role's temporary keys really write through the IAM-checked server
        table.append(ROWS)
        assert _ids(writer) == [1, 2, 3]

        reader = _client(url, credential=f"analyst:{SECRETS['analyst']}")
        assert _ids(reader) == [1, 2, 3]
        vended = [reader.load_table("db.t").io.properties, writer.load_table("db.t").io.properties]
        secrets = [p["s3.secret-access-key"] for p in vended] + [
            s3_with_auth["s3.secret-access-key"]
        ]
        assert all(s not in caplog.text for s in secrets)
        assert all(s not in repr(vendor) for s in secrets)

    location = backend.load_table("db.t").location
    bucket_path = location.removeprefix("s3://")
    write_policy, read_policy = recording.policies[0], recording.policies[-1]
    assert write_policy != read_policy
    data = f"arn:aws:s3:::{bucket_path}/data/x.parquet"
    other = f"arn:aws:s3:::{bucket_path}-other/data/x.parquet"
    assert _permitted(read_policy, "s3:GetObject", data)
    assert not _permitted(read_policy, "s3:PutObject", data)
    assert not _permitted(read_policy, "s3:DeleteObject", data)
    assert not _permitted(read_policy, "s3:GetObject", other)
    assert _permitted(write_policy, "s3:PutObject", data)
    assert _permitted(write_policy, "s3:DeleteObject", data)
    assert not _permitted(write_policy, "s3:PutObject", other)
    assert _permitted(read_policy, "s3:ListBucket", f"arn:aws:s3:::{bucket_path.split('/')[0]}")


def test_sts_vendor_caches_until_half_life(s3_with_auth: dict[str, str]) -> None:
    now = [1000.0]

    class FakeSts:
        calls = 0

        def assume_role(self, **kwargs: Any) -> Any:
            FakeSts.calls += 1
            n = FakeSts.calls
            expires = type("T", (), {"timestamp": lambda self: now[0] + 900})()
            return {
                "Credentials": {
                    "AccessKeyId": f"ASIA{n}",
                    "SecretAccessKey": f"s{n}",
                    "SessionToken": f"t{n}",
                    "Expiration": expires,
                }
            }

    vendor = StsCredentials(
        "arn:aws:iam::123456789012:role/r", s3_with_auth, client=FakeSts(), clock=lambda: now[0]
    )
    first = vendor.vend("s3://b/wh/t", write=False)
    assert vendor.vend("s3://b/wh/t", write=False) == first
    assert vendor.vend("s3://b/wh/t", write=True) != first  # other access, other credentials
    now[0] += 451  # past half of 900 s
    assert vendor.vend("s3://b/wh/t", write=False)["s3.access-key-id"] != first["s3.access-key-id"]
    assert first[EXPIRES] == str((1000 + 900) * 1000)
    assert vendor.vend("/local/path", write=False) == {}  # nothing to vend off S3
    assert vendor.vend("file:///local/path", write=True) == {}
    with pytest.raises(StorageError, match="not on S3"):
        session_policy("/local/path", write=False)


def test_session_policy_without_prefix_covers_the_bucket() -> None:
    policy = session_policy("s3://bucket", write=False)
    assert _permitted(policy, "s3:GetObject", "arn:aws:s3:::bucket/any/key")
    assert not _permitted(policy, "s3:PutObject", "arn:aws:s3:::bucket/any/key")


def test_sts_needs_boto3_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_boto3(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "boto3":
            raise ImportError("No module named 'boto3'", name="boto3")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_boto3)
    with pytest.raises(ImportError, match="pip install boto3"):
        StsCredentials("arn:aws:iam::123456789012:role/r", {})


# -- refresh --------------------------------------------------------------------------------


class RotatingKeys(CredentialVendor):
    """Each vend is a new IAM user's key (allowed all of S3), said to expire ``life`` seconds
    later; old keys can be revoked to prove the client moved on."""

    def __init__(self, admin: Mapping[str, str], life: float) -> None:
        self.admin = admin
        self.life = life
        self.issued: list[tuple[str, str]] = []  # (user, access key id)
        self.lock = threading.Lock()

    def vend(self, location: str, write: bool) -> dict[str, str]:
        iam = _iam(self.admin)
        with self.lock:
            user = f"vend-{uuid.uuid4().hex[:8]}"
            iam.create_user(UserName=user)
            policy = {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            }
            iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(policy))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            self.issued.append((user, key["AccessKeyId"]))
        return {
            "s3.endpoint": self.admin["s3.endpoint"],
            "s3.region": "us-east-1",
            "s3.access-key-id": key["AccessKeyId"],
            "s3.secret-access-key": key["SecretAccessKey"],
            EXPIRES: str(int((time.time() + self.life) * 1000)),
        }

    def revoke_all_but_last(self) -> None:
        iam = _iam(self.admin)
        for user, key in self.issued[:-1]:
            iam.delete_access_key(UserName=user, AccessKeyId=key)


def test_client_refreshes_before_expiry_and_keeps_working(
    backend: Catalog, s3_with_auth: dict[str, str]
) -> None:
    backend.create_table("db.t", SCHEMA).append(ROWS)
    vendor = RotatingKeys(s3_with_auth, life=3.0)
    with serving(create_app(backend, credentials=vendor)) as url:
        table = _client(url).load_table("db.t")
        io = table.io
        assert isinstance(io, VendedFileIO)
        first = dict(io.properties)
        assert io.refresh_due_at is not None
        due_in = io.refresh_due_at - time.time()
        assert 0.5 < due_in <= 1.6  # half of the ~3 s left, well before expiry
        assert table.scan().to_arrow().num_rows == 3
        assert io.refreshes == 0 and len(vendor.issued) == 1

        time.sleep(due_in + 0.2)  # due, not yet expired
        vendor.revoke_all_but_last()  # nothing to revoke yet: one key issued
        assert table.scan().to_arrow().num_rows == 3  # this read refreshed first
        assert io.refreshes == 1 and len(vendor.issued) == 2
        assert io.properties["s3.access-key-id"] != first["s3.access-key-id"]
        assert int(io.properties[EXPIRES]) > int(first[EXPIRES])

        # the first key revoked: S3 refuses it, and the table still reads with its new one
        vendor.revoke_all_but_last()
        with pytest.raises(StorageError, match="secured"):
            load_file_io(first).new_input(table.metadata_location).read_bytes()
        assert table.scan().to_arrow().num_rows == 3


def test_vended_file_io_schedule_threads_and_pickle(tmp_path: Path) -> None:
    now = [10_000.0]
    calls: list[int] = []
    gate = threading.Event()

    def refresh() -> dict[str, str]:
        gate.wait(5)
        calls.append(1)
        n = len(calls)
        return {
            "s3.access-key-id": f"k{n}",
            "s3.secret-access-key": f"s{n}",
            EXPIRES: str(int((now[0] + 3600) * 1000)),
        }

    props = {"s3.access-key-id": "k0", "s3.secret-access-key": "s0", "s3.session-token": "t0"}
    long_lived = VendedFileIO(
        {**props, EXPIRES: str(int((now[0] + 3600) * 1000))}, refresh, clock=lambda: now[0]
    )
    assert long_lived.refresh_due_at == now[0] + 3600 - 300  # 5 minutes ahead
    short = VendedFileIO(
        {**props, EXPIRES: str(int((now[0] + 120) * 1000))}, refresh, clock=lambda: now[0]
    )
    assert short.refresh_due_at == now[0] + 60  # half the life when shorter

    (tmp_path / "f").write_bytes(b"x")
    now[0] += 61
    threads = [threading.Thread(target=lambda: short.exists(str(tmp_path / "f"))) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and short.refreshes == 1  # one refresh for eight callers
    assert short.properties["s3.access-key-id"] == "k1"
    assert "s3.session-token" not in short.properties  # the old token went with the old key
    assert short.properties["s3.secret-access-key"] == "s1"
    assert short.refresh_due_at == now[0] + 3600 - 300  # rescheduled for the fresh ones

    copy = pickle.loads(pickle.dumps(short))
    assert isinstance(copy, VendedFileIO) and copy.properties == short.properties
    assert copy.refresh_due_at is None  # no catalog on a worker: no refresh hook
    assert copy.exists(str(tmp_path / "f"))
    assert "s1" not in repr(short) and "s0" not in repr(copy)


def test_failed_refresh_keeps_the_old_credentials_and_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    attempts: list[int] = []

    def refresh() -> dict[str, str]:
        attempts.append(1)
        raise StorageError("catalog unreachable")

    io = VendedFileIO(
        {"s3.access-key-id": "k", EXPIRES: str(100_000)}, refresh, clock=lambda: now[0]
    )
    now[0] = 60.0
    assert not io.exists(str(tmp_path / "missing"))
    assert len(attempts) == 1 and io.properties["s3.access-key-id"] == "k"
    assert "Refreshing vended storage credentials failed" in caplog.text
    assert not io.exists(str(tmp_path / "missing"))
    assert len(attempts) == 1  # not again before the retry delay
    now[0] += 11
    io.exists(str(tmp_path / "missing"))
    assert len(attempts) == 2


# -- PyIceberg ------------------------------------------------------------------------------


def test_pyiceberg_reads_through_vended_sts_credentials(
    backend: Catalog, sts_vendor: tuple[StsCredentials, Recording]
) -> None:
    pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")
    vendor, recording = sts_vendor
    backend.create_table("db.t", SCHEMA).append(ROWS)
    with serving(create_app(backend, credentials=vendor)) as url:
        theirs = pyiceberg_catalog.load_catalog("pi", type="rest", uri=url)
        table = theirs.load_table("db.t")
        assert table.io.properties["s3.session-token"]
        rows = table.scan().to_arrow()
        assert sorted(rows.column("id").to_pylist()) == [1, 2, 3]
        assert recording.policies  # they came from AssumeRole
    # and without vending PyIceberg is refused by S3
    with serving(create_app(backend)) as url:
        theirs = pyiceberg_catalog.load_catalog(
            "pi", type="rest", uri=url, **{"s3.endpoint": backend.properties["s3.endpoint"]}
        )
        with pytest.raises(OSError):
            theirs.load_table("db.t").scan().to_arrow()


# -- CLI ------------------------------------------------------------------------------------


def test_serve_cli_vends_static_credentials(
    backend: Catalog, s3_with_auth: dict[str, str], tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys
    import urllib.request

    import yaml

    from tests.rest.conftest import free_port

    backend.create_table("db.t", SCHEMA).append(ROWS)
    config = tmp_path / "icepark.yaml"
    config.write_text(yaml.safe_dump({"catalogs": {"server": dict(backend.properties)}}))
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "ICEPARK_CONFIG": str(config)}
    main = [
        sys.executable,
        "-c",
        "from icepark.cli.main import main; main()",
        "--catalog",
        "server",
    ]
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [*main, "serve", "--port", str(port), "--vend-credentials", "static"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(url + "/healthz", timeout=2):
                        break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
            assert _ids(_client(url)) == [1, 2, 3]
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    text = log.read_text()
    assert '"operation": "load_table"' in text  # the access log ran
    assert s3_with_auth["s3.secret-access-key"] not in text

    refused = subprocess.run(
        [*main, "serve", "--port", str(port), "--vend-credentials", "sts"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0 and "--sts-role-arn" in refused.stderr


def test_sts_vendor_leaves_local_tables_alone(catalog: Catalog) -> None:
    from fastapi.testclient import TestClient

    class NoSts:
        def assume_role(self, **kwargs: Any) -> Any:
            raise AssertionError("AssumeRole for a local table")

    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA).append(ROWS)
    vendor = StsCredentials("arn:aws:iam::123456789012:role/r", {}, client=NoSts())
    http = TestClient(create_app(catalog, credentials=vendor))
    headers = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    answer = http.get("/v1/namespaces/db/tables/t", headers=headers)
    assert answer.status_code == 200 and "storage-credentials" not in answer.json()
    creds = http.get("/v1/namespaces/db/tables/t/credentials", headers=headers).json()
    assert creds == {"storage-credentials": []}
