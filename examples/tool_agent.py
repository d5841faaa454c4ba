"""A tool-calling agent, offline and durable: tools side by side, memory, a person's
approval across a restart.

    .venv/bin/python examples/tool_agent.py

The model is scripted (it answers as a model would, from the conversation it is shown), so
this runs without a network; put ``OpenAIChatModel("gpt-4o-mini")`` in its place for a
real one. The run lives in a SQLite file. Part 1 streams the run as it happens: the model
looks up two cities side by side, publishes the figures to shared memory, and asks to send
a report, which a person must approve: the run pauses and the process lets go of the
file. Part 2 opens the file again (another process, a day later) and answers "yes": the
run goes on from the paused call. Nothing that finished runs again, and the model is asked
only for what comes after.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from weft.agent import IterationStarted, RunFinished, ToolAgent, ToolCallFinished
from weft.graph import Paused, interrupt
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolCall, Usage
from weft.persist import DurableRun, SQLiteBackend

POPULATIONS = {"Paris": 2_102_650, "Lyon": 522_250}


def look_up(city: str) -> dict[str, Any]:
    """The population of a French city."""
    print(f"    (look_up {city} runs)")
    return {"city": city, "population": POPULATIONS[city]}


def send_report(to: str, text: str) -> str:
    """Send a report by mail, once a person approved it."""
    if interrupt({"send to": to, "text": text}) != "yes":
        return "not sent: the person declined"
    print(f"    (mail to {to}: {text})")
    return "sent"


def model_script(messages: list[ChatMessage], tools: Any) -> AssistantMessage:
    """What a model would answer: the next thing the task needs, from what it was told."""
    done = {m.name for m in messages if m.role == "tool"}
    usage = Usage(input_tokens=300, output_tokens=20, total_tokens=320)
    if "look_up" not in done:
        calls = [ToolCall.create("look_up", {"city": city}) for city in POPULATIONS]
    elif "memory_write" not in done:
        figures = {city: POPULATIONS[city] for city in POPULATIONS}
        arguments = {"key": "populations", "value": figures, "title": "City populations"}
        calls = [ToolCall.create("memory_write", arguments)]
    elif "send_report" not in done:
        text = "Paris has about four times the people of Lyon."
        calls = [ToolCall.create("send_report", {"to": "ada@example.com", "text": text})]
    else:
        return AssistantMessage(content="Report sent: Paris is about 4x Lyon.", usage=usage)
    return AssistantMessage(tool_calls=tuple(calls), usage=usage)


def agent(run: DurableRun, model: ScriptedChatModel) -> ToolAgent:
    return ToolAgent(
        model,
        tools=[look_up, send_report],
        store=run.store,  # the run's records and the memory live in the SQLite thread
        system_prompt="You are a research assistant for a city council.",
        max_iterations=10,
    )


async def part_one(database: Path) -> Paused:
    """Stream the run until it pauses; the process then lets go of the file."""
    backend = SQLiteBackend(database)
    try:
        with DurableRun.open(backend, "research") as run:
            events = agent(run, ScriptedChatModel(model_script)).astream(
                "Compare Paris and Lyon and mail Ada a one-line report.", run_id="report-1"
            )
            async for event in events:
                if isinstance(event, IterationStarted):
                    print(f"  model call {event.iteration}")
                elif isinstance(event, ToolCallFinished):
                    print(f"  {event.name} -> {event.content}")
                elif isinstance(event, RunFinished):
                    assert isinstance(event.result, Paused)
                    return event.result
    finally:
        backend.close()
    raise AssertionError("the stream ends with RunFinished")


def part_two(database: Path, paused: Paused) -> None:
    """Open the file again, answer, and let the run finish."""
    backend = SQLiteBackend(database)
    try:
        with DurableRun.open(backend, "research") as run:
            model = ScriptedChatModel(model_script)
            result = agent(run, model).run(run_id="report-1", answers=paused.answer("yes"))
            assert not isinstance(result, Paused)
            print(f"  answer: {result.answer}")
            tokens = result.usage.total_tokens if result.usage else 0
            print(
                f"  stopped: {result.stop_reason} after {result.iterations} model calls "
                f"({len(model.calls)} in this process), {result.tool_calls} tool calls, "
                f"{tokens} tokens"
            )
            print(f"  memory: shared:populations = {run.store.value('shared', 'populations')}")
    finally:
        backend.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "agent.db"
        print("Part 1: the run, as it happens")
        paused = asyncio.run(part_one(database))
        print(f"  paused: {paused.question}")
        print("Part 2: another process answers, and the run goes on")
        part_two(database, paused)


if __name__ == "__main__":
    main()
