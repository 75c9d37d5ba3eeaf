"""The REST catalog's endpoints as the spec names them in ``/v1/config`` (``"GET
/v1/{prefix}/namespaces"``), and the set a server that lists none is taken to offer."""

from __future__ import annotations

__all__ = ["NAMESPACES", "NAMESPACE", "TABLES", "TABLE", "TRANSACTIONS", "DEFAULT_ENDPOINTS"]

NAMESPACES = "/v1/{prefix}/namespaces"
NAMESPACE = NAMESPACES + "/{namespace}"
TABLES = NAMESPACE + "/tables"
TABLE = TABLES + "/{table}"
TRANSACTIONS = "/v1/{prefix}/transactions/commit"

# What a server that lists no endpoints offers (Java's RESTSessionCatalog.DEFAULT_ENDPOINTS).
DEFAULT_ENDPOINTS = frozenset(
    {
        f"GET {NAMESPACES}",
        f"GET {NAMESPACE}",
        f"POST {NAMESPACES}",
        f"POST {NAMESPACE}/properties",
        f"DELETE {NAMESPACE}",
        f"GET {TABLES}",
        f"GET {TABLE}",
        f"POST {TABLES}",
        f"POST {TABLE}",
        f"DELETE {TABLE}",
        "POST /v1/{prefix}/tables/rename",
        f"POST {NAMESPACE}/register",
        f"POST {TABLE}/metrics",
        f"POST {TRANSACTIONS}",
    }
)
