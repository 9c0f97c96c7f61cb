"""Wake-ups: an agent asks to be woken later ("check the build every hour", "remind me
tomorrow") and a turn starts in the same session then, with its note.

* :class:`Wakeups` — the capability: the ``schedule_wakeup`` / ``list_wakeups`` /
  ``cancel_wakeup`` tools and the application API (``schedule``, ``pending``, ``cancel``);
  :class:`WakeupsConfig` its limits.
* :class:`WakeupScheduler`, :class:`WakeupStore` — where wake-ups wait (protocols);
  :class:`MemoryWakeupStore`, :class:`SqliteWakeupStore` and (PostgreSQL)
  :class:`~harnessed.wakeups.postgres.PostgresWakeupStore`.
* :class:`WakeupDispatcher` — fires the due ones, exactly once across processes
  (``harnessed serve`` runs one); :func:`fire_wakeup` starts one woken turn.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.wakeups.capability import Wakeups, default_wakeup_store
    from harnessed.wakeups.dispatcher import (
        OnWoken,
        WakeupDispatcher,
        fire_wakeup,
        wakeup_message,
    )
    from harnessed.wakeups.spec import Wakeup, WakeupError, WakeupLimitError, WakeupsConfig
    from harnessed.wakeups.sqlite import SqliteWakeupStore
    from harnessed.wakeups.store import MemoryWakeupStore, WakeupScheduler, WakeupStore

__all__ = [
    "MemoryWakeupStore",
    "OnWoken",
    "SqliteWakeupStore",
    "Wakeup",
    "WakeupDispatcher",
    "WakeupError",
    "WakeupLimitError",
    "WakeupScheduler",
    "WakeupStore",
    "Wakeups",
    "WakeupsConfig",
    "default_wakeup_store",
    "fire_wakeup",
    "wakeup_message",
]

_LAZY = {
    "MemoryWakeupStore": "harnessed.wakeups.store",
    "OnWoken": "harnessed.wakeups.dispatcher",
    "SqliteWakeupStore": "harnessed.wakeups.sqlite",
    "Wakeup": "harnessed.wakeups.spec",
    "WakeupDispatcher": "harnessed.wakeups.dispatcher",
    "WakeupError": "harnessed.wakeups.spec",
    "WakeupLimitError": "harnessed.wakeups.spec",
    "WakeupScheduler": "harnessed.wakeups.store",
    "WakeupStore": "harnessed.wakeups.store",
    "Wakeups": "harnessed.wakeups.capability",
    "WakeupsConfig": "harnessed.wakeups.spec",
    "default_wakeup_store": "harnessed.wakeups.capability",
    "fire_wakeup": "harnessed.wakeups.dispatcher",
    "wakeup_message": "harnessed.wakeups.dispatcher",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
