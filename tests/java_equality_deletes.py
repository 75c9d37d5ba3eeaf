"""Writes equality deletes through the reference engine's Java API (Spark SQL cannot).

Run with the reference engine's interpreter (tests/refengine.py's REF_VENV):

    .venv-ref/bin/python tests/java_equality_deletes.py REFSPARK_DIR ROOT FORMAT...

For each FORMAT, makes the v2 table ``db.eq`` (id int, part string, v string), partitioned by
``part``, in a Hadoop catalog at ROOT/FORMAT (one JVM for all of them); commits, through Java's ``GenericAppenderFactory`` and
``RowDelta``, an equality delete on ``id`` in partition ``a`` and one on ``v`` in partition
``b``; then inserts a row whose id was deleted (newer data: the delete does not apply to it).
FORMAT (parquet, avro or orc) is the table's ``write.format.default`` and the format of the
equality delete files. Prints the rows the Java implementation reads, as one JSON object
``{format: rows}``.

Tests get these tables through ``tests/conftest.py``'s ``java_equality_deletes`` fixture,
which runs this once for the whole test run (every xdist worker) and shares the result.
"""

import json
import os
import sys


def main(refspark_dir: str, root: str, *formats: str) -> None:
    sys.path.insert(0, refspark_dir)
    from refspark import session

    spark = session(os.path.join(root, formats[0]))
    out = {}
    for file_format in formats:
        catalog = f"spark.sql.catalog.ref_{file_format}"
        spark.conf.set(catalog, "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"{catalog}.type", "hadoop")
        spark.conf.set(
            f"{catalog}.warehouse", "file://" + os.path.abspath(os.path.join(root, file_format))
        )
        out[file_format] = _table(spark, f"ref_{file_format}", file_format)
    print(json.dumps(out))
    spark.stop()


def _table(spark, ref: str, file_format: str) -> list:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ref}.db")
    spark.sql(
        f"CREATE TABLE {ref}.db.eq (id int, part string, v string) USING iceberg"
        " PARTITIONED BY (part) TBLPROPERTIES ('format-version'='2',"
        f" 'write.format.default'='{file_format}')"
    )
    spark.sql(f"INSERT INTO {ref}.db.eq VALUES (1,'a','x'), (2,'a','y'), (3,'b','z'), (4,'b','w')")
    spark.sql(f"INSERT INTO {ref}.db.eq VALUES (5,'a','y'), (6,'b','w')")
    jvm = spark._jvm
    gateway = spark.sparkContext._gateway
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, f"{ref}.db.eq"
    )
    schema, spec = table.schema(), table.spec()
    row_delta = table.newRowDelta()
    for n, (column, part, values) in enumerate([("id", "a", [2, 5]), ("v", "b", ["w"])]):
        names = jvm.java.util.ArrayList()
        names.add(column)
        delete_schema = schema.select(names)
        ids = gateway.new_array(jvm.int, 1)
        ids[0] = schema.findField(column).fieldId()
        factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(
            schema, spec, ids, delete_schema, None
        )
        partition = jvm.org.apache.iceberg.data.GenericRecord.create(spec.partitionType())
        partition.setField("part", part)
        location = f"{table.location()}/data/part={part}/java-eq-delete-{n}.{file_format}"
        output = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
            table.io().newOutputFile(location)
        )
        writer = factory.newEqDeleteWriter(
            output, jvm.org.apache.iceberg.FileFormat.valueOf(file_format.upper()), partition
        )
        for value in values:
            record = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
            record.setField(column, value)
            writer.write(record)
        writer.close()
        row_delta.addDeletes(writer.toDeleteFile())
    row_delta.commit()
    spark.sql(f"INSERT INTO {ref}.db.eq VALUES (2,'a','again')")
    rows = spark.sql(f"SELECT id, part, v FROM {ref}.db.eq").collect()
    return sorted([list(r) for r in rows])


if __name__ == "__main__":
    main(*sys.argv[1:])
