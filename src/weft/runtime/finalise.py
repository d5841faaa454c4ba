"""Finalising a turn: the transcript entries and the runtime's diagnostics.

Each transcript field gets one user entry and one assistant entry per turn, however often a
node retried, so a failed turn leaves no half of a pair::

    {"role": "user", "content": <the user field>}
    {"role": "assistant", "content": <the assistant field>, <stamped fields>...}

The diagnostics stamp's nested dicts are replaced whole each turn, so no stale key survives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from weft.errors import SchemaError
from weft.runtime.schema import Field, StateSchema
from weft.runtime.views import TurnState
from weft.store import Store, thaw
from weft.store import reducers as _reducers

SOURCE: Final = "weft.runtime/finalise"


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """Which fields get the turn's two entries, and where their words come from
    (``fields=None``: ``history`` and ``transcript`` where the schema has them)."""

    fields: tuple[str, ...] | None = None
    user: str = "message"
    assistant: str = "response_text"
    stamp: tuple[str, ...] = ()

    def resolve(self, schema: StateSchema) -> tuple[Field, ...]:
        """The transcript fields, checked against the schema (``SchemaError`` if wrong)."""
        names = self.fields
        if names is None:
            names = tuple(n for n in ("history", "transcript") if n in schema.fields)
        out: list[Field] = []
        for name in names:
            leaf = schema.leaves.get(name)
            if leaf is None or not leaf.persisted:
                raise SchemaError(
                    f"the transcript field {name!r} must be a Reducer list field of "
                    f"{schema.name} (e.g. Annotated[list[dict], Reducer(operator.add)]); "
                    "fix the schema or Transcript(fields=...)"
                )
            out.append(leaf)
        if out:
            for role, words in (("user", self.user), ("assistant", self.assistant)):
                if words not in schema.leaves:
                    raise SchemaError(
                        f"the transcript's {role} words come from {words!r}, which is not a "
                        f"field of {schema.name}; pass Transcript({role}=...) naming the field"
                    )
            for stamped in self.stamp:
                if stamped not in schema.nodes:
                    raise SchemaError(f"Transcript(stamp=...) names {stamped!r}, no field")
        return tuple(out)

    def entries(self, state: TurnState) -> tuple[dict[str, Any], dict[str, Any]]:
        user = {"role": "user", "content": thaw(state.get(self.user, ""))}
        assistant = {"role": "assistant", "content": thaw(state.get(self.assistant, ""))}
        for name in self.stamp:
            value = state.get(name)
            if value is not None:
                assistant[name] = thaw(value)
        return user, assistant


def append_entries(tx: Store, fields: tuple[Field, ...], pair: tuple[Any, Any]) -> None:
    """One write of both entries per field (two for an ``append`` field)."""
    for leaf in fields:
        if leaf.reducer is _reducers.append:
            tx.write("state", leaf.path, pair[0], source=SOURCE)
            tx.write("state", leaf.path, pair[1], source=SOURCE)
        else:
            tx.write("state", leaf.path, list(pair), source=SOURCE)


def check_diagnostics(schema: StateSchema, name: str | None) -> Field | None:
    """The diagnostics leaf (None when off or absent); it must take dict updates."""
    if name is None or name not in schema.nodes:
        return None
    leaf = schema.leaves.get(name)
    if leaf is None or leaf.lifecycle not in ("reducer", "turn_scoped"):
        raise SchemaError(
            f"the diagnostics field {name!r} must be a dict field with a Reducer (e.g. "
            "Reducer(weft.store.reducers.merge)) or TurnScoped; pass diagnostics=None to "
            "turn the runtime's timings off"
        )
    return leaf


def stamp_diagnostics(tx: Store, leaf: Field, stamp: Mapping[str, Any]) -> None:
    """Merge the runtime's stamp into the diagnostics field, in the turn's transaction."""
    if leaf.reducer is _reducers.replace:
        current = tx.value("state", leaf.path, None)
        merged = dict(current) if isinstance(current, dict) else {}
        merged.update(stamp)
        tx.write("state", leaf.path, merged, source=SOURCE)
    else:
        tx.write("state", leaf.path, dict(stamp), source=SOURCE)
