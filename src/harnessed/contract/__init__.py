"""The task contract: a session's task, its requirements and their verification."""
