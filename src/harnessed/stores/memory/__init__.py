"""Back ends in memory, for tests and short-lived agents."""
