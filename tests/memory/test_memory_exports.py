"""The public names of weft.memory are a contract (DESIGN.md, "Names")."""

from __future__ import annotations

import subprocess
import sys

import weft.memory
import weft.memory.backends


def test_public_names() -> None:
    assert weft.memory.__all__ == [
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
    for name in weft.memory.__all__:
        assert getattr(weft.memory, name) is not None


def test_the_backends_public_names() -> None:
    assert weft.memory.backends.__all__ == [
        "InMemoryMemoryBackend",
        "MemoryBackend",
        "MemoryRecord",
        "PostgresMemoryBackend",
        "SQLiteMemoryBackend",
        "memory_backend",
    ]
    for name in weft.memory.backends.__all__:
        assert getattr(weft.memory, name) is getattr(weft.memory.backends, name)


def test_importing_memory_loads_no_heavy_dependencies() -> None:
    code = (
        "import sys, weft.memory; "
        "print(sorted(m for m in ('rich', 'typer', 'jsonschema', 'weft.graph', 'weft.cli', "
        "'psycopg', 'psycopg_pool') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
