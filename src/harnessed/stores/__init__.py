"""Shared stores for deployments where many app servers serve the same sessions.

:mod:`harnessed.stores.postgres` keeps session logs (with full-text search), agent states and
their version checks in PostgreSQL. It needs the ``postgres`` extra
(``pip install 'harnessed[postgres]'``) and is imported only when used.
:mod:`harnessed.stores.choice` picks an agent's stores from its ``store=`` setting and workspace.
"""

from harnessed.stores.choice import AgentStores, SharedStore, agent_stores, open_store

__all__ = ["AgentStores", "SharedStore", "agent_stores", "open_store"]
