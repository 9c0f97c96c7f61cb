"""Back ends on local files: JSONL logs, SQLite and tantivy indexes, the file gate."""
