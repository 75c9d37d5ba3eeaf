"""Storage credentials the REST server hands to its clients (the spec's "vended credentials"):
a client that asks with ``X-Iceberg-Access-Delegation: vended-credentials`` gets, with each
table it loads or creates, S3 settings for that table's location, so it needs no storage keys
of its own.

Two vendors:

* :class:`StaticCredentials` hands out the backing catalog's own ``s3.*`` settings (access
  key, secret, session token, region, endpoint) for every table: simple, but every client
  gets the server's keys (use it when those keys are scoped already);
* :class:`StsCredentials` calls STS ``AssumeRole`` on a configured role with an inline
  session policy scoped to the table's bucket and prefix: read-only (``s3:GetObject``,
  ``s3:ListBucket`` under the prefix) for a principal with a ``read`` grant, read/write
  (also ``s3:PutObject``, ``s3:DeleteObject``) for ``write``; the answer carries
  ``s3.session-token-expires-at-ms`` and clients refresh through ``GET .../credentials``
  before it passes. Credentials are cached per (location, access) while more than half their
  life remains, so loads do not each cost an AssumeRole. Needs boto3.

Property names are the ones Java's ``S3FileIOProperties`` and PyIceberg read. No secret is
ever logged, and the vendors' ``repr`` shows none.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from icepark.errors import CatalogConfigError, StorageError
from icepark.io.s3 import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)

__all__ = [
    "CredentialVendor",
    "StaticCredentials",
    "StsCredentials",
    "vendor_from",
    "S3_SESSION_TOKEN_EXPIRES_AT_MS",
    "REFRESH_CREDENTIALS_ENDPOINT",
    "MISSING_BOTO3",
]

S3_SESSION_TOKEN_EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
# Java's AwsClientProperties: where a client refreshes the credentials (relative to its uri)
REFRESH_CREDENTIALS_ENDPOINT = "client.refresh-credentials-endpoint"
MISSING_BOTO3 = "STS credential vending needs boto3: pip install boto3"

_S3_SCHEMES = ("s3", "s3a", "s3n")
_SECRET_KEYS = (S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN)
# Settings that are not secrets but that a client needs to reach the storage
_PLAIN_KEYS = (S3_ENDPOINT, S3_REGION, CLIENT_REGION, S3_PATH_STYLE_ACCESS)


class CredentialVendor(ABC):
    """Storage settings for one table location; ``write`` asks for write access too."""

    kind: str = "vendor"

    @abstractmethod
    def vend(self, location: str, write: bool) -> dict[str, str]:
        """The ``s3.*`` settings for ``location`` (a ``StorageCredential``'s config); empty
        when this vendor has none for it (e.g. a table not on S3)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class StaticCredentials(CredentialVendor):
    """The catalog's own S3 settings for every table."""

    kind = "static"

    def __init__(self, properties: Mapping[str, str]) -> None:
        keys = (S3_ACCESS_KEY_ID, *_SECRET_KEYS, *_PLAIN_KEYS)
        self._config = {k: properties[k] for k in keys if properties.get(k)}
        if (S3_ACCESS_KEY_ID in self._config) != (S3_SECRET_ACCESS_KEY in self._config):
            raise CatalogConfigError(
                f"Static credential vending needs both {S3_ACCESS_KEY_ID} and "
                f"{S3_SECRET_ACCESS_KEY} in the catalog's properties"
            )
        if S3_ACCESS_KEY_ID not in self._config:
            raise CatalogConfigError(
                f"Static credential vending needs {S3_ACCESS_KEY_ID} and {S3_SECRET_ACCESS_KEY} "
                "in the catalog's properties (the keys it hands out)"
            )

    def vend(self, location: str, write: bool) -> dict[str, str]:
        return dict(self._config)

    def __repr__(self) -> str:
        return f"StaticCredentials(access_key_id={self._config.get(S3_ACCESS_KEY_ID)!r})"


def _bucket_and_prefix(location: str) -> tuple[str, str]:
    parsed = urlparse(location)
    if parsed.scheme not in _S3_SCHEMES or not parsed.netloc:
        raise StorageError(f"Cannot vend S3 credentials for a location not on S3: {location}")
    return parsed.netloc, parsed.path.strip("/")


def session_policy(location: str, write: bool) -> dict[str, Any]:
    """The inline session policy that limits an assumed role to the table at ``location``:
    objects under its prefix (read, or read and write) and listing of that prefix only."""
    bucket, prefix = _bucket_and_prefix(location)
    objects = f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"
    actions = ["s3:GetObject", "s3:GetObjectVersion"]
    if write:
        actions += ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    statements: list[dict[str, Any]] = [
        {"Sid": "TableObjects", "Effect": "Allow", "Action": actions, "Resource": [objects]},
        {
            "Sid": "TableListing",
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            **(
                {"Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}}
                if prefix
                else {}
            ),
        },
        {
            "Sid": "BucketLocation",
            "Effect": "Allow",
            "Action": ["s3:GetBucketLocation"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
        },
    ]
    return {"Version": "2012-10-17", "Statement": statements}


class StsCredentials(CredentialVendor):
    """Temporary credentials from STS ``AssumeRole`` of ``role_arn``, scoped per table.

    The STS client uses the catalog's ``s3.*`` keys and region (or the AWS SDK's lookup) and
    ``sts_endpoint`` (default: the catalog's ``s3.endpoint`` when set, as MinIO and moto serve
    STS there, else AWS's). ``duration_seconds`` is the credentials' life (STS allows 900 to
    the role's maximum)."""

    kind = "sts"

    def __init__(
        self,
        role_arn: str,
        properties: Mapping[str, str],
        *,
        duration_seconds: int = 3600,
        sts_endpoint: str | None = None,
        session_name: str = "icepark-rest",
        clock: Callable[[], float] = time.time,
        client: Any = None,
    ) -> None:
        if not role_arn:
            raise CatalogConfigError("STS credential vending needs a role ARN (--sts-role-arn)")
        self.role_arn = role_arn
        self.duration_seconds = int(duration_seconds)
        self.session_name = session_name
        self._clock = clock
        self._plain = {k: properties[k] for k in _PLAIN_KEYS if properties.get(k)}
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, bool], tuple[float, float, dict[str, str]]] = {}
        self._client = client if client is not None else self._make_client(properties, sts_endpoint)

    @staticmethod
    def _make_client(properties: Mapping[str, str], endpoint: str | None) -> Any:
        try:
            import boto3
        except ImportError as exc:
            raise ImportError(MISSING_BOTO3) from exc
        options: dict[str, Any] = {
            "region_name": properties.get(S3_REGION) or properties.get(CLIENT_REGION),
            "endpoint_url": endpoint or properties.get(S3_ENDPOINT),
        }
        if properties.get(S3_ACCESS_KEY_ID):
            options["aws_access_key_id"] = properties[S3_ACCESS_KEY_ID]
            options["aws_secret_access_key"] = properties.get(S3_SECRET_ACCESS_KEY)
            options["aws_session_token"] = properties.get(S3_SESSION_TOKEN)
        return boto3.client("sts", **{k: v for k, v in options.items() if v is not None})

    def vend(self, location: str, write: bool) -> dict[str, str]:
        if urlparse(location).scheme not in _S3_SCHEMES:
            return {}  # a table on local disk: nothing to vend
        key = (location.rstrip("/"), write)
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                issued, expires, config = cached
                if expires - now > (expires - issued) / 2:
                    return dict(config)
        config, expires = self._assume(key[0], write, now)
        with self._lock:
            self._cache[key] = (now, expires, config)
            # forget what has expired, so the cache does not grow with dropped tables
            for k in [k for k, v in self._cache.items() if v[1] <= now]:
                del self._cache[k]
        return dict(config)

    def _assume(self, location: str, write: bool, now: float) -> tuple[dict[str, str], float]:
        policy = session_policy(location, write)
        try:
            answer = self._client.assume_role(
                RoleArn=self.role_arn,
                RoleSessionName=f"{self.session_name}-{uuid.uuid4().hex[:12]}",
                Policy=json.dumps(policy),
                DurationSeconds=self.duration_seconds,
            )
        except Exception as exc:  # botocore's errors: no secret in their text
            raise StorageError(
                f"Cannot vend credentials for {location}: STS AssumeRole of {self.role_arn} "
                f"failed: {type(exc).__name__}: {exc}"
            ) from None
        creds = answer["Credentials"]
        expiration = creds.get("Expiration")
        if hasattr(expiration, "timestamp"):
            expires = float(expiration.timestamp())
        else:
            expires = now + self.duration_seconds
        config = {
            **self._plain,
            S3_ACCESS_KEY_ID: creds["AccessKeyId"],
            S3_SECRET_ACCESS_KEY: creds["SecretAccessKey"],
            S3_SESSION_TOKEN: creds["SessionToken"],
            S3_SESSION_TOKEN_EXPIRES_AT_MS: str(int(expires * 1000)),
        }
        return config, expires

    def __repr__(self) -> str:
        return f"StsCredentials(role_arn={self.role_arn!r}, duration={self.duration_seconds}s)"


def vendor_from(
    kind: str,
    properties: Mapping[str, str],
    *,
    role_arn: str | None = None,
    duration_seconds: int = 3600,
) -> CredentialVendor:
    """The vendor ``icepark serve --vend-credentials KIND`` makes from the catalog's
    properties."""
    if kind == "static":
        return StaticCredentials(properties)
    if kind == "sts":
        return StsCredentials(role_arn or "", properties, duration_seconds=duration_seconds)
    raise CatalogConfigError(f"Unknown credential vending {kind!r}: static or sts")
