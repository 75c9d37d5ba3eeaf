"""Iceberg SQL on PySpark (no JVM extensions): statements parsed in Python, each run through
icepark's own operations and Spark's native reader and writer."""
