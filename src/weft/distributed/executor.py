"""``RayExecutor``: the calls of a run's nodes (and tool calls) as Ray tasks.

The run stays on the caller's side (the *driver*): the WorkGraph engine schedules it,
merges branch deltas in graph order, commits and records each finished node in the run's
store (a ``DurableRun`` on PostgreSQL, for a run that must outlive its driver). Only the
calls move: ``weft.graph.offload`` turns each node that takes no ``ctx`` into an awaited
``RayExecutor.call``, which submits one Ray task (``weft.distributed.worker.run_call``).

Failures: an exception the function raised comes back as itself (the engine's
``RetryPolicy`` retries it as it would in-process, each attempt a new Ray task); a worker
that died (``os._exit``, a killed process, a lost node) is Ray's to retry, up to
``max_retries`` times, and past that the node fails with a ``RemoteError``. Ray is
imported here, on first use: ``import weft`` needs no Ray.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from weft.distributed.worker import decode_result, encode_call, run_call
from weft.errors import RemoteError
from weft.graph.offload import RemoteCall

if TYPE_CHECKING:
    from weft.graph import WorkGraph

SHIP_LIMIT = 100_000
"""A function whose pickle is this many bytes or more goes to Ray's object store once;
a smaller one travels inside each call's task (cheaper than resolving an object)."""

_KEPT = 64
"""How many functions' pickles an executor keeps, most recently called first."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # the extra is not installed
        raise RemoteError(
            "weft.distributed runs calls on Ray, which is not installed; install it with "
            "`pip install 'weft[ray]'`"
        ) from exc
    return ray


class RayExecutor:
    """Runs calls as Ray tasks; give it to ``graph.run(executor=...)`` or ``offload_to``.

    ``address``: the Ray cluster to join (None: the one this process already joined, or a
    new local one started on first use, with ``num_cpus`` CPUs). ``max_retries``: how often
    Ray runs a call again after its worker died (not after it raised: that is the node's
    ``RetryPolicy``). ``num_cpus_per_call``: the CPUs Ray reserves for each call (0.1 lets
    ten I/O-bound calls share a CPU). ``init_options`` go to ``ray.init`` as they are.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        max_retries: int = 3,
        num_cpus_per_call: float = 1.0,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise RemoteError(f"max_retries={max_retries!r}: expected an int >= 0")
        if (
            isinstance(num_cpus_per_call, bool)
            or not isinstance(num_cpus_per_call, (int, float))
            or not num_cpus_per_call > 0
        ):
            raise RemoteError(
                f"num_cpus_per_call={num_cpus_per_call!r}: expected a number of CPUs > 0, "
                "such as 1 or 0.25"
            )
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.num_cpus_per_call = float(num_cpus_per_call)
        self.init_options = dict(init_options or {})
        self._task: Any = None
        self._started = False  # this executor started Ray (and shuts it down)
        self._fns: OrderedDict[int, tuple[Callable[..., Any], Any]] = OrderedDict()
        self._pid = 0
        self.submitted = 0
        """Calls sent to Ray so far (each retry of a node's ``RetryPolicy`` counts)."""

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RayExecutor:
        """Join (or start) the Ray cluster now rather than on the first call."""
        ray = _ray()
        if self._task is not None and self._pid == os.getpid():
            return self
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            options.update(self.init_options)
            try:
                ray.init(address=self.address, num_cpus=self.num_cpus, **options)
            except Exception as exc:
                raise RemoteError(
                    f"could not join Ray at {self.address or 'a new local cluster'}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            self._started = True
        self._task = ray.remote(run_call).options(
            max_retries=self.max_retries, num_cpus=self.num_cpus_per_call, retry_exceptions=False
        )
        self._fns.clear()
        self._pid = os.getpid()
        return self

    def shutdown(self) -> None:
        """Leave Ray (and stop the local cluster this executor started)."""
        if self._started:
            _ray().shutdown()
            self._started = False
        self._task = None
        self._fns.clear()

    def __enter__(self) -> RayExecutor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # ------------------------------------------------------------------ calls

    async def call(self, call: RemoteCall) -> Any:
        """Run ``call`` as one Ray task and return its value (``NodeExecutor``)."""
        payload = encode_call(call)  # a value that cannot cross fails before anything is sent
        if self._task is None or self._pid != os.getpid():
            self.start()
        ray = _ray()
        ref = self._task.remote(self._shipped(call.fn, call.label), call.label, payload)
        self.submitted += 1
        try:
            text = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, Exception):
                cause.add_note(f"(raised on a Ray worker, running {call.label})")
                raise cause from None
            raise RemoteError(f"{call.label} failed on its Ray worker: {exc}") from None
        except ray.exceptions.RayError as exc:
            raise RemoteError(
                f"{call.label} could not run on Ray: {type(exc).__name__} (its worker died "
                f"{self.max_retries + 1} times, or the cluster is gone). What finished is "
                "recorded: run again with the same run_id to go on"
            ) from exc
        return decode_result(text)

    def _shipped(self, fn: Callable[..., Any], label: str) -> Any:
        """``fn`` as it crosses to the worker: its pickle, carried inside the call's task,
        or, from ``SHIP_LIMIT`` bytes up, a reference to that pickle put once in Ray's
        object store. The last ``_KEPT`` functions' are kept, so a plan calling one tool
        for 10,000 instances pickles it once; a fan-out of 10,000 ``partial``s pickles
        each (a small pickle: cheaper than a task that waits for an object)."""
        held = self._fns.get(id(fn))
        if held is not None and held[0] is fn:
            self._fns.move_to_end(id(fn))
            return held[1]
        from ray import cloudpickle

        try:
            data: bytes = cloudpickle.dumps(fn)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise RemoteError(
                f"{label}: its function cannot be pickled for a Ray worker: "
                f"{type(exc).__name__}: {exc}. Functions (and what closures hold) cross by "
                "cloudpickle: hold a lock, a connection or a file in the worker instead, "
                "or run this node in-process"
            ) from exc
        shipped: Any = data if len(data) < SHIP_LIMIT else _ray().put(data)
        self._fns[id(fn)] = (fn, shipped)
        if len(self._fns) > _KEPT:
            self._fns.popitem(last=False)
        return shipped


def run_on_ray(
    graph: WorkGraph, *args: Any, executor: RayExecutor | None = None, **kwargs: Any
) -> Any:
    """``graph.run(*args, executor=..., **kwargs)`` on ``executor`` (a ``RayExecutor()`` on
    the Ray this process joined, or a new local one, when None)."""
    return graph.run(*args, executor=executor or RayExecutor(), **kwargs)
