"""``weft demo``: scripted agents walked through one real store, scene by scene.

The "agents" are scripted: their tool calls are the raw JSON arguments a model would
send, run through the real memory tools; the planning agent's tools really read
``examples/data/``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from weft.agent import PromptBasedActionAgent, PromptBasedActionPlanningAgent
from weft.agent.types import render_value
from weft.graph import Paused, WorkGraph
from weft.llm import ScriptedReasoner
from weft.memory import (
    AgentMemory,
    MemoryEvent,
    memory_keys,
    memory_tools,
    memory_tools_prompt_section,
    upstream_memory_hint,
)
from weft.store import Event, Store, value_bytes


@dataclass(slots=True, kw_only=True)
class DemoRun:
    """What the scenes share: where to print, the memory, and what happened so far."""

    console: Console
    memory: AgentMemory
    feed: list[MemoryEvent] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    """What the scenes produced, by name (a tool call's reply, the planner's run ...)."""


Scene = Callable[[DemoRun], None]

_JSON_COLOURS: Final = JSONHighlighter()


def call_tool(
    run: DemoRun, agent: str, tool: str, arguments: str, *, label: str = ""
) -> dict[str, Any]:
    """Run one tool call as a model would send it (JSON text), and print call and result."""
    run.console.print(f"[bold cyan]{escape(agent)}[/] calls [bold]{tool}[/] {escape(arguments)}")
    result = memory_tools(run.memory, source=agent).call(tool, arguments)
    ok = result.get("ok")
    show_json(run, result, "result" if ok else "refused", style="green" if ok else "red")
    if label:
        run.results[label] = result
    return result


def show_json(run: DemoRun, value: Any, title: str, *, style: str = "none") -> None:
    """Print ``value`` as coloured JSON in a panel."""
    body = _JSON_COLOURS(Text(json.dumps(value, indent=2, ensure_ascii=False)))
    run.console.print(Panel(body, title=title, border_style=style, expand=False))


def _live_feed(run: DemoRun, event: MemoryEvent) -> None:
    run.feed.append(event)
    who = f" by {event.source}" if event.source else ""
    kind = f" ({event.kind})" if event.kind else ""
    run.console.print(f"  [magenta]◆ memory {event.op}[/] {escape(event.key)}{kind}{escape(who)}")


def scene_inputs(run: DemoRun) -> None:
    """The caller seeds the run's inputs under ``input:``."""
    run.console.print(Rule("1. The caller seeds the inputs"))
    for name, value, title in (
        ("topic", "how agent frameworks pass state between steps", "Research topic"),
        ("audience", "engineers new to LLM agents", "Audience"),
    ):
        run.memory.set(memory_keys.input(name), value, source="caller", title=title)


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


# ------------------------------------------------------------ the planning agent

ORDERS_CSV: Final = """item,quantity,unit_price
coffee,3,2.50
bagel,2,1.75
juice,1,3.20
"""
DISCOUNTS_JSON: Final = '{"coffee": 0.10, "juice": 0.25}\n'
"""The sample data of ``examples/data/``, used when the demo runs outside a checkout."""

INVOICE_PLAN: Final = """<StructuredResponse>
  <InstantResponse>I will read the orders and the discounts, then compute.</InstantResponse>
  <TaskStatus>Ongoing</TaskStatus>
  <Problems>
    <Problem>
      <Request>Read the file orders.csv</Request><ProblemID>READ_ORDERS</ProblemID>
    </Problem>
    <Problem>
      <Request>Read the file discounts.json</Request><ProblemID>READ_DISCOUNTS</ProblemID>
    </Problem>
    <Problem>
      <Request>Compute the invoice total</Request><ProblemID>COMPUTE_TOTAL</ProblemID>
    </Problem>
  </Problems>
  <ProblemGraph>
    READ_ORDERS, READ_DISCOUNTS -> COMPUTE_TOTAL
  </ProblemGraph>
</StructuredResponse>"""


def data_dir() -> Path:
    """``examples/data`` of this checkout, or a temporary copy of the sample data."""
    for base in (Path(__file__).resolve().parents[3], Path.cwd()):
        candidate = base / "examples" / "data"
        if (candidate / "orders.csv").is_file() and (candidate / "discounts.json").is_file():
            return candidate
    folder = Path(tempfile.mkdtemp(prefix="weft-demo-"))
    (folder / "orders.csv").write_text(ORDERS_CSV)
    (folder / "discounts.json").write_text(DISCOUNTS_JSON)
    return folder


def invoice_tools(run: DemoRun, folder: Path) -> dict[str, Callable[..., Any]]:
    """The real tools of the worker agents: read a data file, compute the invoice."""

    def read_file(path: str) -> dict[str, Any]:
        file = (folder / path).resolve()
        if file.parent != folder.resolve():
            raise PermissionError(f"{path} is outside {folder}")
        text = file.read_text()
        run.console.print(f"    [green]tool[/] read_file({path!r}) -> {len(text)} characters")
        return {"path": path, "text": text}

    def compute_total(attachments: Any) -> dict[str, Any]:
        files = {}
        for attachment in attachments:
            content = attachment.content.get("action_results") or {}
            files[content.get("path")] = content.get("text", "")
        rows = list(csv.DictReader(io.StringIO(files["orders.csv"])))
        discounts = json.loads(files["discounts.json"])
        lines = []
        for row in rows:
            gross = int(row["quantity"]) * float(row["unit_price"])
            net = round(gross * (1 - discounts.get(row["item"], 0.0)), 2)
            lines.append({"item": row["item"], "gross": round(gross, 2), "net": net})
        total = round(sum(line["net"] for line in lines), 2)
        names = ", ".join(attachment.id for attachment in attachments)
        run.console.print(f"    [green]tool[/] compute_total(attachments: {names}) -> {total}")
        return {"lines": lines, "total": total}

    return {"read_file": read_file, "compute_total": compute_total}


def _worker_reply(prompt: str) -> str:
    """The scripted worker: one tool call for its request, then report what it got."""
    if "<ActionResults>" in prompt:
        return (
            "<StructuredResponse><InstantResponse>Done.</InstantResponse>"
            "<TaskStatus>Completed</TaskStatus></StructuredResponse>"
        )
    request = prompt.rsplit("User: ", 1)[-1]
    if "total" in request:
        action = "<ActionType>compute_total</ActionType>"
    else:
        name = re.findall(r"[\w.]+\.(?:csv|json)", request)[0]
        action = f'<ActionType>read_file</ActionType><Args>{{"path": "{name}"}}</Args>'
    return (
        "<StructuredResponse><TaskStatus>Ongoing</TaskStatus><NextActions><Action>"
        f"{action}</Action></NextActions></StructuredResponse>"
    )


def _planner_reply(prompt: str) -> str:
    """The scripted planner: plan first; once the results are back, report the total."""
    found = re.search(r"&quot;total&quot;: ([\d.]+)|\"total\": ([\d.]+)", prompt)
    if found is None:
        return INVOICE_PLAN
    total = found.group(1) or found.group(2)
    return (
        f"<StructuredResponse><InstantResponse>The invoice total is {total}."
        "</InstantResponse><TaskStatus>Completed</TaskStatus></StructuredResponse>"
    )


def _agent_feed(run: DemoRun, event: Event) -> None:
    """Print the agents' writes to the store as they happen, and the plan when it is made."""
    if not event.path.startswith("agent/") or event.op != "write":
        return
    if event.path == "agent/planner/current" and event.value["response"].get("problem_graph"):
        _show_plan(run, event.value["response"])
    if event.path.count("/") > 2 and not event.path.endswith("/actions"):
        return  # a sub-task agent's bookkeeping: only its actions are shown
    value = event.value
    what = f"iteration {value.get('iteration')}" if isinstance(value, dict) else ""
    if event.path.endswith("/actions"):
        action = value["action"]
        what = f"{action['type']} {action.get('id') or ''}".strip()
    run.console.print(
        f"  [magenta]◆ store {event.reducer}[/] state:{escape(event.path)} "
        f"({escape(what)}) by {escape(event.source or '')}"
    )


def _show_plan(run: DemoRun, response: dict[str, Any]) -> None:
    for problem in response["problems"]:
        run.console.print(f"  [bold]{problem['id']}[/]: {escape(problem['args']['request'])}")
    drawing = WorkGraph([list(path) for path in response["problem_graph"]]).to_mermaid("LR")
    run.console.print(Panel(drawing, title="the plan as a WorkGraph (mermaid)", expand=False))


def scene_plan_and_run(run: DemoRun) -> None:
    """A planning agent splits the task, the sub-tasks run with real tools, attachments flow."""
    run.console.print(Rule("6. A planning agent plans three sub-tasks and runs them"))
    folder = data_dir()
    store = run.memory.store
    worker = PromptBasedActionAgent(
        ScriptedReasoner(_worker_reply),
        template="{attachments}\n{action_result}\n{conversation}",
        actor=invoice_tools(run, folder),
        name="worker",
        store=store,
    )
    planner = PromptBasedActionPlanningAgent(
        ScriptedReasoner(_planner_reply), solver=worker, name="planner", store=store
    )
    unsubscribe = store.subscribe(lambda event: _agent_feed(run, event))
    try:
        result = planner.run(f"Compute the invoice from the files in {folder.name}/")
    finally:
        unsubscribe()
    assert not isinstance(result, Paused), "a run with no run id never returns Paused"
    run.results["planner"] = result
    sinks = result.states[0].action_results
    for solved in sinks if isinstance(sinks, list) else [sinks]:
        run.console.print(f"  {solved.id} gave: {escape(render_value(solved.result))}")
    run.console.print(f"  [bold cyan]planner[/] says: {escape(result.instant_response or '')}")


def scene_planner_store(run: DemoRun) -> None:
    """What the planner and its workers left in the store."""
    run.console.print(Rule("7. The agents' state in the store"))
    table = Table("key", "reducer", "items", "bytes")
    for entry in run.memory.store.entries(key_prefix="state:agent/"):
        items = len(entry.value) if isinstance(entry.value, list) else 1
        table.add_row(
            escape(entry.key),
            run.memory.store.reducer_of(entry.kind, entry.path),
            str(items),
            str(value_bytes(entry.value)),
        )
    run.console.print(table)
    store = run.memory.store
    run.console.print(f"  one store: {len(store)} entries, {store.last_seq} events in the log")


SCENES: Final[list[Scene]] = [
    scene_inputs,
    scene_steps,
    scene_publish,
    scene_downstream,
    scene_table,
    scene_plan_and_run,
    scene_planner_store,
]


def run_demo(console: Console | None = None, *, scenes: list[Scene] | None = None) -> DemoRun:
    """Play the scenes on a fresh store; returns the run for callers that inspect it."""
    run = DemoRun(console=console or Console(), memory=AgentMemory(Store(name="demo")))

    unsubscribe = run.memory.subscribe(lambda event: _live_feed(run, event))
    try:
        for scene in SCENES if scenes is None else scenes:
            scene(run)
    finally:
        unsubscribe()
    return run
