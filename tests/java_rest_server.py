"""A REST catalog served by the Java implementation's own handlers, for icepark's client tests.

Run by the reference engine's interpreter (``.venv-ref/bin/python``, pyspark with Iceberg's
runtime jar)::

    java_rest_server.py REFSPARK_DIR WAREHOUSE --jdbc-jar H2_JAR [--prefix P] [--page-size N]

It starts one Spark session only to reach a JVM holding Iceberg's classes (through py4j),
makes an ``org.apache.iceberg.jdbc.JdbcCatalog`` (in-memory H2) whose files go through
Hadoop's FileIO into WAREHOUSE, and answers each REST request on 127.0.0.1 by calling the matching
static method of ``org.apache.iceberg.rest.CatalogHandlers``; request and response bodies are
parsed and written by Java's ``RESTObjectMapper.mapper()``. Exceptions map to HTTP statuses as
Java's test adapter (``RESTCatalogAdapter``) maps them. It prints ``PORT <n>`` when ready.
A line ``{"sql": ...}`` on stdin is not served: stdin is only read to notice the parent's end.

This is test code: icepark ships no JVM code.
"""

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

STATUS = {
    "NoSuchNamespaceException": 404,
    "NoSuchTableException": 404,
    "NoSuchViewException": 404,
    "NotFoundException": 404,
    "NoSuchIcebergTableException": 404,
    "AlreadyExistsException": 409,
    "CommitFailedException": 409,
    "NamespaceNotEmptyException": 409,
    "IllegalArgumentException": 400,
    "ValidationException": 400,
    "BadRequestException": 400,
    "NotAuthorizedException": 401,
    "ForbiddenException": 403,
    "UnsupportedOperationException": 406,
    "ServiceUnavailableException": 503,
    "CommitStateUnknownException": 500,
}

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
]


class JavaError(Exception):
    """A Java exception to answer with (the cause of a reflective call's wrapper)."""

    def __init__(self, java_exception):
        super().__init__(java_exception.getMessage())
        self.java_exception = java_exception


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("refspark_dir")
    parser.add_argument("warehouse")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--page-size", default=None)
    parser.add_argument("--jdbc-jar", required=True, help="H2's JDBC driver jar")
    args = parser.parse_args()
    sys.path.insert(0, args.refspark_dir)
    import refspark

    # Spark's reads by metadata path go through Iceberg's default catalog, which IcebergSource
    # sets up lazily on the active session; the handler threads need it configured up front
    default = "spark.sql.catalog.default_iceberg"
    conf = [(default, "org.apache.iceberg.spark.SparkCatalog"), (default + ".type", "hadoop")]
    conf.append((default + ".warehouse", "file://" + os.path.abspath(args.warehouse)))
    conf.append(("spark.driver.extraClassPath", args.jdbc_jar))
    spark = refspark.session(app="java-rest-handlers", conf=conf)
    jvm = spark._jvm
    handlers = jvm.org.apache.iceberg.rest.CatalogHandlers
    loader = handlers._java_lang_class.getClassLoader()
    Class = jvm.java.lang.Class

    def java_class(name):
        return Class.forName(name, True, loader)

    gateway = spark.sparkContext._gateway
    mapper_class = java_class("org.apache.iceberg.rest.RESTObjectMapper")
    method = mapper_class.getDeclaredMethod("mapper", gateway.new_array(Class, 0))
    method.setAccessible(True)
    mapper = method.invoke(None, gateway.new_array(jvm.java.lang.Object, 0))

    # Java's JDBC catalog on an in-memory H2 database (--jdbc-jar: H2's driver), its files
    # through Hadoop's FileIO in WAREHOUSE (InMemoryCatalog would keep metadata in memory)
    catalog = jvm.org.apache.iceberg.jdbc.JdbcCatalog()
    props = jvm.java.util.HashMap()
    props.put("warehouse", "file://" + os.path.abspath(args.warehouse))
    props.put("uri", "jdbc:h2:mem:iceberg_rest;DB_CLOSE_DELAY=-1")
    props.put("io-impl", "org.apache.iceberg.hadoop.HadoopFileIO")
    props.put("jdbc.strict-mode", "true")  # tables only in namespaces that exist
    props.put("jdbc.schema-version", "V1")  # the schema with iceberg_type: views
    catalog.setConf(spark._jsc.hadoopConfiguration())
    catalog.initialize("java", props)

    RESTUtil = jvm.org.apache.iceberg.rest.RESTUtil
    TableIdentifier = jvm.org.apache.iceberg.catalog.TableIdentifier
    Namespace = jvm.org.apache.iceberg.catalog.Namespace
    req = "org.apache.iceberg.rest.requests."
    lock = threading.Lock()
    prefix_parts = [p for p in args.prefix.split("/") if p]

    def parse(body, cls):
        return mapper.readValue(body, java_class(req + cls))

    def ns(segment):
        return RESTUtil.decodeNamespace(segment)

    def ident(ns_segment, name_segment):
        return TableIdentifier.of(ns(ns_segment), RESTUtil.decodeString(name_segment))

    def java_view(ns_segment, name_segment):
        """What Java itself reads of a table: its catalog's metadata file, schema and rows."""
        table = catalog.loadTable(ident(ns_segment, name_segment))
        current = table.operations().current()
        location = current.metadataFileLocation()
        # py4j runs this on a JVM thread of its own, where Spark finds no active session
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        frame = spark.read.format("iceberg").load(location)
        rows = [refspark._json_value(r.asDict()) for r in frame.collect()]
        return {
            "metadata-location": location,
            "schema": json.loads(jvm.org.apache.iceberg.SchemaParser.toJson(table.schema())),
            "spec": json.loads(jvm.org.apache.iceberg.PartitionSpecParser.toJson(table.spec())),
            "properties": dict(table.properties()),
            "snapshots": len(list(table.snapshots())),
            "rows": rows,
            "refs": {name: table.refs().get(name).snapshotId() for name in table.refs().keySet()},
            "specs": len(table.specs()),
            "current-snapshot": current.currentSnapshot().snapshotId()
            if current.currentSnapshot() is not None
            else None,
        }

    def java_view_of_view(ns_segment, name_segment):
        """What Java reads of a view through its catalog: SQL per dialect, schema, versions."""
        view = catalog.loadView(ident(ns_segment, name_segment))
        version = view.currentVersion()
        sql = {r.dialect(): r.sql() for r in version.representations()}
        return {
            "sql": sql,
            "schema": json.loads(jvm.org.apache.iceberg.SchemaParser.toJson(view.schema())),
            "versions": len(list(view.versions())),
            "version-id": version.versionId(),
            "default-namespace": list(version.defaultNamespace().levels()),
            "default-catalog": version.defaultCatalog(),
            "properties": dict(view.properties()),
            "uuid": str(view.uuid()),
        }

    def java_create_view(ns_segment, name_segment, body):
        """Java's catalog creates a view ({"sql", "schema": Iceberg schema JSON})."""
        spec = json.loads(body)
        namespace = ns(ns_segment)
        builder = catalog.buildView(ident(ns_segment, name_segment))
        builder = builder.withSchema(
            jvm.org.apache.iceberg.SchemaParser.fromJson(json.dumps(spec["schema"]))
        )
        builder = builder.withQuery("spark", spec["sql"]).withDefaultNamespace(namespace)
        for key, value in spec.get("properties", {}).items():
            builder = builder.withProperty(key, value)
        view = builder.create()
        return {"uuid": str(view.uuid())}

    table_ops_class = java_class("org.apache.iceberg.TableOperations")
    update_request_class = java_class(req + "UpdateTableRequest")
    commit_args = gateway.new_array(Class, 2)
    commit_args[0], commit_args[1] = table_ops_class, update_request_class
    handler_commit = handlers._java_lang_class.getDeclaredMethod("commit", commit_args)
    handler_commit.setAccessible(True)
    from py4j.protocol import Py4JJavaError

    def commit_transaction(request):
        """Java 1.10's CatalogHandlers has no commitTransaction: as its test adapter
        (RESTCatalogAdapter) does, each change is validated and applied in memory on a
        transaction of its table, and the transactions commit only when every one passed."""
        transactions = []
        for change in request.tableChanges():
            table = catalog.loadTable(change.identifier())
            tx = jvm.org.apache.iceberg.Transactions.newTransaction(
                change.identifier().toString(), table.operations()
            )
            args = gateway.new_array(jvm.java.lang.Object, 2)
            args[0], args[1] = tx.table().operations(), change
            try:
                handler_commit.invoke(None, args)
            except Py4JJavaError as exc:
                cause = exc.java_exception.getCause()
                raise JavaError(cause if cause is not None else exc.java_exception) from None
            transactions.append(tx)
        for tx in transactions:
            tx.commitTransaction()
        return None

    reports = []  # metrics reports as Java's parser read them, written back by Java

    def report_metrics(body):
        """Java's own parser reads the report (a malformed one fails: 400); what it read is
        kept, written back by Java, for _test/metrics."""
        parser = jvm.org.apache.iceberg.rest.requests.ReportMetricsRequestParser
        try:
            parsed = parser.fromJson(body)
        except Exception as exc:
            java = getattr(exc, "java_exception", None)
            raise ValueError(java.getMessage() if java is not None else str(exc)) from None
        reports.append(json.loads(parser.toJson(parsed)))
        return None

    def route(method, parts, query, body):
        """Returns the handler's Java response object, or None for 204."""
        if parts[:2] == ["_test", "metrics"]:
            return {"reports": list(reports)}
        if parts[:2] == ["_test", "table"]:
            return java_view(parts[2], parts[3])
        if parts[:2] == ["_test", "view"]:
            if method == "POST":
                return java_create_view(parts[2], parts[3], body)
            return java_view_of_view(parts[2], parts[3])
        if parts == ["v1", "config"]:
            overrides = {"prefix": args.prefix} if args.prefix else {}
            return {"defaults": {}, "overrides": overrides, "endpoints": ENDPOINTS}
        if parts[:1] != ["v1"] or parts[1 : 1 + len(prefix_parts)] != prefix_parts:
            raise LookupError("/".join(parts))
        rest = parts[1 + len(prefix_parts) :]
        q = {k: v[0] for k, v in query.items()}
        size = q.get("pageSize") or args.page_size
        page = (q.get("pageToken") or "", size) if size else (None, None)
        if rest == ["namespaces"]:
            if method == "GET":
                levels = q.get("parent", "").split("\x1f")
                parent = ns("%1F".join(quote(p, safe="") for p in levels))
                parent = parent if q.get("parent") else Namespace.empty()
                if page != (None, None):
                    return handlers.listNamespaces(catalog, parent, page[0], page[1])
                return handlers.listNamespaces(catalog, parent)
            return handlers.createNamespace(catalog, parse(body, "CreateNamespaceRequest"))
        if rest == ["tables", "rename"]:
            return handlers.renameTable(catalog, parse(body, "RenameTableRequest"))
        if rest == ["views", "rename"]:
            return handlers.renameView(catalog, parse(body, "RenameTableRequest"))
        if rest == ["transactions", "commit"]:
            return commit_transaction(parse(body, "CommitTransactionRequest"))
        if len(rest) == 2 and rest[0] == "namespaces":
            if method == "HEAD":
                return handlers.namespaceExists(catalog, ns(rest[1]))
            if method == "DELETE":
                return handlers.dropNamespace(catalog, ns(rest[1]))
            return handlers.loadNamespace(catalog, ns(rest[1]))
        if len(rest) == 3 and rest[2] == "properties":
            request = parse(body, "UpdateNamespacePropertiesRequest")
            return handlers.updateNamespaceProperties(catalog, ns(rest[1]), request)
        if len(rest) == 3 and rest[2] == "register":
            request = parse(body, "RegisterTableRequest")
            return handlers.registerTable(catalog, ns(rest[1]), request)
        if len(rest) == 3 and rest[2] == "tables":
            if method == "GET":
                if page != (None, None):
                    return handlers.listTables(catalog, ns(rest[1]), page[0], page[1])
                return handlers.listTables(catalog, ns(rest[1]))
            request = parse(body, "CreateTableRequest")
            if request.stageCreate():
                return handlers.stageTableCreate(catalog, ns(rest[1]), request)
            return handlers.createTable(catalog, ns(rest[1]), request)
        if len(rest) == 3 and rest[2] == "views":
            if method == "GET":
                if page != (None, None):
                    return handlers.listViews(catalog, ns(rest[1]), page[0], page[1])
                return handlers.listViews(catalog, ns(rest[1]))
            return handlers.createView(catalog, ns(rest[1]), parse(body, "CreateViewRequest"))
        if len(rest) == 4 and rest[2] == "views":
            view = ident(rest[1], rest[3])
            if method == "HEAD":
                return handlers.viewExists(catalog, view)
            if method == "DELETE":
                return handlers.dropView(catalog, view)
            if method == "POST":
                return handlers.updateView(catalog, view, parse(body, "UpdateTableRequest"))
            return handlers.loadView(catalog, view)
        if len(rest) == 5 and rest[2] == "tables" and rest[4] == "metrics":
            return report_metrics(body)
        if len(rest) == 4 and rest[2] == "tables":
            table = ident(rest[1], rest[3])
            if method == "HEAD":
                return handlers.tableExists(catalog, table)
            if method == "DELETE":
                if q.get("purgeRequested") == "true":
                    return handlers.purgeTable(catalog, table)
                return handlers.dropTable(catalog, table)
            if method == "POST":
                return handlers.updateTable(catalog, table, parse(body, "UpdateTableRequest"))
            return handlers.loadTable(catalog, table)
        raise LookupError("/".join(parts))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes

        def log_message(self, *a):
            pass

        def _serve(self):
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else None
            try:
                with lock:
                    result = route(self.command, parts, parse_qs(url.query), body)
                    if result is None:
                        status, text = 204, ""
                    elif isinstance(result, dict):
                        status, text = 200, json.dumps(result)
                    else:
                        status, text = 200, mapper.writeValueAsString(result)
            except LookupError as exc:
                status, text = 404, _error(404, "NoSuchResourceException", str(exc))
            except ValueError as exc:  # a body Java's parser refused
                status, text = 400, _error(400, "BadRequestException", str(exc))
            except Exception as exc:  # py4j's Java exception
                java = getattr(exc, "java_exception", None)
                if java is None:
                    status, text = 500, _error(500, type(exc).__name__, str(exc))
                else:
                    name = java.getClass().getSimpleName()
                    status = STATUS.get(name, 500)
                    text = _error(status, name, java.getMessage() or name)
            data = text.encode()
            self.send_response(status)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data and self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_HEAD = _serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("PORT", server.server_address[1], flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    server.shutdown()
    spark.stop()


def _error(code, kind, message):
    return json.dumps({"error": {"message": message, "type": kind, "code": code}})


if __name__ == "__main__":
    main()
