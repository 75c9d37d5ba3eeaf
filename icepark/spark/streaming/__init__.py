"""Structured Streaming: the source (:mod:`.source`), the exactly-once sink (:mod:`.sink`) and
the functions that start queries on them (:mod:`.queries`)."""
