"""``_outputPath``: where a tool's result is written, parsed into an AST, and the writes.

Grammar (the reference grammar of ``weft.refs.parse`` for each path)::

    output  := fanout ("||" fanout)*        alternatives: one of them is written
    fanout  := target ("&&" target)*        fan-out: every target, all or nothing
    target  := [SIGIL kind] field step* [":" method]
    method  := "set" | "merge" | "push" | "concat"       (default: set)

``&&`` binds tighter than ``||``. Without a sigil a path is in ``state`` (the seed's
``†state.`` prefix is optional): ``summary.text`` is ``†state.summary.text``; a bare path
whose first name is a kind (``input.x``) is refused as ambiguous. Tool calls write
``state`` and ``shared`` only: ``input`` belongs to the caller, ``step`` and ``task`` to
the executors.

Methods (the later revision of the specification: every write carries one):

=========  ==============================================================================
``set``    replace the value at the path (a whole field: ``write(..., replace=True)``)
``merge``  shallow-merge a dict into it (``reducers.merge``; ``DELETE`` removes a key)
``push``   append one item to a list (``reducers.append``; a list is pushed as one item)
``concat`` append every item of a list (``reducers.extend``)
=========  ==============================================================================

A method on a whole field goes through the store's reducer when the field declares that
very reducer (so the event log holds the pushed item, not the list); on a field with no
declared reducer it is applied here and the result written with ``replace=True``; on a
field that declares a *different* reducer it is refused (``OutputPathError``): the
declaration is the field's contract. A path inside a field (``†state.user.tags:push``)
is read, changed and written back whole.

Choosing among alternatives (``||``): the tool may name its choice (it returns
``ChosenPath(path, value)``, or a dict with an ``"_outputPath"`` key whose other keys
are the value); otherwise the first alternative whose schema (from the state schema,
where it says something about the path) accepts the value; none is an
``OutputPathError`` listing why each refused. A single path is checked against the
state schema too. With ``&&`` every target is checked and computed before anything is
written, so a refusal writes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from weft.errors import OutputPathError, ReducerError, ReferenceSyntaxError, ValueTypeError
from weft.refs.parse import SIGIL, Reference, Step, _Scanner, format_steps
from weft.refs.resolve import Scope, StoreScope
from weft.refs.schemas import schema_at, schema_problem
from weft.store import KINDS, MISSING, FrozenDict, FrozenList, Store, freeze, reducers

Method: TypeAlias = Literal["set", "merge", "push", "concat"]
METHODS: Final[tuple[str, ...]] = ("set", "merge", "push", "concat")
WRITABLE_KINDS: Final = ("state", "shared")
_FROZEN: Final = frozenset({str, int, float, bool, type(None), FrozenDict, FrozenList})

_REDUCER_OF: Final[Mapping[str, tuple[str, Callable[[Any, Any], Any]]]] = {
    "merge": ("merge", reducers.merge),
    "push": ("append", reducers.append),
    "concat": ("extend", reducers.extend),
}


@dataclass(frozen=True, slots=True)
class Target:
    """One path of an output: the field ``kind:field``, the steps inside it, the method."""

    kind: str
    field: str
    path: tuple[Step, ...] = ()
    method: Method = "set"

    @property
    def reference(self) -> Reference:
        """The place written, as a reference (what a later call reads)."""
        return Reference(self.kind, self.field, self.path)

    @property
    def text(self) -> str:
        suffix = "" if self.method == "set" else f":{self.method}"
        return SIGIL + self.kind + format_steps((self.field, *self.path)) + suffix

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class ChosenPath:
    """A tool's result that names the alternative it is written to.

    >>> ChosenPath("†state.failure", {"reason": "timeout"})
    ChosenPath(path='†state.failure', value={'reason': 'timeout'})
    """

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
        if not isinstance(text, str):
            raise ReferenceSyntaxError(
                f"an _outputPath is a string such as '†state.user.summary', not a "
                f"{type(text).__name__} ({text!r:.80})",
                text=repr(text),
            )
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

    # --------------------------------------------------------------- choosing

    def choose(
        self,
        value: Any,
        *,
        state_schema: Mapping[str, Any] | None = None,
        chosen: str | OutputPath | None = None,
    ) -> int:
        """The index of the alternative ``value`` goes to (see the module docstring)."""
        if chosen is not None:
            named = OutputPath.parse(chosen)
            if len(named.alternatives) == 1:
                for i, fanout in enumerate(self.alternatives):
                    if fanout == named.alternatives[0]:
                        return i
            options = ", ".join(" && ".join(t.text for t in fanout) for fanout in self.alternatives)
            raise OutputPathError(
                f"the tool chose the output path {named.text!r}, which is not one of the "
                f"alternatives of {self.text!r} ({options}); return one of them exactly"
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

    # ---------------------------------------------------------------- writing

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


# -------------------------------------------------------------------- writes


@dataclass(frozen=True, slots=True)
class WriteOp:
    """One store write an output path decided on: through the field's reducer, or whole."""

    kind: str
    field: str
    value: Any
    replace: bool


def plan_writes(
    fanout: tuple[Target, ...], value: Any, store: Store, scope: Scope
) -> list[WriteOp]:
    """The store writes for ``value`` to every target, all checked before any is made."""
    if value.__class__ in _FROZEN:
        frozen = value
    else:
        try:
            merging = all(t.method == "merge" for t in fanout)  # DELETE: "remove the key"
            frozen = freeze(value, where=f"the value for {fanout[0].text}", allow_delete=merging)
        except ValueTypeError as exc:
            raise OutputPathError(f"{exc}; nothing was written") from exc
    if len(fanout) == 1:  # one write is atomic in the store: nothing to check ahead
        target = fanout[0]
        return [_plan_one(target, frozen, _current(target, scope), store, check=False)]
    pending: dict[tuple[str, str], Any] = {}  # fields already changed by earlier targets
    ops: list[WriteOp] = []
    for target in fanout:
        key = (target.kind, target.field)
        changed = key in pending
        current = pending[key] if changed else scope.lookup(target.kind, target.field)
        # a field an earlier target changed is folded here and written whole
        op = _plan_one(target, frozen, current, store, check=True, changed=changed)
        pending[key] = op.value if op.replace else _reduce(target, current, frozen)
        ops.append(op)
    return ops


def _current(target: Target, scope: Scope) -> Any:
    if not target.path and target.method == "set":
        return MISSING  # a whole replacement does not read what is there
    return scope.lookup(target.kind, target.field)


def apply_writes(ops: list[WriteOp], store: Store, source: str | None) -> None:
    """Make the writes ``plan_writes`` decided on (checked already: they do not fail)."""
    for op in ops:
        try:
            store.write(op.kind, op.field, op.value, source=source, replace=op.replace)
        except ReducerError as exc:  # a lone reduced write is checked by the store itself
            raise OutputPathError(f"{op.kind}:{op.field}: {exc}") from exc


def _plan_one(
    target: Target, value: Any, current: Any, store: Store, *, check: bool, changed: bool = False
) -> WriteOp:
    if not target.path:
        if target.method == "set":
            return WriteOp(target.kind, target.field, value, True)
        declared = store.reducer_of(target.kind, target.field)
        wanted, _ = _REDUCER_OF[target.method]
        if declared == wanted and not changed:
            if check:
                _reduce(target, current, value)  # refuse now: all or nothing
            return WriteOp(target.kind, target.field, value, False)
        if declared != "replace" and declared != wanted:
            raise OutputPathError(
                f"{target.text}: {target.kind}:{target.field} declares the reducer "
                f"{declared!r}, and :{target.method} means {wanted!r}; write it with the "
                f"method of its reducer ({_method_for(declared)}) or :set, or use another "
                "field; nothing was written"
            )
        return WriteOp(target.kind, target.field, _reduce(target, current, value), True)
    base = current
    if base is MISSING:
        if type(target.path[0]) is int:
            raise OutputPathError(
                f"{target.text}: {target.kind}:{target.field} holds nothing, so it has no "
                f"item [{target.path[0]}]; write the whole list first; nothing was written"
            )
        base = FrozenDict()
    new = _set_in(target, base, 0, value)
    return WriteOp(target.kind, target.field, new, True)


def _method_for(reducer: str) -> str:
    for method, (name, _) in _REDUCER_OF.items():
        if name == reducer:
            return f":{method}"
    return "no method: write it from code"


def _reduce(target: Target, current: Any, value: Any) -> Any:
    if target.method == "set":
        return value
    _, fn = _REDUCER_OF[target.method]
    try:
        return fn(current, value)
    except TypeError as exc:
        raise OutputPathError(f"{target.text}: {exc}; nothing was written") from None


def _set_in(target: Target, node: Any, depth: int, value: Any) -> Any:
    """A copy of ``node`` with the target's path from ``depth`` on changed."""
    step = target.path[depth]
    last = depth == len(target.path) - 1
    where = Reference(target.kind, target.field, target.path[:depth]).text
    if type(step) is int:
        if not isinstance(node, list):
            raise OutputPathError(
                f"{target.text}: {where} is not a list, so it has no item [{step}]; "
                "nothing was written"
            )
        if not -len(node) <= step < len(node):
            raise OutputPathError(
                f"{target.text}: {where} has {len(node)} items, so [{step}] is out of range "
                "(an output path changes items, it does not add them: use :push); nothing "
                "was written"
            )
        items = list(node)
        old = items[step]
        items[step] = _leaf(target, old, value) if last else _set_in(target, old, depth + 1, value)
        return FrozenList(items)
    if not isinstance(node, dict):
        raise OutputPathError(
            f"{target.text}: {where} is not an object, so it cannot take the key {step!r}; "
            "nothing was written"
        )
    fields = dict(node)
    old = fields.get(step, MISSING)
    if last:
        fields[step] = _leaf(target, old, value)
    else:
        if old is MISSING:
            if type(target.path[depth + 1]) is int:
                raise OutputPathError(
                    f"{target.text}: {where}.{step} holds nothing, so it has no item "
                    f"[{target.path[depth + 1]}]; nothing was written"
                )
            old = FrozenDict()
        fields[step] = _set_in(target, old, depth + 1, value)
    return FrozenDict(fields)


def _leaf(target: Target, old: Any, value: Any) -> Any:
    return value if target.method == "set" else _reduce(target, old, value)
