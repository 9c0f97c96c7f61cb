"""Shared stores for deployments where many app servers serve the same sessions.

:mod:`harnessed.stores.postgres` keeps session logs (with full-text search), agent states and
their version checks in PostgreSQL. It needs the ``postgres`` extra
(``pip install 'harnessed[postgres]'``) and is imported only when used.
"""
