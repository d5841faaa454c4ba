"""What the MCP tests send: refused keys and bad arguments, with what the error must say."""

from __future__ import annotations

REFUSED_KEYS = ["task:x", "step:plan", "input:topic", "state:cfg"]

BAD_CALLS: list[tuple[str, dict[str, object], str]] = [
    ("memory_write", {"value": 1}, "missing required argument 'key'"),
    ("memory_write", {"key": "k", "value": 1, "owner": "me"}, "unknown argument 'owner'"),
    ("memory_write", {"key": "", "value": 1}, "argument 'key' is invalid"),
    ("memory_read", {"keys": "task:research"}, "argument 'keys' is invalid"),
    ("memory_read", {"keys": []}, "argument 'keys' is invalid"),
    ("memory_list", {"kind": "secrets"}, "argument 'kind' is invalid"),
    ("memory_delete", {"key": "k"}, "there is no memory tool named 'memory_delete'"),
]
