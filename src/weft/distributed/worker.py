"""What runs on a Ray worker: one call, its values in and out through weft's codec.

The function itself reaches the worker as its cloudpickle (``RayExecutor`` pickles it);
its arguments and its result cross as weft's codec text (JSON with a registry of known
types), never as pickles. This module imports no Ray.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

from weft._sync import run_sync
from weft.errors import CodecError, RemoteError, ValueTypeError
from weft.graph import WorkGraphStopFlags
from weft.graph.offload import RemoteCall, StateSnapshot
from weft.store.codec import dumps, loads


def encode_call(call: RemoteCall) -> str:
    """The text that carries ``call``'s arguments (and a state node's view) to a worker."""
    data: dict[str, Any] = {"args": list(call.args), "kwargs": dict(call.kwargs)}
    if call.snapshot is not None:
        data["view"] = {kind: dict(values) for kind, values in call.snapshot.items()}
    try:
        return dumps(data)
    except (ValueTypeError, CodecError) as exc:
        raise RemoteError(
            f"{call.label}: its arguments cannot cross to a Ray worker: {exc}. Values cross "
            "through weft's codec (JSON values, registered dataclasses and pydantic models, "
            "bytes, datetimes): pass such values, or run this node in-process"
        ) from exc


def run_call(function: bytes, label: str, payload: str) -> str:
    """On the worker: unpickle the function, decode its arguments, call it, encode what
    it returned."""
    fn = pickle.loads(function)
    data = loads(payload)
    args: list[Any] = list(data["args"])
    kwargs: Mapping[str, Any] = data["kwargs"]
    if "view" in data:
        args.insert(0, StateSnapshot(data["view"]))
    result = fn(*args, **kwargs)
    if hasattr(result, "__await__"):
        result = run_sync(result)
    flag = None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], WorkGraphStopFlags):
        flag, result = result[0].name, result[1]
    try:
        return dumps({"flag": flag, "value": result})
    except (ValueTypeError, CodecError) as exc:
        raise RemoteError(
            f"{label} returned a {type(result).__name__} that cannot cross back from its Ray "
            f"worker: {exc}. Return values weft's codec writes (JSON values, registered "
            "dataclasses and pydantic models, bytes, datetimes)"
        ) from None


def decode_result(text: str) -> Any:
    """The value ``run_call`` encoded (with its stop flag, if it returned one)."""
    data = loads(text)
    flag, value = data["flag"], data["value"]
    return value if flag is None else (WorkGraphStopFlags[flag], value)
