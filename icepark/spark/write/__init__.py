"""Writes on Spark: appends and overwrites (:mod:`.writer`), row-level delete, update and
merge (:mod:`.row_level`), and what a write task does with its rows (:mod:`.task_files`)."""
