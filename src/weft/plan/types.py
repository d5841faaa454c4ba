"""``Step``, ``Task`` and ``TaskPlan``: the work the executors run, checked when built.

Ids name memory keys (``step:<id>``, ``task:<id>``), so step ids are unique across a
whole plan, and so are task ids. Everything wrong with a plan is reported at once, as a
``PlanValidationError`` whose ``problems`` list each one.

>>> plan = TaskPlan.from_dict({"tasks": [
...     {"id": "research", "steps": [{"id": "search", "instructions": "Find sources."}]},
...     {"id": "report", "depends_on": ["research"],
...      "steps": [{"id": "write", "instructions": "Write it up."}]},
... ]})
>>> [task.id for task in plan.tasks], plan.tasks[1].depends_on
(['research', 'report'], ('research',))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from weft.errors import PlanValidationError
from weft.graph.build import find_cycle
from weft.refs.schemas import schema_error


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One step for a model; ``output_schema`` is what its result must match (``None``: any
    JSON). ``tools`` names the caller tools it may use (``None``: all). ``process_from``
    makes it a process step: it runs once per item of the list that step returned."""

    id: str
    instructions: str
    title: str = ""
    depends_on: tuple[str, ...] = ()
    output_schema: Mapping[str, Any] | None = None
    tools: tuple[str, ...] | None = None
    process_from: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "depends_on", _names(self.depends_on))
        if self.tools is not None:
            object.__setattr__(self, "tools", _names(self.tools))
        if self.process_from is not None and self.process_from not in self.depends_on:
            object.__setattr__(self, "depends_on", (*self.depends_on, self.process_from))

    @property
    def label(self) -> str:
        """The title, or the id."""
        return self.title or self.id

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """A step from JSON (snake_case or camelCase keys)."""
        return cls(
            id=_text(data, "id"),
            instructions=str(data.get("instructions", "")),
            title=str(data.get("title", "")),
            depends_on=tuple(_pick(data, "depends_on", "dependsOn") or ()),
            output_schema=_pick(data, "output_schema", "outputSchema"),
            tools=None if data.get("tools") is None else tuple(data["tools"]),
            process_from=_pick(data, "process_from", "processFrom"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """Steps run as a DAG. The finishing step (``final_step_id``, default the last listed)
    writes the task's result ``task:<id>`` too, so it runs after every other step of the
    task, and no step may depend on it."""

    id: str
    title: str = ""
    description: str = ""
    steps: tuple[Step, ...] = ()
    depends_on: tuple[str, ...] = ()
    final_step_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "depends_on", _names(self.depends_on))
        if problems := self.problems():
            raise _invalid(f"task {self.id!r}", problems)

    @property
    def label(self) -> str:
        return self.title or self.id

    @property
    def final_step(self) -> Step:
        """The step whose result is the task's result."""
        wanted = self.final_step_id or self.steps[-1].id
        return next(step for step in self.steps if step.id == wanted)

    def step(self, step_id: str) -> Step:
        return next(step for step in self.steps if step.id == step_id)

    def problems(self) -> list[str]:
        """Everything wrong with this task alone."""
        where = f"task {self.id!r}"
        out: list[str] = []
        if not isinstance(self.id, str) or not self.id:
            out.append(f"a task needs a non-empty string id, got {self.id!r}")
        if not self.steps:
            out.append(f"{where} has no steps; give it at least one")
            return out
        ids = [step.id for step in self.steps]
        for step in self.steps:
            label = f"{where}, step {step.id!r}"
            if not isinstance(step.id, str) or not step.id:
                out.append(f"{where}: a step needs a non-empty string id, got {step.id!r}")
            if ids.count(step.id) > 1 and ids.index(step.id) == self.steps.index(step):
                out.append(f"{where}: the step id {step.id!r} is used {ids.count(step.id)} times")
            for dep in step.depends_on:
                if dep not in ids:
                    out.append(f"{label} depends on {dep!r}, which is not a step of this task")
            if step.output_schema is not None and (problem := schema_error(step.output_schema)):
                out.append(f"{label}: its output_schema is not a JSON Schema ({problem})")
        final = self.final_step_id or ids[-1]
        if final not in ids:
            out.append(f"{where}: final_step_id {final!r} is not one of its steps")
        elif dependents := [s.id for s in self.steps if final in s.depends_on]:
            out.append(
                f"{where}: its finishing step {final!r} writes the task's result, so no "
                f"step may depend on it, but {', '.join(dependents)} do; make the last "
                "step the one that finishes the task, or set final_step_id"
            )
        out.extend(
            f"{where}: {p}" for p in _cycle("steps", {s.id: s.depends_on for s in self.steps})
        )
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        steps = data.get("steps") or ()
        if not isinstance(steps, Sequence) or isinstance(steps, str):
            raise _invalid("a task", [f"'steps' must be a list of steps, got {steps!r}"])
        return cls(
            id=_text(data, "id"),
            title=str(data.get("title", "")),
            description=str(data.get("description", "")),
            steps=tuple(Step.from_dict(s) if isinstance(s, Mapping) else s for s in steps),
            depends_on=tuple(_pick(data, "depends_on", "dependsOn") or ()),
            final_step_id=_pick(data, "final_step_id", "finalStepId"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskPlan:
    """Tasks run as a DAG by ``depends_on``; the last task listed gives the final result."""

    title: str = ""
    tasks: tuple[Task, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(self.tasks))
        if problems := self.problems():
            raise _invalid("the task plan", problems)

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def problems(self) -> list[str]:
        out: list[str] = []
        if not self.tasks:
            return ["a task plan needs at least one task"]
        ids = [task.id for task in self.tasks]
        step_owner: dict[str, str] = {}
        for task in self.tasks:
            if ids.count(task.id) > 1 and ids.index(task.id) == self.tasks.index(task):
                out.append(f"the task id {task.id!r} is used {ids.count(task.id)} times")
            for dep in task.depends_on:
                if dep not in ids:
                    close = [i for i in ids if i.lower() == dep.lower()]
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    out.append(f"task {task.id!r} depends on {dep!r}, which is no task{hint}")
            for step in task.steps:
                owner = step_owner.setdefault(step.id, task.id)
                if owner != task.id:
                    out.append(
                        f"step id {step.id!r} is used by tasks {owner!r} and {task.id!r}; step "
                        "ids name memory keys (step:<id>), so they are unique in a plan"
                    )
        out.extend(_cycle("tasks", {t.id: t.depends_on for t in self.tasks}))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskPlan:
        """A plan from JSON: ``{"title": ..., "tasks": [{"id", "steps": [...]}, ...]}``."""
        if not isinstance(data, Mapping):
            raise _invalid("a task plan", [f"a task plan is a JSON object, not {data!r:.80}"])
        tasks = data.get("tasks")
        if not isinstance(tasks, Sequence) or isinstance(tasks, str):
            raise _invalid("a task plan", ["'tasks' must be a list of tasks"])
        built: list[Task] = []
        problems: list[str] = []
        for item in tasks:
            try:
                built.append(Task.from_dict(item) if isinstance(item, Mapping) else item)
            except PlanValidationError as exc:
                problems.extend(str(p) for p in exc.problems)
        if problems:
            raise _invalid("the task plan", problems)
        return cls(title=str(data.get("title", "")), tasks=tuple(built))


def _names(values: Iterable[str] | str) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


def _pick(data: Mapping[str, Any], *names: str) -> Any:
    return next((data[name] for name in names if data.get(name) is not None), None)


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise _invalid("a plan item", [f"{name!r} must be a non-empty string, got {value!r}"])
    return value


def _invalid(what: str, problems: list[str]) -> PlanValidationError:
    listed = "\n".join(f"  - {p}" for p in problems)
    return PlanValidationError(
        f"{what} is not valid ({len(problems)} problem{'s' if len(problems) != 1 else ''}):"
        f"\n{listed}",
        problems=tuple(problems),
    )


def _cycle(what: str, deps: Mapping[str, Sequence[str]]) -> list[str]:
    """The cycle among ``deps`` (unknown ids ignored), found by the WorkGraph's own check."""
    ids = list(deps)
    index = {name: i for i, name in enumerate(ids)}
    succs: list[list[int]] = [[] for _ in ids]
    for name, names in deps.items():
        for dep in dict.fromkeys(names):
            if dep in index:
                succs[index[dep]].append(index[name])
    ring = find_cycle(succs)
    if ring is None:
        return []
    found = " -> ".join(ids[i] for i in [*ring, ring[0]])
    return [f"the {what}' depends_on form a cycle, so none of them could ever run ({found})"]
