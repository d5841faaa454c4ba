"""What a ``ToolAgent`` tells its model: the system prompt (the caller's preamble, then
weft's section, which a caller cannot replace), the first user message, and the note that
starts the conclusion stage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from weft.agent.toolbox import FINISH
from weft.memory import AgentMemory, memory_tools_prompt_section, upstream_memory_hint

_WORKING: Final = f"""\
## Working with tools
- Use the tools you are given to do the task. Call several at once when they do not
  depend on each other: they run side by side, and each result comes back to you as a
  tool message.
- A result with "ok": false says what went wrong (an unknown tool, arguments that do not
  fit, a tool that failed) and how to call again; read it before you retry.
- When you have the answer, reply with it in plain text and call no tool: that ends the
  work.
- When the budget (model calls, tokens or time) is nearly spent, `{FINISH}` is the only
  tool offered: call it at once with the best answer you have."""

CONCLUSION_NOTE: Final = (
    f"The budget is nearly spent: `{FINISH}` is now the only tool. Call it with the best "
    "answer you have."
)


def tool_agent_system_prompt(*, preamble: str | None = None, memory: bool = True) -> str:
    """The system prompt of a tool-calling agent: ``preamble`` (the caller's prompt) first,
    then how to work with tools and, with ``memory``, how to use the memory tools."""
    body = _WORKING
    if memory:
        body += "\n\n" + memory_tools_prompt_section()
    if preamble and preamble.strip():
        return f"{preamble.rstrip()}\n\n{body}"
    return body


def first_user_message(task: str, upstream_keys: Iterable[str], memory: AgentMemory | None) -> str:
    """The task, then the memory keys it depends on (names and titles, never values)."""
    hint = upstream_memory_hint(upstream_keys, memory)
    return f"{task}\n\n{hint}" if hint else task
