"""S3 for :class:`~icepark.io.pyarrow_fileio.PyArrowFileIO`: the ``s3.*`` properties, the
``pyarrow.fs.S3FileSystem`` they make, and errors that say which bucket and endpoint failed.

Properties (Java's ``S3FileIOProperties`` names; the catalog's properties reach every FileIO,
and travel with it when a FileIO is pickled into a Spark task):

* ``s3.endpoint`` (an S3-compatible server, e.g. ``http://127.0.0.1:9000``; with it requests
  use path-style addressing unless ``s3.path-style-access`` is ``false``), ``s3.region``
  (or ``client.region``);
* ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token`` (static or temporary
  credentials; without them the AWS SDK's own lookup: environment, profile, instance role);
* ``s3.connect-timeout``, ``s3.request-timeout`` (seconds);
* ``s3.retry.num-retries`` (default 5, as Java's): requests that fail with a throttling
  answer (``503 SlowDown``), a server error or a network error are retried this many times,
  with the AWS SDK's standard exponential backoff and jitter (``AwsStandardS3RetryStrategy``).

Missing properties fall back to ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION`` and
``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``.

Large files are uploaded in parts by pyarrow (a multipart upload, completed on close), so a
failed upload leaves no object behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from icepark.errors import CatalogConfigError, StorageError

__all__ = [
    "S3_ENDPOINT",
    "S3_ACCESS_KEY_ID",
    "S3_SECRET_ACCESS_KEY",
    "S3_SESSION_TOKEN",
    "S3_REGION",
    "CLIENT_REGION",
    "S3_PATH_STYLE_ACCESS",
    "S3_CONNECT_TIMEOUT",
    "S3_REQUEST_TIMEOUT",
    "S3_RETRY_NUM_RETRIES",
    "S3_RETRY_NUM_RETRIES_DEFAULT",
    "s3_options",
    "s3_endpoint",
    "s3_region",
    "s3_credentials",
    "path_style_access",
    "storage_error",
]

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
CLIENT_REGION = "client.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_RETRY_NUM_RETRIES = "s3.retry.num-retries"
S3_RETRY_NUM_RETRIES_DEFAULT = 5


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes", "on")


def s3_endpoint(properties: Mapping[str, str]) -> str | None:
    """The endpoint URL requests go to (``s3.endpoint`` or the environment), or None for
    AWS's own endpoints."""
    env = os.environ
    endpoint = (
        properties.get(S3_ENDPOINT) or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    )
    return endpoint.rstrip("/") if endpoint else None


def s3_region(properties: Mapping[str, str]) -> str | None:
    """The region (``s3.region``, ``client.region`` or the environment), or None."""
    env = os.environ
    return (
        properties.get(S3_REGION)
        or properties.get(CLIENT_REGION)
        or env.get("AWS_REGION")
        or env.get("AWS_DEFAULT_REGION")
    )


def s3_credentials(properties: Mapping[str, str]) -> tuple[str, str, str | None] | None:
    """``(access key, secret key, session token)`` from the properties or else the
    environment; None to leave them to the AWS SDK's lookup."""
    access_key = properties.get(S3_ACCESS_KEY_ID)
    secret_key = properties.get(S3_SECRET_ACCESS_KEY)
    token = properties.get(S3_SESSION_TOKEN)
    if access_key is None and secret_key is None:
        access_key = os.environ.get("AWS_ACCESS_KEY_ID")
        secret_key = os.environ.get("AWS_SECRET_ACCESS_KEY")
        token = token or os.environ.get("AWS_SESSION_TOKEN")
    if (access_key is None) != (secret_key is None):
        raise CatalogConfigError(
            f"S3 credentials need both {S3_ACCESS_KEY_ID} and {S3_SECRET_ACCESS_KEY}"
        )
    if access_key is None or secret_key is None:
        return None
    return access_key, secret_key, token or None


def path_style_access(properties: Mapping[str, str]) -> bool:
    """Whether requests name the bucket in the path (``host/bucket/key``): the default with
    an endpoint (S3-compatible servers expect it), unless ``s3.path-style-access=false``."""
    if s3_endpoint(properties) is None:
        return _is_true(properties.get(S3_PATH_STYLE_ACCESS))
    value = properties.get(S3_PATH_STYLE_ACCESS)
    return value is None or _is_true(value)


def _retries(properties: Mapping[str, str]) -> int:
    raw = properties.get(S3_RETRY_NUM_RETRIES)
    if raw is None or not raw.strip():
        return S3_RETRY_NUM_RETRIES_DEFAULT
    try:
        retries = int(raw)
    except ValueError:
        raise CatalogConfigError(
            f"{S3_RETRY_NUM_RETRIES} must be a whole number, not {raw!r}"
        ) from None
    if retries < 0:
        raise CatalogConfigError(f"{S3_RETRY_NUM_RETRIES} must not be negative, not {raw!r}")
    return retries


def s3_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments of ``pyarrow.fs.S3FileSystem`` for these properties."""
    from pyarrow import fs as pafs

    options: dict[str, Any] = {}
    credentials = s3_credentials(properties)
    if credentials is not None:
        access_key, secret_key, token = credentials
        options.update(access_key=access_key, secret_key=secret_key)
        if token:
            options["session_token"] = token
    region = s3_region(properties)
    if region:
        options["region"] = region
    endpoint = s3_endpoint(properties)
    if endpoint:
        scheme, sep, rest = endpoint.partition("://")
        if sep:
            options["scheme"] = scheme.lower()
            endpoint = rest
        options["endpoint_override"] = endpoint
        if not path_style_access(properties):
            options["force_virtual_addressing"] = True
    for prop, name in (
        (S3_CONNECT_TIMEOUT, "connect_timeout"),
        (S3_REQUEST_TIMEOUT, "request_timeout"),
    ):
        if properties.get(prop):
            try:
                options[name] = float(properties[prop])
            except ValueError:
                raise CatalogConfigError(f"{prop} must be a number of seconds") from None
    options["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(
        max_attempts=_retries(properties) + 1
    )
    return options


# -- errors --------------------------------------------------------------------------------------

# pyarrow's S3 errors read "... AWS Error <NAME> during <Operation> operation: <message>"
_AWS_ERROR = re.compile(r"AWS Error ([A-Z_]+)(?: \(HTTP status (\d+)\))? during (\w+) operation")
_DENIED = frozenset(
    {
        "ACCESS_DENIED",
        "INVALID_ACCESS_KEY_ID",
        "SIGNATURE_DOES_NOT_MATCH",
        "EXPIRED_TOKEN",
        "INVALID_CLIENT_TOKEN_ID",
        "UNRECOGNIZED_CLIENT",
        "MISSING_AUTHENTICATION_TOKEN",
        "INVALID_SIGNATURE",
    }
)
_UNREACHABLE = frozenset({"NETWORK_CONNECTION", "REQUEST_TIMEOUT", "REQUEST_TIME_TOO_SKEWED"})


def describe_endpoint(properties: Mapping[str, str]) -> str:
    """The endpoint as error messages name it."""
    endpoint = s3_endpoint(properties)
    if endpoint:
        return f"endpoint {endpoint}"
    region = s3_region(properties)
    return f"AWS S3 ({region})" if region else "AWS S3"


def storage_error(
    exc: OSError, location: str, bucket: str, properties: Mapping[str, str]
) -> StorageError | None:
    """A :class:`StorageError` naming the bucket and endpoint for an S3 request that was
    refused (credentials), whose bucket does not exist, that could not reach the endpoint or
    that kept failing after its retries; None for other errors (not found, exists)."""
    text = str(exc)
    match = _AWS_ERROR.search(text)
    where = describe_endpoint(properties)
    if match is None:
        if "curlCode" in text or "Could not connect" in text:
            return StorageError(
                f"Cannot reach S3 {where} for bucket {bucket!r} ({location}): {text}"
            )
        return None
    name, status, operation = match.group(1), match.group(2), match.group(3)
    if name in _DENIED or status in ("401", "403"):
        return StorageError(
            f"Access denied to S3 bucket {bucket!r} at {where} ({operation} of {location}): "
            f"check the credentials ({S3_ACCESS_KEY_ID}, {S3_SECRET_ACCESS_KEY}, "
            f"{S3_SESSION_TOKEN}) and the bucket's permissions. {text}"
        )
    if name == "NO_SUCH_BUCKET":
        return StorageError(f"S3 bucket {bucket!r} does not exist at {where} ({location})")
    if name in _UNREACHABLE:
        return StorageError(
            f"Cannot reach S3 {where} for bucket {bucket!r} ({operation} of {location}): {text}"
        )
    if name in ("RESOURCE_NOT_FOUND", "NO_SUCH_KEY", "NO_SUCH_UPLOAD"):
        return None
    return StorageError(
        f"S3 request failed at {where}, bucket {bucket!r} ({operation} of {location}, after "
        f"up to {_retries(properties)} retries, {S3_RETRY_NUM_RETRIES}): {text}"
    )
