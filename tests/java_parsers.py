"""Java's REST JSON parsers as a line server, to judge icepark's scan planning JSON.

Run by the reference engine's interpreter (``.venv-ref/bin/python``, pyspark with Iceberg's
runtime jar)::

    java_parsers.py REFSPARK_DIR

It starts one Spark session only to reach a JVM holding Iceberg 1.10's classes (py4j), prints
``READY`` and then answers one JSON request per stdin line with one JSON line:

* ``{"op": "expressions", "items": [json, ...]}``: each item parsed by
  ``ExpressionParser.fromJson`` and written back by ``ExpressionParser.toJson``;
* ``{"op": "content-files", "schema": schema JSON, "specs": [spec JSON, ...],
  "items": [json, ...]}``: each item parsed by ``ContentFileParser.fromJson(node,
  specsById)`` and written back by ``ContentFileParser.toJson(file, spec)``;
* ``{"op": "scan-tasks", "schema": ..., "specs": [...], "items": [json, ...]}``: each page
  parsed by ``FetchScanTasksResponseParser.fromJson(node, specsById, true)`` and written back
  by its ``toJson`` (the tasks' residuals as Java's ``BaseFileScanTask`` gives them);
* ``{"op": "plan-request", "items": [json, ...]}``: each parsed by
  ``PlanTableScanRequestParser.fromJson`` and written back by its ``toJson``.

Each answer is ``{"results": [{"json": text} | {"error": message}, ...]}``. This is test
code: icepark ships no JVM code.
"""

import json
import sys


def main():
    sys.path.insert(0, sys.argv[1])
    import refspark

    spark = refspark.session(app="java-parsers")
    jvm = spark._jvm
    iceberg = jvm.org.apache.iceberg
    ExpressionParser = iceberg.expressions.ExpressionParser
    ContentFileParser = iceberg.ContentFileParser
    PlanRequestParser = iceberg.rest.requests.PlanTableScanRequestParser
    JsonUtil = iceberg.util.JsonUtil
    TasksParser = iceberg.rest.responses.FetchScanTasksResponseParser
    TasksResponse = iceberg.rest.responses.FetchScanTasksResponse
    print("READY", flush=True)

    def each(items, convert):
        results = []
        for item in items:
            try:
                results.append({"json": convert(json.dumps(item))})
            except Exception as exc:  # a py4j error: Java refused the JSON
                results.append({"error": str(exc).splitlines()[0][:500]})
        return results

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        specs = jvm.java.util.HashMap()
        if "schema" in request:
            schema = iceberg.SchemaParser.fromJson(json.dumps(request["schema"]))
            for spec_json in request["specs"]:
                spec = iceberg.PartitionSpecParser.fromJson(schema, json.dumps(spec_json))
                specs.put(spec.specId(), spec)
        if op == "expressions":
            results = each(
                request["items"], lambda t: ExpressionParser.toJson(ExpressionParser.fromJson(t))
            )
        elif op == "content-files":

            def content_file(text, specs=specs):
                parsed = ContentFileParser.fromJson(JsonUtil.mapper().readTree(text), specs)
                return ContentFileParser.toJson(parsed, specs.get(parsed.specId()))

            results = each(request["items"], content_file)
        elif op == "scan-tasks":

            def scan_tasks(text, specs=specs):
                parsed = TasksParser.fromJson(JsonUtil.mapper().readTree(text), specs, True)
                again = (
                    TasksResponse.builder()
                    .withFileScanTasks(parsed.fileScanTasks())
                    .withDeleteFiles(parsed.deleteFiles())
                    .withSpecsById(specs)
                    .build()
                )
                return TasksParser.toJson(again)

            results = each(request["items"], scan_tasks)
        elif op == "plan-request":
            results = each(
                request["items"], lambda t: PlanRequestParser.toJson(PlanRequestParser.fromJson(t))
            )
        else:
            results = [{"error": f"unknown op {op}"}]
        print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    main()
