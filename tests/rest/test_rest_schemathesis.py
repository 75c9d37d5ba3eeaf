"""Conformance of the REST server, judged by schemathesis against the Iceberg OpenAPI document.

Schemathesis generates requests for every operation of the document, valid ones (positive
mode) and ones breaking the schema (negative mode), sends them to the server (the ASGI app
in-process, over an icepark SQL catalog in a temporary folder holding the namespace ``db`` and
the table ``db.t``; one positive pass names them, the others draw names at random) and checks
each answer: never a 5xx, and a response the document describes has the content type and the
body schema the document gives it.

The document is Iceberg's own ``open-api/rest-catalog-open-api.yaml`` (1.10), which is not
part of this repository: it is read from the file ``ICEBERG_REST_OPENAPI`` names (``server``
asks for the fallback below), else from the fetched mirror of apache/iceberg beside the
project (``git show apache-iceberg-1.10.2:open-api/rest-catalog-open-api.yaml``). Without
either, the test runs against the server's own document (FastAPI's ``app.openapi()``), where
the schemas are the server's own models, so only the "no 5xx on any input" property is an
independent judgement.

Bounded: a fixed number of examples per operation and mode, derandomized, no shrinking.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

import icepark
from icepark.rest import create_app

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
)

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT.parent / ".mirror" / "apache+iceberg" / "repo"
TAG = "apache-iceberg-1.10.2"
PREFIX = "ws"
EXAMPLES = 6  # per operation and pass
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
# random names, names of objects that exist, and requests breaking the schema
PASSES: list[tuple[GenerationMode, dict[str, str] | None]] = [
    (GenerationMode.POSITIVE, None),
    (GenerationMode.POSITIVE, {"namespace": "db", "table": "t", "view": "v"}),
    (GenerationMode.NEGATIVE, None),
]


def iceberg_document() -> dict[str, Any] | None:
    """Iceberg's REST OpenAPI document, or None where neither source is at hand."""
    named = os.environ.get("ICEBERG_REST_OPENAPI")
    if named == "server":  # asked for the server's own document
        return None
    if named:
        text = Path(named).read_text()
    elif MIRROR.is_dir():
        shown = subprocess.run(
            ["git", "-C", str(MIRROR), "show", f"{TAG}:open-api/rest-catalog-open-api.yaml"],
            capture_output=True,
            text=True,
            check=False,
        )
        if shown.returncode != 0:
            return None
        text = shown.stdout
    else:
        return None
    document: dict[str, Any] = yaml.safe_load(text)
    return document


def _served_with_prefix(document: dict[str, Any]) -> dict[str, Any]:
    """The document with ``{prefix}`` fixed to the server's prefix (a random prefix only ever
    meets 404) and its server list pointing at the app's root."""
    paths: dict[str, Any] = {}
    for path, item in document["paths"].items():
        item = dict(item)
        for key in ("parameters", *(m for m in item if m != "parameters")):
            if isinstance(item.get(key), list):  # path-level parameters
                item[key] = [p for p in item[key] if not _is_prefix(p)]
            elif isinstance(item.get(key), dict) and "parameters" in item[key]:
                operation = dict(item[key])
                operation["parameters"] = [p for p in operation["parameters"] if not _is_prefix(p)]
                item[key] = operation
        paths[path.replace("{prefix}", PREFIX)] = _wrapped_errors(item)
    return {**document, "paths": paths, "servers": [{"url": "/"}]}


def _wrapped_errors(item: Any) -> Any:
    """The view operations' 404 and 409 answers declare the bare ``ErrorModel`` as their schema
    while their own examples (``NoSuchViewError``, ``ViewAlreadyExistsError``), every other
    error answer of the document and Java's server wrap it as ``{"error": ErrorModel}``
    (``IcebergErrorResponse``): the document is corrected to its examples."""
    if isinstance(item, dict):
        if item.get("schema") == {"$ref": "#/components/schemas/ErrorModel"}:
            return {**item, "schema": {"$ref": "#/components/schemas/IcebergErrorResponse"}}
        return {k: _wrapped_errors(v) for k, v in item.items()}
    if isinstance(item, list):
        return [_wrapped_errors(v) for v in item]
    return item


def _is_prefix(parameter: dict[str, Any]) -> bool:
    return parameter.get("$ref", "").endswith("/prefix") or parameter.get("name") == "prefix"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("schemathesis")
    catalog = icepark.load_catalog(uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    return create_app(catalog, prefix=PREFIX)


@pytest.fixture(scope="module")
def api_schema(app: Any) -> Any:
    document = iceberg_document()
    if document is None:  # the server's own document (it does not serve it: openapi_url=None)
        schema = schemathesis.openapi.from_dict(app.openapi())
    else:
        schema = schemathesis.openapi.from_dict(_served_with_prefix(document))
    schema.app = app
    return schema


def test_no_5xx_and_conforming_responses(api_schema: Any) -> None:
    """Every operation, positive and negative, a bounded number of examples each: the first
    failure of each operation and mode is collected, all of them reported at the end."""
    failures: list[str] = []
    operations = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode, names in PASSES:
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=names)

            @settings(
                max_examples=EXAMPLES,
                derandomize=True,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
                deadline=None,
            )
            @given(case=strategy)
            def check(case: Any) -> None:
                response = case.call()
                case.validate_response(response, checks=CHECKS)

            try:
                check()
            except Unsatisfiable:  # negative pass, nothing in the operation's schema to break
                assert mode is GenerationMode.NEGATIVE, operation.label
            except (Exception, BaseExceptionGroup) as exc:  # the first of each pass, all reported
                failures.append(f"{operation.label} [{mode.value}, {names}]: {exc}"[:3000])
    assert operations >= 10, operations
    assert not failures, "\n\n".join(failures)
