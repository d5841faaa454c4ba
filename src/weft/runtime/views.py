"""The three views over a schema (seed 004): graph input, internal state, output.

``Contract.build_initial_state`` reads the caller's input, ``TurnState`` is what nodes and
loaders see, and ``Contract.state_to_output`` builds your output model, or a dict of the
output fields (by default the turn-scoped fields, a group that mixes them with stored ones
showing only its turn-scoped part, and ``diagnostics``). The models are
checked against the schema when the runtime is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from weft.errors import ChannelOwnershipError, SchemaError, TurnError
from weft.runtime.schema import Field, Group, StateSchema, _members, plain
from weft.store import MISSING, thaw

CALLER = "the caller"
"""The writer named when a turn's input writes what it may not."""

Read = Callable[[Field], Any]
"""How a view reads a leaf: its value, or ``MISSING``."""


class TurnState(Mapping[str, Any]):
    """The internal view of a turn: what nodes and loaders read. ``state[name]`` is a
    field's value, else its default, else a ``KeyError`` naming it."""

    __slots__ = ("_read", "_schema")

    def __init__(self, schema: StateSchema, read: Read) -> None:
        self._schema = schema
        self._read = read

    def _node(self, key: str) -> Field | Group:
        node = self._schema.nodes.get(key)
        if node is None:
            raise KeyError(
                f"{key!r} is not a field of the state schema {self._schema.name}; its fields "
                f"are {', '.join(self._schema.fields)}"
            )
        return node

    def __getitem__(self, key: str) -> Any:
        value = self._schema.value(self._node(key), self._read)
        if value is MISSING:
            raise KeyError(
                f"{key!r} has no value yet this turn and no default; use state.get({key!r}) "
                "or give the field a default in the schema"
            )
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._schema.value(self._node(key), self._read)
        return default if value is MISSING else value

    def __contains__(self, key: object) -> bool:
        node = self._schema.nodes.get(key) if isinstance(key, str) else None
        return node is not None and self._schema.value(node, self._read) is not MISSING

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._schema.fields if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def to_dict(self) -> dict[str, Any]:
        """Every top-level field that has a value, as plain mutable data."""
        return {name: thaw(self[name]) for name in self}

    def __repr__(self) -> str:
        return f"TurnState({self.to_dict()!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class InitialState:
    """What a turn starts with: input leaves and caller-supplied loaded leaves, by path."""

    inputs: Mapping[str, Any]
    loaded: Mapping[str, Any]


class Contract:
    """The input and output views of one schema, and the user's models for them."""

    __slots__ = ("input_model", "output_fields", "output_model", "schema", "trimmed")

    def __init__(
        self,
        schema: StateSchema,
        *,
        input_model: type | None = None,
        output: type | Sequence[str] | None = None,
    ) -> None:
        self.schema = schema
        self.input_model = input_model
        if input_model is not None:
            for name in _model_names(input_model, "input"):
                node = schema.fields.get(name)
                leaves = schema.leaves_under(name) if node is not None else ()
                if node is None or any(f.lifecycle not in ("input", "loaded") for f in leaves):
                    raise SchemaError(
                        f"the input model {input_model.__name__} has the field {name!r}, which "
                        f"is not an Input or Loaded field of {schema.name}; the caller sets "
                        "only those (reducer fields accumulate through the thread). Remove it "
                        "from the model, or mark it Input in the schema"
                    )
        self.output_model: type | None = None
        self.trimmed: tuple[str, ...] = ()  # output groups shown without their stored subfields
        if output is None:
            fields = [f.path.split(".")[0] for f in schema.of("turn_scoped")]
            if "diagnostics" in schema.fields:
                fields.append("diagnostics")
            self.output_fields: tuple[str, ...] = tuple(dict.fromkeys(fields))
            self.trimmed = tuple(f for f in self.output_fields if schema.stored_within(f))
        elif isinstance(output, type):
            self.output_fields = tuple(_model_names(output, "output"))
            if _members(output) is not None and not issubclass(output, dict):  # not a TypedDict
                self.output_model = output
        else:
            self.output_fields = tuple(output)
        for name in self.output_fields:
            if name not in schema.nodes:
                raise SchemaError(
                    f"the output field {name!r} is not a field of {schema.name} (its fields: "
                    f"{', '.join(schema.fields)}); fix the output model, or add the field"
                )

    def build_initial_state(self, given: Any) -> InitialState:
        """The caller's input as leaves; any key but an Input or Loaded field is an error."""
        data = plain(given)
        if not isinstance(data, Mapping):
            expected = self.input_model.__name__ if self.input_model else "a dict"
            raise TurnError(
                f"a turn's input is {expected} or a dict of its Input fields, got a "
                f"{type(given).__name__}"
            )
        inputs: dict[str, Any] = {}
        loaded: dict[str, Any] = {}
        for key, value in data.items():
            for leaf, item in self.schema.split(key, value, CALLER):
                if leaf.lifecycle == "input":
                    inputs[leaf.path] = item
                elif leaf.lifecycle == "loaded":
                    loaded[leaf.path] = item
                else:
                    raise ChannelOwnershipError(
                        f"{CALLER} wrote {leaf.path!r}, a {leaf.lifecycle} field of "
                        f"{self.schema.name}; a turn's input sets only Input fields (and "
                        "may supply Loaded ones). Leave it out of the input; nodes write it",
                        writer=CALLER,
                        field=leaf.path,
                    )
        for leaf in self.schema.of("input"):
            if leaf.path not in inputs and leaf.default is MISSING:
                raise TurnError(
                    f"the input field {leaf.path!r} is required (it has no default) and the "
                    "turn's input does not give it; pass it, or give it a default in the schema"
                )
        return InitialState(inputs=inputs, loaded=loaded)

    def state_to_output(self, state: Mapping[str, Any]) -> Any:
        """Your output model built from the output fields, or a dict of exactly them."""
        values = {name: thaw(state.get(name)) for name in self.output_fields}
        for name in self.trimmed:
            values[name] = self.schema.without_stored(self.schema.nodes[name], values[name])
        if self.output_model is None:
            return values
        present = {k: v for k, v in values.items() if v is not None}
        validate = getattr(self.output_model, "model_validate")  # noqa: B009
        return validate(present)


_ABSENT: Final = object()


def reader(value: Callable[[str, str, Any], Any]) -> Read:
    """A leaf reader over ``value(kind, path, default)`` (``Store.value``, ``StateView.read``)."""

    def read(leaf: Field) -> Any:
        found = value("input" if leaf.lifecycle == "input" else "state", leaf.path, _ABSENT)
        return MISSING if found is _ABSENT else found

    return read


def _model_names(model: type, role: str) -> list[str]:
    members = _members(model)
    if members is None:
        raise SchemaError(
            f"the {role} model {model!r} is neither a pydantic model nor a TypedDict; pass "
            f"one of those (or a list of field names for the {role})"
        )
    return list(members)
