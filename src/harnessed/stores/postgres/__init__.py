"""PostgreSQL backends: session log with full-text search, agent states, turn gate, turn feed,
wake-ups, migrations.

``PostgresStore(url)`` is the one object an application creates (or passes
``store="postgresql://..."`` to :class:`~harnessed.HarnessAgent`); its parts implement the same
protocols as the file stores, so everything built on them behaves the same.
"""

from harnessed.stores.postgres.connection import PostgresStore, is_postgres_url
from harnessed.stores.postgres.feed import PostgresTurnFeed
from harnessed.stores.postgres.gate import PostgresTurnGate
from harnessed.stores.postgres.log import PostgresSessionLogStore
from harnessed.stores.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from harnessed.stores.postgres.search import PostgresSearchIndex
from harnessed.stores.postgres.state import PostgresStateStore

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "PostgresSearchIndex",
    "PostgresSessionLogStore",
    "PostgresStateStore",
    "PostgresStore",
    "PostgresTurnFeed",
    "PostgresTurnGate",
    "is_postgres_url",
]
