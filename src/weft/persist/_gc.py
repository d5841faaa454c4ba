"""Pausing the cyclic garbage collector while a load builds many containers.

Decoding a large snapshot allocates hundreds of thousands of dicts and lists, and each
few hundred allocations trigger a collection that walks the young objects; collections
that reach the old generation walk everything alive. The loaded values hold no cycles,
so pausing the collector while they are built loses nothing and makes a large load
about three times faster. Nested and concurrent pauses count, so the collector comes
back when the last one ends (and only if it was on to begin with).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic collector for the block."""
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
