"""``WorkflowContext``: the runtime dependencies of a turn, injected into nodes and loaders.

Model clients, the memory store and loggers are not state: they cannot be serialised and
must not be checkpointed, so they ride on this frozen dataclass instead.

>>> from weft.memory import InMemoryMemoryBackend, Owner
>>> context = WorkflowContext(memory_store=InMemoryMemoryBackend(), owner=Owner(user_id="ada"))
>>> context.memory.owner
'user:ada'
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weft.errors import TurnError
from weft.memory import LongTermMemory, MemoryBackend, Owner
from weft.persist import Backend

if TYPE_CHECKING:
    from weft.memory import EmbeddingProvider


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowContext:
    """What a turn may use besides its state; subclass it for your own dependencies.
    ``thread_id``, ``turn`` and ``owner`` are set by the runtime at each turn start."""

    llm_client: Any = None
    response_llm: Any = None
    memory_store: MemoryBackend | Backend | None = None
    embedding_provider: EmbeddingProvider | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("weft.runtime"))
    thread_id: str | None = None
    turn: int = 0
    owner: Owner | None = None

    @property
    def memory(self) -> LongTermMemory:
        """This turn owner's long-term memory (user id if given, else the thread's session)."""
        if self.memory_store is None:
            raise TurnError(
                "this context has no memory_store, so there is no long-term memory to read; "
                "pass memory_store= to TurnRuntime (it defaults to the checkpointer's "
                "database) or WorkflowContext(memory_store=...)"
            )
        if self.owner is None:
            raise TurnError(
                "context.memory is per owner, and this context has none: it is set at turn "
                "start from the input's user_id, else the thread id; read it inside a turn"
            )
        return LongTermMemory(self.memory_store, owner=self.owner, embedder=self.embedding_provider)


def working_memory_loader(*, query: str = "message", k: int = 8) -> Callable[..., Any]:
    """A ``Loaded`` loader for seed 004's ``working_memory``: at most ``k`` of the owner's
    entries recalled for the field ``query``::

        working_memory: Annotated[list[Any], Loaded(working_memory_loader())]
    """

    def load_working_memory(context: WorkflowContext, state: Any) -> Any:
        text = state.get(query)
        return context.memory.working_memory(text if isinstance(text, str) else None, k=k)

    return load_working_memory
