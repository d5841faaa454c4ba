"""``weft demo``: a scripted research workflow walked through one real store.

Each scene is a function of a ``DemoRun``, so later work can add scenes (a
WorkGraph, a fork and merge, a checkpoint) by appending to ``SCENES``. The
"agents" here are scripted: their tool calls are the raw JSON-string arguments
a model would send, run through the real memory tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from weft.memory import (
    AgentMemory,
    MemoryEvent,
    MemoryTools,
    memory_keys,
    memory_tools,
    memory_tools_prompt_section,
    upstream_memory_hint,
)
from weft.store import Store, value_bytes


@dataclass(slots=True, kw_only=True)
class DemoRun:
    """What the scenes share: where to print, the memory, and what happened so far."""

    console: Console
    memory: AgentMemory
    feed: list[MemoryEvent] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def agent_tools(self, agent: str) -> MemoryTools:
        """The memory tools as one agent gets them: its writes are recorded as its own."""
        return memory_tools(self.memory, source=agent)


Scene = Callable[[DemoRun], None]

_JSON_COLOURS: Final = JSONHighlighter()


def call_tool(
    run: DemoRun, agent: str, tool: str, arguments: str, *, label: str = ""
) -> dict[str, Any]:
    """Run one tool call as a model would send it (JSON text), and print call and result."""
    run.console.print(f"[bold cyan]{escape(agent)}[/] calls [bold]{tool}[/] {escape(arguments)}")
    result = run.agent_tools(agent).call(tool, arguments)
    style = "green" if result.get("ok") else "red"
    title = "result" if result.get("ok") else "refused"
    body = _JSON_COLOURS(Text(json.dumps(result, indent=2, ensure_ascii=False)))
    run.console.print(Panel(body, title=title, border_style=style, expand=False))
    if label:
        run.results[label] = result
    return result


def _live_feed(run: DemoRun, event: MemoryEvent) -> None:
    run.feed.append(event)
    who = f" by {event.source}" if event.source else ""
    kind = f" ({event.kind})" if event.kind else ""
    run.console.print(f"  [magenta]◆ memory {event.op}[/] {escape(event.key)}{kind}{escape(who)}")


def scene_inputs(run: DemoRun) -> None:
    """The caller seeds the run's inputs under ``input:``."""
    run.console.print(Rule("1. The caller seeds the inputs"))
    run.memory.set(
        memory_keys.input("topic"),
        "how agent frameworks pass state between steps",
        source="caller",
        title="Research topic",
    )
    run.memory.set(
        memory_keys.input("audience"),
        "engineers new to LLM agents",
        source="caller",
        title="Audience",
    )


def scene_steps(run: DemoRun) -> None:
    """Executors write step results and the task result of the research task."""
    run.console.print(Rule("2. Executors write step and task results"))
    sources = [
        {"url": "https://example.org/checkpointing", "title": "Checkpoints as event logs"},
        {"url": "https://example.org/reducers", "title": "Reducers for parallel writes"},
        {"url": "https://example.org/forks", "title": "Cheap forks by structural sharing"},
    ]
    run.memory.set(memory_keys.step("search"), sources, source="search", title="Search hits")
    run.memory.set(
        memory_keys.step("summarize"),
        {"summary": "State flows as entries of one store; every write is an event."},
        source="summarize",
        title="Summary of the hits",
    )
    run.memory.set(
        memory_keys.task("research"),
        {"findings": ["one store, one key space", "events are the checkpoint"], "sources": 3},
        source="research",
        title="Research findings",
        description="Two findings distilled from three sources.",
    )
    run.memory.store.write("state", "run.phase", "research done", source="executor")
    run.console.print(
        "  (the executor also wrote state:run.phase; state is not memory, so no feed)"
    )


def scene_publish(run: DemoRun) -> None:
    """An agent publishes a fact through ``memory_write``, and one spoof is refused."""
    run.console.print(Rule("3. The researcher agent publishes through memory_write"))
    call_tool(
        run,
        "researcher",
        "memory_write",
        '{"key": "top_source", "value": "https://example.org/forks", '
        '"title": "Top source URL", "description": "The one source to cite first."}',
        label="publish",
    )
    call_tool(
        run,
        "researcher",
        "memory_write",
        '{"key": "task:bogus", "value": {"findings": ["made up"]}, "title": "Research findings"}',
        label="spoof",
    )
    spoofed = [k for k in ("task:bogus", "shared:task:bogus") if k in run.memory.store]
    verdict = "[red]written: " + ", ".join(spoofed) if spoofed else "[green]nothing was written"
    run.console.print(f"  spoof check: task:bogus / shared:task:bogus -> {verdict}[/]")


def scene_downstream(run: DemoRun) -> None:
    """A downstream agent sees keys, not values, and pulls what it needs."""
    run.console.print(Rule("4. The writer agent discovers and reads"))
    first_line = memory_tools_prompt_section().splitlines()[0]
    run.console.print(f"  system prompt carries: [italic]{escape(first_line)}[/]")
    hint = upstream_memory_hint([memory_keys.task("research")], run.memory)
    run.console.print(Panel(escape(hint), title="user message hint (no values)", expand=False))
    call_tool(run, "writer", "memory_list", '{"kind": ["task_result", "shared"]}', label="list")
    call_tool(
        run,
        "writer",
        "memory_read",
        '{"keys": ["task:research", "shared:top_source", "step:outline"]}',
        label="read",
    )
    run.memory.set(
        memory_keys.step("draft"),
        "Agent frameworks pass state as entries of one store ...",
        source="writer",
        title="Report draft",
    )


def scene_table(run: DemoRun) -> None:
    """The memory at the end, as a table."""
    run.console.print(Rule("5. Memory at the end"))
    table = Table("key", "kind", "source", "title", "bytes")
    for entry in run.memory.snapshot():
        table.add_row(
            escape(entry.key),
            entry.kind,
            escape(entry.source or ""),
            escape(entry.title or ""),
            str(value_bytes(entry.value)),
        )
    run.console.print(table)
    store = run.memory.store
    run.console.print(
        f"  one store: {len(store)} entries, {len(run.memory)} of them memory; "
        f"{store.last_seq} events in the log; {len(run.feed)} memory events heard"
    )


SCENES: Final[list[Scene]] = [
    scene_inputs,
    scene_steps,
    scene_publish,
    scene_downstream,
    scene_table,
]


def run_demo(console: Console | None = None, *, scenes: list[Scene] | None = None) -> DemoRun:
    """Play the scenes on a fresh store; returns the run for callers that inspect it."""
    run = DemoRun(console=console or Console(), memory=AgentMemory(Store(name="demo")))

    def live_feed(event: MemoryEvent) -> None:
        _live_feed(run, event)

    unsubscribe = run.memory.subscribe(live_feed)
    try:
        for scene in SCENES if scenes is None else scenes:
            scene(run)
    finally:
        unsubscribe()
    return run
