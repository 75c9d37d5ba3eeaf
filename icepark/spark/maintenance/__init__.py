"""The Spark actions (Java's procedures): :mod:`.rewrite_data_files`,
:mod:`.rewrite_position_delete_files`, :mod:`.remove_orphan_files` and :mod:`.add_files`."""
