"""The run's SQLite database and every SQL statement of the package: the store (one writer,
named migrations), queries, retrieval and embeddings, the steering queue, lineage, and the run
folder's one owner (run_dir)."""
