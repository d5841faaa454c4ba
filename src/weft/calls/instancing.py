"""Instancing: one plan over N instances, each with its own isolated state.

``run(..., instances=["a", "b"])`` (or ``{"a": {inputs}, "b": {...}}``) gives every
instance a fork of the store (``store.fork(name="instance:<id>")``, O(1)) holding its
own inputs as ``input:<name>``. A call's ``_instance`` routes it:

- ``"a"`` (or ``["a", "b"]``): the call runs on that instance (once per instance named):
  its references read the instance's view and its output paths write the instance's fork;
- ``"*"``: the call runs once on every instance (a template);
- absent: the call is *global*: it reads and writes the parent store.

An instance's view is layered (``weft.calls.execute.InstanceScope``): a field the
instance wrote (or was given as input) is its own, any other field is the global one as
it is now, so targeted inputs override global ones and global results written later are
still seen. Instances never see each other, and their results are never merged
into the parent unless the run asks for it (``merge_instances=True``: merged at the end,
in instance order, through the fields' reducers; two instances replacing one field is a
``MergeConflictError``). A global call cannot read what only instance calls write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

from weft.errors import PlanValidationError

InstancesLike: TypeAlias = Sequence[str] | Mapping[str, Mapping[str, Any]] | None
"""What ``instances=`` takes: instance ids, or ids mapped to each instance's inputs."""

EVERY_INSTANCE: Final = "*"
_INSTANCE_ID: Final = re.compile(r"[\w.:-]+\Z")


def instance_table(instances: object) -> dict[str, Mapping[str, Any]]:
    """``{instance id: its inputs}`` from a list of ids or a mapping of ids to inputs."""
    if instances is None:
        return {}
    if isinstance(instances, Mapping):
        items = list(instances.items())
    elif isinstance(instances, Sequence) and not isinstance(instances, str):
        items = [(name, {}) for name in instances]
    else:
        raise PlanValidationError(
            f"instances={instances!r}: give a list of instance ids, or a mapping of ids to "
            "each instance's inputs"
        )
    table: dict[str, Mapping[str, Any]] = {}
    for name, inputs in items:
        if not isinstance(name, str) or not _INSTANCE_ID.match(name):
            raise PlanValidationError(
                f"instance id {name!r}: an id is letters, digits and _ . : - (it names the "
                "fork, instance:<id>, and the calls run on it, <call>@<id>)"
            )
        if name in table:
            raise PlanValidationError(f"instance {name!r} is given twice; ids are unique")
        if not isinstance(inputs, Mapping):
            raise PlanValidationError(
                f"instance {name!r}: its inputs are a mapping {{name: value}}, not a "
                f"{type(inputs).__name__}"
            )
        table[name] = inputs
    return table


def targets_of(spec: object, known: Sequence[str]) -> tuple[list[str | None], str | None]:
    """The instances a call's ``_instance`` names (``[None]``: global), and a problem."""
    if spec is None:
        return [None], None
    if spec == EVERY_INSTANCE:
        if not known:
            return [], "its _instance is '*' (every instance) but the run has no instances"
        return list(known), None
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, (list, tuple)) or not names:
        return [], f"_instance={spec!r}: give an instance id, a list of ids, or '*'"
    out: list[str | None] = []
    for name in names:
        if name not in known:
            listed = ", ".join(known[:10]) if known else "none: pass instances= to run()"
            return [], f"it targets the instance {name!r}, which the run does not have ({listed})"
        out.append(name)
    return out, None
