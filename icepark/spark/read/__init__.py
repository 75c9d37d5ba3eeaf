"""Batch reads on Spark: the native and Python read paths (:mod:`.reader`), deleted positions
applied on the native path (:mod:`.positions`) and metadata tables as DataFrames
(:mod:`.metadata_tables`)."""
