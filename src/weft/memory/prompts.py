"""What a model reads about memory: the system-prompt section, the upstream-key hint
of a user message, and the three tools' descriptions, JSON Schemas and limits.

Memory reaches a model by progressive disclosure: the prompt names keys, never
values, and the model pulls the values it needs through ``memory_read``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from weft.memory.agent_memory import MEMORY_KINDS, AgentMemory, parse_key

DEFAULT_MAX_VALUE_BYTES: Final = 256 * 1024
MAX_LIST_ENTRIES: Final = 200
MAX_READ_KEYS: Final = 50
MAX_KEY_CHARS: Final = 200
MAX_TITLE_CHARS: Final = 200
MAX_DESCRIPTION_CHARS: Final = 2000

_KIND_ENUM: Final = {"type": "string", "enum": list(MEMORY_KINDS)}

LIST_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "kind": {
            "description": "Only entries of this kind, or of any of these kinds.",
            "anyOf": [_KIND_ENUM, {"type": "array", "items": _KIND_ENUM, "minItems": 1}],
        },
        "key_prefix": {
            "type": "string",
            "description": "Only keys starting with this text, e.g. 'task:' or 'step:search'.",
        },
        "sources": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only entries written by one of these sources (agents, steps, tasks).",
        },
    },
    "additionalProperties": False,
}

READ_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_READ_KEYS,
            "description": "Full keys as memory_list shows them, e.g. ['task:research'].",
        },
    },
    "required": ["keys"],
    "additionalProperties": False,
}

WRITE_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "key": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_KEY_CHARS,
            "description": "Name of the fact, e.g. 'top_source'; it is stored as shared:<key>.",
        },
        "value": {"description": "The value to publish: any JSON (object, array, text, number)."},
        "title": {
            "type": "string",
            "maxLength": MAX_TITLE_CHARS,
            "description": "A short label other agents see in memory_list.",
        },
        "description": {
            "type": "string",
            "maxLength": MAX_DESCRIPTION_CHARS,
            "description": "One or two sentences on what the value is and how to use it.",
        },
    },
    "required": ["key", "value"],
    "additionalProperties": False,
}

WRITE_JSON_PARAMETERS: Final[Mapping[str, Any]] = {
    **WRITE_PARAMETERS,
    "properties": {
        "key": WRITE_PARAMETERS["properties"]["key"],
        "value_json": {
            "type": "string",
            "description": "The value to publish, as JSON text: '{\"a\": 1}', '[1, 2]', "
            "'\"some text\"' or '42'.",
        },
        "title": WRITE_PARAMETERS["properties"]["title"],
        "description": WRITE_PARAMETERS["properties"]["description"],
    },
    "required": ["key", "value_json"],
}
"""``memory_write`` 's arguments in strict mode, which cannot express "any JSON value":
the value comes as JSON text."""

FIX_HINTS: Final[Mapping[str, str]] = {
    "kind": f"give one of {', '.join(MEMORY_KINDS)}, or a non-empty list of them, or omit it",
    "key_prefix": "give text such as 'task:', or omit it",
    "sources": "give a list of source names such as ['research'], or omit it",
    "keys": f"give a list of 1 to {MAX_READ_KEYS} key strings, e.g. ['task:research']; "
    "split larger reads into several calls",
    "key": f"give a name of 1 to {MAX_KEY_CHARS} characters, e.g. 'top_source'",
    "value": "give any JSON value",
    "value_json": "give the value as JSON text, e.g. '{\"a\": 1}' or '\"some text\"'",
    "title": f"give a text of at most {MAX_TITLE_CHARS} characters, or omit it",
    "description": f"give a text of at most {MAX_DESCRIPTION_CHARS} characters, or omit it",
}


_SECTION = """\
## Memory Tools (progressive disclosure)
- A shared memory holds what earlier work produced: results of previous steps
  (step:<id>) and tasks (task:<id>), the caller's inputs (input:<name>), and
  facts other agents chose to publish (shared:<name>).
- None of it is in this prompt. Fetch it only when the work needs it:
  1. `memory_list` shows what exists: keys, kinds, titles, descriptions, who
     wrote each entry and how many bytes its value takes. No values.
  2. `memory_read` loads the values of the keys you pick.
  3. `memory_write` publishes a value of yours as shared:<name>, where other
     agents will find it with `memory_list`. Only shared: can be written.
- Keys named below under "Required upstream memory" can be read directly,
  without listing first.
- Read what you need and no more: large values cost context."""


def memory_tools_prompt_section() -> str:
    """The system-prompt section that tells a model how to use the memory tools."""
    return _SECTION


def upstream_memory_hint(keys: Iterable[str], memory: AgentMemory | None = None) -> str:
    """The user-message lines naming the memory keys a step depends on, never their values.

    Each key gets its entry's title when ``memory`` holds one. No keys gives ``""``.
    A malformed key is a ``MemoryKeyError``: a declared dependency with a typo is a
    wiring mistake, better caught here than by a model that cannot find it.
    """
    lines = []
    for key in dict.fromkeys(keys):
        parse_key(key)
        entry = memory.get(key) if memory is not None else None
        title = " ".join(entry.title.split()) if entry is not None and entry.title else ""
        lines.append(f"- {key} — {title}" if title else f"- {key}")
    if not lines:
        return ""
    return "# Required upstream memory (call `memory_read` with these keys):\n" + "\n".join(lines)


LIST_DESCRIPTION: Final = (
    "See what is in shared agent memory without loading any values: earlier step and "
    "task results, the caller's inputs, and facts other agents published. Returns, "
    "newest first, each entry's key, kind, title, description, source, value_bytes "
    f"(size of its JSON) and times; at most {MAX_LIST_ENTRIES} entries, with truncated=true "
    "when more matched (then narrow it with kind, key_prefix or sources). Call it "
    "before memory_read when you do not know the keys."
)
"""What ``memory_list`` tells a model about itself."""

READ_DESCRIPTION: Final = (
    "Load the full values of specific memory entries, by the keys memory_list or your "
    f"instructions give (e.g. 'task:research'); up to {MAX_READ_KEYS} keys per call. Returns "
    "entries by key, and 'missing' for keys that hold nothing. Read only what the work "
    "needs; value_bytes in memory_list says how large a value is."
)
"""What ``memory_read`` tells a model about itself."""


def write_tool_description(max_value_bytes: int) -> str:
    """What ``memory_write`` tells a model about itself."""
    return (
        "Publish a value to shared memory so other agents and later steps find it with "
        "memory_list. The key is stored as shared:<key> ('top_source' becomes "
        "'shared:top_source'); task:, step:, input: and state: keys belong to the system "
        "and are refused. Writing a key again replaces its value. Add a short title so "
        f"others know what it holds. Values are limited to {max_value_bytes} bytes of JSON."
    )
