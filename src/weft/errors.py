"""Every error weft raises on purpose, as one tree.

    WeftError
    ├── StoreError                 the store refused a write or a read
    │   ├── InvalidKeyError        a kind or path that is not well formed
    │   ├── ValueTypeError         a value that is not JSON-serialisable
    │   ├── ReducerError           a reducer declared twice, or one that failed
    │   ├── MissingEntryError      a read of a key that holds nothing
    │   ├── MergeConflictError     two branches wrote one last-write-wins field
    │   └── CodecError             JSON that cannot be decoded into values
    ├── MemoryKeyError             an AgentMemory key whose namespace and kind disagree
    └── GraphError                 the WorkGraph engine
        ├── GraphBuildError        wired wrong: found before anything runs
        ├── NodeError              a node raised while the graph ran
        └── NodeTimeoutError       a node ran past its timeout

Build-time errors (a graph wired wrong) and run-time errors (a node that
raised) are separate families, so callers can tell a bug in their wiring from
a failure in their work. Every message names what was involved (key, field,
node) and says how to fix it.
"""

from __future__ import annotations


class WeftError(Exception):
    """Base class of every error weft raises on purpose."""


class StoreError(WeftError):
    """The store refused an operation."""


class InvalidKeyError(StoreError, ValueError):
    """A kind or path that is not well formed."""


class ValueTypeError(StoreError, TypeError):
    """A value that cannot be stored because it is not JSON-serialisable."""


class ReducerError(StoreError):
    """A reducer declared twice with different functions, or one that raised."""


class MissingEntryError(StoreError, KeyError):
    """A read of a key that holds nothing."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MergeConflictError(StoreError):
    """Two forks wrote the same last-write-wins field."""


class CodecError(StoreError, ValueError):
    """Stored JSON that cannot be turned back into values."""


class MemoryKeyError(WeftError, ValueError):
    """An AgentMemory key whose namespace does not match its kind."""


class GraphError(WeftError):
    """The WorkGraph engine."""


class GraphBuildError(GraphError, ValueError):
    """A graph wired wrong: a cycle, an empty graph, a pass-down a node cannot take."""


class NodeError(GraphError):
    """A node raised while the graph ran; the original exception is the cause."""


class NodeTimeoutError(NodeError, TimeoutError):
    """A node ran longer than its timeout."""
