"""The tool-calling loop's own cost per model call, against a plain loop doing the same.

Every run is ten model calls: nine replies that call ``add`` (a trivial function with a
JSON Schema) and a last one that answers in text. The model is a ``ScriptedChatModel``
answering at once, so every microsecond beyond the floor is the loop's.

- floor: a plain ``async`` loop that asks the model (the same messages and tool
  definitions), calls ``add`` with the reply's arguments, and appends the reply and the
  result message, until the model answers in text: what any tool loop must do.
- ToolAgent: ``agent.arun(task)`` (checks every call against the tool's schema and
  signature, builds the result, counts calls), in memory, without a run id (nothing
  recorded); then with a run id on an in-memory store (every reply and result recorded,
  one commit each, as on a durable store); then with two async calls per reply, run side
  by side; then as ``astream`` (every event to the caller).

Cells are sampled in turn, round after round (``harness.samples``); each sample is a batch
of runs on one event loop, the thread's CPU time (``time.thread_time_ns``: on a shared
machine the wall clock also counts the time other processes hold the core), in microseconds
per model call. Overhead is the median over rounds of the cell minus its floor of the same
round, as ``bench_agent.py`` measures the action agent's loop.

    .venv/bin/python bench/bench_tool_loop.py [--quick]
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from harness import block, machine, samples, us

from weft.agent import ToolAgent
from weft.calls import Tool
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolCall
from weft.store import Store

CALLS = 10
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
ONE = AssistantMessage(tool_calls=(ToolCall.create("add", {"a": 2, "b": 3}, id="c1"),))
TWO = AssistantMessage(
    tool_calls=(
        ToolCall.create("aadd", {"a": 2, "b": 3}, id="c1"),
        ToolCall.create("aadd", {"a": 4, "b": 5}, id="c2"),
    )
)
DONE = AssistantMessage(content="5")


def add(a: int, b: int) -> int:
    return a + b


async def aadd(a: int, b: int) -> int:
    return a + b


def scripted(reply: AssistantMessage) -> ScriptedChatModel:
    """A model that calls tools until it has made CALLS - 1 replies, then answers."""

    def script(messages: list[ChatMessage], tools: Any) -> AssistantMessage:
        made = sum(1 for m in messages if m.role == "assistant")
        return reply if made < CALLS - 1 else DONE

    return ScriptedChatModel(script)


def batch(run: Callable[[], Awaitable[Any]], runs: int) -> Callable[[], float]:
    """A cell: ``runs`` runs on one event loop, in microseconds per model call."""
    loop = asyncio.new_event_loop()

    async def many() -> None:
        for _ in range(runs):
            await run()

    def sample() -> float:
        started = time.thread_time_ns()
        loop.run_until_complete(many())
        return (time.thread_time_ns() - started) / runs / CALLS / 1000

    return sample


def main(quick: bool) -> None:
    runs, rounds = (20, 5) if quick else (100, 15)
    tool = Tool(name="add", fn=add, description="Add.", parameters=SCHEMA)
    atool = Tool(name="aadd", fn=aadd, description="Add.", parameters=SCHEMA)
    model = scripted(ONE)
    specs = list(ToolAgent(model, tools=[tool], memory_tools=False).offered)

    def floor_of(model: ScriptedChatModel, offered: list[Any]) -> Callable[[], Awaitable[None]]:
        async def floor() -> None:
            messages = [ChatMessage.system("You add."), ChatMessage.user("2 + 3?")]
            while True:
                reply = await model.achat(tuple(messages), tools=offered)
                messages.append(reply.to_message())
                if not reply.tool_calls:
                    return
                if len(reply.tool_calls) == 1:
                    done = [add(**reply.tool_calls[0].arguments)]
                else:  # side by side, as the agent runs them
                    done = await asyncio.gather(*(aadd(**c.arguments) for c in reply.tool_calls))
                for call, result in zip(reply.tool_calls, done, strict=True):
                    messages.append(ChatMessage.tool(str(result), tool_call_id=call.id))

        return floor

    plain = ToolAgent(model, tools=[tool], memory_tools=False)
    with_memory = ToolAgent(model, tools=[tool])
    two_model = scripted(TWO)
    side_by_side = ToolAgent(two_model, tools=[atool], memory_tools=False)
    two_specs = list(side_by_side.offered)
    memory_specs = list(with_memory.offered)
    ids = itertools.count()
    recorded_agents: list[ToolAgent] = []

    def recorded() -> Awaitable[Any]:
        if not recorded_agents or next(ids) % 200 == 0:  # a fresh store now and then
            recorded_agents[:] = [ToolAgent(model, tools=[tool], memory_tools=False, store=Store())]
        return recorded_agents[0].arun("2 + 3?", run_id=f"run-{next(ids)}")

    async def streamed() -> None:
        async for _event in plain.astream("2 + 3?"):
            pass

    cells = {
        "floor": batch(floor_of(model, specs), runs),
        "floor memory": batch(floor_of(model, memory_specs), runs),
        "floor two": batch(floor_of(two_model, two_specs), runs),
        "plain": batch(lambda: plain.arun("2 + 3?"), runs),
        "memory": batch(lambda: with_memory.arun("2 + 3?"), runs),
        "recorded": batch(recorded, runs),
        "two": batch(lambda: side_by_side.arun("2 + 3?"), runs),
        "stream": batch(streamed, runs),
    }
    taken = samples(cells, rounds)
    found = {name: statistics.median(values) for name, values in taken.items()}

    def over(key: str, floor: str) -> float:
        """The median over rounds of ``key``'s sample minus ``floor``'s of the same round."""
        return statistics.median(a - b for a, b in zip(taken[key], taken[floor], strict=True))

    rows = [  # label, cell, the floor doing the same work
        ("floor: model + tool in a plain loop", "floor", None),
        ("ToolAgent, in memory, no run id", "plain", "floor"),
        ("ToolAgent.astream, every event to the caller", "stream", "floor"),
        ("ToolAgent, recorded (run id, in-memory store)", "recorded", "floor"),
        ("floor, offering the 3 memory tools too", "floor memory", None),
        ("ToolAgent, memory tools attached (the default)", "memory", "floor memory"),
        ("floor, 2 async calls per reply (gather)", "floor two", None),
        ("ToolAgent, 2 async calls per reply side by side", "two", "floor two"),
    ]
    lines = [
        "| case | per model call | loop overhead |",
        "|---|---:|---:|",
    ]
    for label, key, floor in rows:
        extra = "" if floor is None else us(over(key, floor))
        lines.append(f"| {label} | {us(found[key])} | {extra} |")
    own = over("plain", "floor")
    notes = (
        f"\nTen model calls per run (nine replies calling a tool, one answer); CPU time, "
        f"medians of {rounds} rounds of {runs} runs. Overhead = the median over rounds of the "
        "row minus the floor above it of the same round; the floor asks the same model with "
        "the same tools and makes the same calls. The loop's own cost per model call, in "
        f"memory, no run id: {us(own)}, target under 50 us: "
        f"{'met' if own < 50 else 'NOT met'}. {machine()}"
    )
    block("tool-loop", "\n".join(lines) + "\n" + notes)


if __name__ == "__main__":
    main("--quick" in sys.argv)
