"""A persistent sorted set of string keys, for prefix listing in O(log n + k).

Keys live in sorted chunks held in tuples. Adding or removing a key builds a
new chunk and a new top-level tuple and shares every other chunk, so a copy
(a fork of the store) costs nothing and a change costs about
``CHUNK + n / CHUNK`` pointer copies, done in C: flat in practice up to
millions of keys, where a plain sorted list would copy the whole list for
every fork that adds a key.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Final

CHUNK: Final = 256


class SortedKeys:
    """Immutable: ``add`` and ``remove`` return a new set sharing structure with this one."""

    __slots__ = ("_chunks", "_len", "_maxes")

    def __init__(
        self,
        chunks: tuple[tuple[str, ...], ...] = (),
        maxes: tuple[str, ...] = (),
        length: int = 0,
    ) -> None:
        self._chunks = chunks
        self._maxes = maxes
        self._len = length

    def __len__(self) -> int:
        return self._len

    def __contains__(self, key: str) -> bool:
        at = bisect_left(self._maxes, key)
        if at == len(self._maxes):
            return False
        chunk = self._chunks[at]
        pos = bisect_left(chunk, key)
        return pos < len(chunk) and chunk[pos] == key

    def add(self, key: str) -> SortedKeys:
        """This set with ``key``; ``self`` if it was there already."""
        chunks, maxes = self._chunks, self._maxes
        if not chunks:
            return SortedKeys(((key,),), (key,), 1)
        at = bisect_left(maxes, key)
        if at == len(maxes):
            at -= 1  # beyond every key: goes at the end of the last chunk
        chunk = chunks[at]
        pos = bisect_left(chunk, key)
        if pos < len(chunk) and chunk[pos] == key:
            return self
        grown = chunk[:pos] + (key,) + chunk[pos:]
        if len(grown) > 2 * CHUNK:
            half = len(grown) // 2
            new_chunks = chunks[:at] + (grown[:half], grown[half:]) + chunks[at + 1 :]
            new_maxes = maxes[:at] + (grown[half - 1], grown[-1]) + maxes[at + 1 :]
        else:
            new_chunks = chunks[:at] + (grown,) + chunks[at + 1 :]
            new_maxes = maxes[:at] + (grown[-1],) + maxes[at + 1 :]
        return SortedKeys(new_chunks, new_maxes, self._len + 1)

    def remove(self, key: str) -> SortedKeys:
        """This set without ``key``; ``self`` if it was not there."""
        chunks, maxes = self._chunks, self._maxes
        at = bisect_left(maxes, key)
        if at == len(maxes):
            return self
        chunk = chunks[at]
        pos = bisect_left(chunk, key)
        if pos == len(chunk) or chunk[pos] != key:
            return self
        shrunk = chunk[:pos] + chunk[pos + 1 :]
        if shrunk:
            new_chunks = chunks[:at] + (shrunk,) + chunks[at + 1 :]
            new_maxes = maxes[:at] + (shrunk[-1],) + maxes[at + 1 :]
        else:
            new_chunks = chunks[:at] + chunks[at + 1 :]
            new_maxes = maxes[:at] + maxes[at + 1 :]
        return SortedKeys(new_chunks, new_maxes, self._len - 1)

    def with_prefix(self, prefix: str) -> Iterator[str]:
        """Keys starting with ``prefix``, in sorted order."""
        chunks = self._chunks
        at = bisect_left(self._maxes, prefix)
        if at == len(chunks):
            return
        pos = bisect_left(chunks[at], prefix)
        for chunk in chunks[at:]:
            for i in range(pos, len(chunk)):
                key = chunk[i]
                if not key.startswith(prefix):
                    return
                yield key
            pos = 0

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks:
            yield from chunk
