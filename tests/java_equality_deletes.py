"""Writes equality deletes through the reference engine's Java API (Spark SQL cannot).

Run with the reference engine's interpreter (tests/refengine.py's REF_VENV):

    .venv-ref/bin/python tests/java_equality_deletes.py REFSPARK_DIR WAREHOUSE [FORMAT]

Makes the v2 table ``db.eq`` (id int, part string, v string), partitioned by ``part``, in a
Hadoop catalog at WAREHOUSE; commits, through Java's ``GenericAppenderFactory`` and
``RowDelta``, an equality delete on ``id`` in partition ``a`` and one on ``v`` in partition
``b``; then inserts a row whose id was deleted (newer data: the delete does not apply to it).
FORMAT (parquet, avro or orc; parquet by default) is the table's ``write.format.default``
and the format of the equality delete files. Prints the rows the Java implementation reads,
as one JSON list.
"""

import json
import sys


def main(refspark_dir: str, warehouse: str, file_format: str = "parquet") -> None:
    sys.path.insert(0, refspark_dir)
    from refspark import session

    spark = session(warehouse)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ref.db")
    spark.sql(
        "CREATE TABLE ref.db.eq (id int, part string, v string) USING iceberg"
        " PARTITIONED BY (part) TBLPROPERTIES ('format-version'='2',"
        f" 'write.format.default'='{file_format}')"
    )
    spark.sql("INSERT INTO ref.db.eq VALUES (1,'a','x'), (2,'a','y'), (3,'b','z'), (4,'b','w')")
    spark.sql("INSERT INTO ref.db.eq VALUES (5,'a','y'), (6,'b','w')")
    jvm = spark._jvm
    gateway = spark.sparkContext._gateway
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, "ref.db.eq"
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
    spark.sql("INSERT INTO ref.db.eq VALUES (2,'a','again')")
    rows = spark.sql("SELECT id, part, v FROM ref.db.eq").collect()
    print(json.dumps(sorted([list(r) for r in rows])))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
