"""AgentMemory (seed 001) over the store, its three LLM tools, and the prompt text about them."""

from weft.memory.agent_memory import (
    AgentMemory,
    MemoryEntry,
    MemoryEvent,
    MemoryKind,
    memory_keys,
)
from weft.memory.prompts import memory_tools_prompt_section, upstream_memory_hint
from weft.memory.tools import MemoryTool, MemoryTools, memory_tools

__all__ = [
    "AgentMemory",
    "MemoryEntry",
    "MemoryEvent",
    "MemoryKind",
    "MemoryTool",
    "MemoryTools",
    "memory_keys",
    "memory_tools",
    "memory_tools_prompt_section",
    "upstream_memory_hint",
]
