"""What the executors tell a model: system prompts, user messages, nudges.

A caller's system prompt is a preamble before the default one, never a replacement, so
the contract (memory tools, output schema, ``finish_step``) cannot be bypassed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from weft.memory import AgentMemory, memory_tools_prompt_section, upstream_memory_hint
from weft.plan.types import Step
from weft.store import MISSING

FINISH_STEP: Final = "finish_step"

_EXECUTION: Final = """\
You are carrying out one step of a larger piece of work. Use the tools you are given
to do what the step asks, then report the step's result.

{memory}

## Finishing the step
- When the step is done, call `finish_step` with the result as `result`. The result
  must match the step's JSON Schema (it is in the tool's parameters); if it does not,
  the tool tells you why, and you call it again with a corrected result.
- A plain text answer does not end the step: only `finish_step` does.
- When the token budget runs low, `finish_step` is the only tool left: then call it
  with the best result you have."""

_FINISH_TASK: Final = """
- This step finishes its task: its result becomes the task's result, which later tasks
  read. Make it complete on its own."""

_TEAM: Final = """\
You are {name}, one member of a team working on a shared objective.{role}

## How the team works
- A shared task board lists the team's tasks. Claim an open task with `board_claim`
  before working on it, finish it with `board_complete` (your result) or give it up
  with `board_fail` (why). `board_add_task` adds a task others may claim.
- `send_message` writes to a teammate (or "*" for everyone); your new messages are
  shown to you at the start of each turn, and `read_messages` fetches them too.
- End your turn by answering in plain text when you have nothing more to do now.

## Shared Memory (progressive disclosure)
- Completed board tasks are in shared memory as task:<id>, with the caller's inputs
  (input:<name>) and facts teammates published (shared:<name>).
- Nothing of it is in this prompt: call `memory_list` to see what exists, and
  `memory_read` to load the values you need; `memory_write` publishes a fact of yours.
- Read only what your task needs."""

_PLANNER: Final = """\
You plan work for other agents. Split the objective into tasks, each a list of steps
with clear instructions, and submit the plan with the `submit_plan` tool. A task lists
in `depends_on` the tasks whose results it needs; a step lists the steps of its task it
needs. Task ids and step ids are unique. Later tasks read earlier results from memory,
so do not copy results into instructions."""

CONCLUSION_NOTE: Final = (
    "The token budget is nearly spent: `finish_step` is now the only tool. Call it with "
    "the best result you have."
)
NO_TEXT_ENDING: Final = (
    "A plain answer does not end this step. Call `finish_step` with your result (other "
    "tools remain available if you need them)."
)


def execution_system_prompt(*, preamble: str | None = None, finish_task: bool = False) -> str:
    """The system prompt of a step: the caller's preamble, then the default contract."""
    body = _EXECUTION.format(memory=memory_tools_prompt_section())
    if finish_task:
        body += _FINISH_TASK
    return f"{preamble.rstrip()}\n\n{body}" if preamble else body


def team_system_prompt(name: str, *, role: str = "", preamble: str | None = None) -> str:
    """The system prompt of a team member."""
    body = _TEAM.format(name=name, role=f" Your role: {role}" if role else "")
    return f"{preamble.rstrip()}\n\n{body}" if preamble else body


def planner_system_prompt(*, preamble: str | None = None) -> str:
    body = _PLANNER + "\n\n" + memory_tools_prompt_section()
    return f"{preamble.rstrip()}\n\n{body}" if preamble else body


def step_user_message(
    step: Step,
    *,
    upstream_keys: Iterable[str],
    memory: AgentMemory,
    task: tuple[str, str] | None = None,
    item: Any = MISSING,
) -> str:
    """The user message of a step: its instructions, its task, its work item (process
    mode), the schema its result must match, and the upstream keys (no values)."""
    parts = [f"# Step: {step.label}\n{step.instructions.strip()}"]
    if task is not None:
        name, description = task
        parts.append(f"# Task: {name}" + (f"\n{description.strip()}" if description else ""))
    if item is not MISSING:
        parts.append("# Item to process\n" + _json(item))
    if step.output_schema is not None:
        parts.append("# The result must match this JSON Schema\n" + _json(step.output_schema))
    parts.append(upstream_memory_hint(upstream_keys, memory))  # "" without keys
    return "\n\n".join(part for part in parts if part)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)
