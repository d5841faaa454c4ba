"""Instancing: which instances a run has, and which of them each call runs on.

``_instance`` is an id or a list of ids (the call runs once on each), ``"*"`` (once on
every instance), or absent (a global call). How an instance's state is kept and read is
in ``weft.calls.execute``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import islice
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


def targets_of(spec: object, known: Mapping[str, Any]) -> tuple[list[str | None], str | None]:
    """The instances a call's ``_instance`` names (``[None]``: global), and a problem.
    ``known`` is the run's instance table (by id, in order): a lookup per name, so a plan
    of a call per instance validates in time linear in the calls."""
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
        if not isinstance(name, str) or name not in known:  # (a list or dict is no id)
            listed = ", ".join(islice(known, 10)) if known else "none: pass instances= to run()"
            return [], f"it targets the instance {name!r}, which the run does not have ({listed})"
        out.append(name)
    return out, None
