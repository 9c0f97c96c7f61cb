"""Pausing Python's cyclic garbage collector while a whole session log is replayed.

Replaying a long log makes hundreds of thousands of long-lived objects (messages, blocks,
records) in one go. The collector would scan the growing heap again and again while they are
made (at 100,000 messages that doubled the time of a first load), although none of them is
garbage. :func:`gc_paused` turns it off for such a bulk load and back on after it; nested
and concurrent pauses (several sessions loading at once, in threads too) keep it off until the
last one ends, and never turn on a collector the application had turned off.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside (reference counting still frees what is unused)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
