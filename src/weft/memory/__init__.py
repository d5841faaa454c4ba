"""AgentMemory over the store, its three LLM tools and their prompt text, and
long-term memory: owner-scoped entries, working-memory entries, recall, and
the memory backends that keep them (in-memory, SQLite, PostgreSQL)."""

from weft.memory.agent_memory import (
    AgentMemory,
    MemoryEntry,
    MemoryEvent,
    MemoryKind,
    memory_keys,
)
from weft.memory.backends import (
    InMemoryMemoryBackend,
    MemoryBackend,
    MemoryRecord,
    PostgresMemoryBackend,
    SQLiteMemoryBackend,
    memory_backend,
)
from weft.memory.long_term import LongTermMemory, Owner
from weft.memory.prompts import memory_tools_prompt_section, upstream_memory_hint
from weft.memory.recall import (
    EmbeddingProvider,
    HashingEmbedder,
    RecallHit,
    RecallResult,
    SentenceTransformerEmbedder,
)
from weft.memory.tools import MemoryTool, MemoryTools, memory_tools
from weft.memory.working import (
    EpisodicWorkingMemoryEntry,
    SemanticWorkingMemoryEntry,
    WorkingMemoryEntry,
    format_working_memory_entries,
    format_working_memory_entry,
)

__all__ = [
    "AgentMemory",
    "EmbeddingProvider",
    "EpisodicWorkingMemoryEntry",
    "HashingEmbedder",
    "InMemoryMemoryBackend",
    "LongTermMemory",
    "MemoryBackend",
    "MemoryEntry",
    "MemoryEvent",
    "MemoryKind",
    "MemoryRecord",
    "MemoryTool",
    "MemoryTools",
    "Owner",
    "PostgresMemoryBackend",
    "RecallHit",
    "RecallResult",
    "SQLiteMemoryBackend",
    "SemanticWorkingMemoryEntry",
    "SentenceTransformerEmbedder",
    "WorkingMemoryEntry",
    "format_working_memory_entries",
    "format_working_memory_entry",
    "memory_backend",
    "memory_keys",
    "memory_tools",
    "memory_tools_prompt_section",
    "upstream_memory_hint",
]
