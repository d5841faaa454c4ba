"""``_outputPath``: where a tool's result is written, parsed into targets, and the write.

Grammar (each path is a reference of ``weft.refs.parse``, its sigil optional)::

    output  := fanout ("||" fanout)*        alternatives: one of them is written
    fanout  := target ("&&" target)*        fan-out: every target, all or nothing
    target  := [SIGIL kind] field step* [":" method]
    method  := "set" | "merge" | "push" | "concat"       (default: set)

A path without a sigil is in ``state``; one whose first name is a kind (``input.x``) is
refused as ambiguous. How a method meets a field's declared reducer is in
``weft.refs.writes``; the README's "References, output paths and plans" teaches the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weft.errors import OutputPathError
from weft.refs.parse import SIGIL, _Scanner, need_str
from weft.refs.schemas import schema_at, schema_problem
from weft.refs.scopes import Scope, StoreScope
from weft.refs.writes import METHODS, WRITABLE_KINDS, Method, Target, apply_writes, plan_writes
from weft.store import KINDS, Store


@dataclass(frozen=True, slots=True)
class ChosenPath:
    """A tool's result that names the alternative of its ``||`` output path it goes to."""

    path: str
    value: Any


@dataclass(frozen=True, slots=True)
class OutputPath:
    """A parsed ``_outputPath``: alternatives (``||``) of fan-outs (``&&``) of targets.

    >>> out = OutputPath.parse("†state.summary.text || †state.summary.json")
    >>> [[t.text for t in fanout] for fanout in out.alternatives]
    [['†state.summary.text'], ['†state.summary.json']]
    >>> store = Store()
    >>> OutputPath.parse("†state.user.profile && †state.audit:push").write(store, "hi")[0].text
    '†state.user.profile'
    >>> store.value("state", "user"), store.value("state", "audit")
    ({'profile': 'hi'}, ['hi'])
    """

    alternatives: tuple[tuple[Target, ...], ...]

    @classmethod
    def parse(cls, text: str | OutputPath) -> OutputPath:
        """Parse ``text``; a ``ReferenceSyntaxError`` says where and why it does not parse."""
        if isinstance(text, OutputPath):
            return text
        need_str(text, "an _outputPath", "'†state.user.summary'")
        return _parse_output(text)

    @property
    def text(self) -> str:
        """The canonical text (dagger spelling, ``:set`` left out)."""
        return " || ".join(" && ".join(t.text for t in fanout) for fanout in self.alternatives)

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every target of every alternative, in order."""
        return tuple(t for fanout in self.alternatives for t in fanout)

    def __str__(self) -> str:
        return self.text

    def choose(
        self,
        value: Any,
        *,
        state_schema: Mapping[str, Any] | None = None,
        chosen: str | OutputPath | None = None,
    ) -> int:
        """The index of the alternative ``value`` goes to: the one the tool ``chosen``, else
        the first whose targets the ``state_schema`` accepts; ``OutputPathError`` if none."""
        if chosen is not None:
            named = OutputPath.parse(chosen)
            if len(named.alternatives) == 1:
                for i, fanout in enumerate(self.alternatives):
                    if fanout == named.alternatives[0]:
                        return i
            raise OutputPathError(
                f"the tool chose the output path {named.text!r}, which is not one of the "
                f"alternatives of {self.text!r}; return one of them exactly"
            )
        reasons: list[str] = []
        for i, fanout in enumerate(self.alternatives):
            problems = [
                f"{t.text}: {problem}"
                for t in fanout
                if (problem := _schema_refusal(t, value, state_schema)) is not None
            ]
            if not problems:
                return i
            reasons.append("; ".join(problems))
        if len(self.alternatives) == 1:
            raise OutputPathError(
                f"the state schema refuses the value for {self.text}: {reasons[0]}. Return "
                "a value of the shape the schema describes, or write it elsewhere"
            )
        listed = " | ".join(f"alternative {i + 1}: {r}" for i, r in enumerate(reasons))
        raise OutputPathError(
            f"no alternative of {self.text} accepts the value ({listed}); return a value one "
            "of them accepts, or name the alternative with ChosenPath(path, value)"
        )

    def write(
        self,
        store: Store,
        value: Any,
        *,
        source: str | None = None,
        state_schema: Mapping[str, Any] | None = None,
        scope: Scope | None = None,
    ) -> tuple[Target, ...]:
        """Write ``value`` (or a tool's ``ChosenPath``) to ``store``; returns the targets
        written. ``scope`` is where current values are read (an instance's layered view;
        default: ``store``)."""
        value, chosen = split_choice(value)
        index = self.choose(value, state_schema=state_schema, chosen=chosen)
        fanout = self.alternatives[index]
        ops = plan_writes(fanout, value, store, scope or StoreScope(store))
        apply_writes(ops, store, source)
        return fanout


@functools.lru_cache(maxsize=4096)
def _parse_output(text: str) -> OutputPath:
    """Parse (cached: an ``OutputPath`` is immutable, and plans repeat their paths)."""
    groups = _Scanner(text).alternatives(_target)
    return OutputPath(tuple(tuple(group) for group in groups))


def split_choice(result: Any) -> tuple[Any, str | None]:
    """``(value, chosen path or None)`` of a tool's result."""
    if isinstance(result, ChosenPath):
        return result.value, result.path
    if isinstance(result, dict) and "_outputPath" in result:
        chosen = result["_outputPath"]
        rest = {k: v for k, v in result.items() if k != "_outputPath"}
        if not isinstance(chosen, str):
            raise OutputPathError(
                f"the tool's result names _outputPath={chosen!r}, which is not a string; "
                "name one of the call's alternatives, e.g. '†state.success'"
            )
        return rest, chosen
    return result, None


def _target(scanner: _Scanner) -> Target:
    start = scanner.pos
    has_sigil = scanner.text.startswith((SIGIL, "$ref:"), start)
    ref = scanner.reference(strict=True, bare=not has_sigil)
    if not has_sigil and ref.field in KINDS:
        written = scanner.text[start : scanner.pos]
        raise scanner.error(
            f"{written!r} has no sigil, so it would name a state field called {ref.field!r}; "
            f"write {SIGIL}{written} to mean the kind {ref.field}, or {SIGIL}state.{written} "
            "for a state field of that name",
            start,
        )
    if ref.kind not in WRITABLE_KINDS:
        raise scanner.error(
            f"tool calls write state and shared only; {ref.kind} entries are written by "
            f"{'the caller' if ref.kind == 'input' else 'the executors'}",
            start,
        )
    if ref.field is None:
        raise scanner.error(f"an output path names a field: †{ref.kind}.name", start)
    method: Method = "set"
    if scanner.text.startswith(":", scanner.pos):
        scanner.pos += 1
        at = scanner.pos
        name = scanner.name()
        if name not in METHODS:
            raise scanner.error(
                f"unknown write method {name!r}; the methods are {', '.join(METHODS)}", at
            )
        method = name  # type: ignore[assignment]
    return Target(ref.kind, ref.field, ref.path, method)


def _schema_refusal(target: Target, value: Any, state_schema: Mapping[str, Any] | None) -> Any:
    if state_schema is None or target.kind != "state":
        return None
    schema = schema_at(state_schema, (target.field, *target.path))
    if schema is None:
        return None
    if target.method == "push":
        schema = schema_at(schema, (0,))
    elif target.method == "concat":
        item = schema_at(schema, (0,))
        if item is None or not isinstance(value, list):
            return None if isinstance(value, list) else "concat takes a list"
        problems = [p for v in value if (p := schema_problem(item, v)) is not None]
        return problems[0] if problems else None
    elif target.method == "merge" and isinstance(schema, Mapping) and "required" in schema:
        schema = {k: v for k, v in schema.items() if k != "required"}
    if schema is None:
        return None
    return schema_problem(schema, value)
