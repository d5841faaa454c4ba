"""Wrong input to the Ray executor: a clear weft error naming what was wrong, never a
bare TypeError from inside Ray, and nothing already written is lost."""

from __future__ import annotations

import functools
import threading

import pytest
import ray_nodes

from weft.distributed import RayExecutor
from weft.errors import GraphError, NodeError, RemoteError
from weft.graph import WorkGraph, WorkGraphNode
from weft.store import Store


@pytest.mark.parametrize(
    "options",
    [
        {"max_retries": -1},
        {"max_retries": True},
        {"num_cpus_per_call": 0},
        {"num_cpus_per_call": "1"},
    ],
)
def test_bad_options_are_refused_when_the_executor_is_made(options: dict[str, object]) -> None:
    with pytest.raises(RemoteError, match=next(iter(options))):
        RayExecutor(**options)  # type: ignore[arg-type]


def test_an_executor_that_is_not_one_is_refused() -> None:
    graph = WorkGraph([WorkGraphNode(abs)])
    with pytest.raises(GraphError, match="async call"):
        graph.run(-1, executor=object())  # type: ignore[arg-type]


def test_an_argument_the_codec_cannot_write_fails_the_node_before_it_is_sent(
    ray_executor: RayExecutor,
) -> None:
    before = ray_executor.submitted
    with pytest.raises(NodeError) as caught:
        WorkGraph([WorkGraphNode(abs, id="absolute")]).run(object(), executor=ray_executor)
    assert isinstance(caught.value.__cause__, RemoteError)
    assert "absolute" in str(caught.value.__cause__) and "cannot cross" in str(caught.value)
    assert ray_executor.submitted == before


def test_a_result_the_codec_cannot_write_is_a_remote_error_naming_the_node(
    ray_executor: RayExecutor,
) -> None:
    with pytest.raises(NodeError) as caught:
        WorkGraph([WorkGraphNode(ray_nodes.returns_a_set)]).run(3, executor=ray_executor)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteError)
    assert "returns_a_set" in str(cause) and "set" in str(cause)


def test_a_state_node_reading_a_kind_its_snapshot_lacks_is_told_so(
    ray_executor: RayExecutor,
) -> None:
    store = Store()
    store.write("state", "kept", 1)
    with pytest.raises(NodeError) as caught:
        WorkGraph([WorkGraphNode(ray_nodes.reads_shared, state=True)]).run(
            store=store, executor=ray_executor
        )
    assert "kinds state, input only" in str(caught.value)
    assert store.value("state", "kept") == 1


def test_a_function_that_cannot_be_pickled_fails_its_node_before_it_is_sent(
    ray_executor: RayExecutor,
) -> None:
    lock = threading.Lock()

    def guarded(x: int) -> int:
        with lock:
            return x

    before = ray_executor.submitted
    with pytest.raises(NodeError) as caught:
        WorkGraph([WorkGraphNode(guarded, id="guarded")]).run(1, executor=ray_executor)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteError)
    assert "guarded" in str(cause) and "cannot be pickled" in str(cause)
    assert ray_executor.submitted == before


def test_a_function_with_a_large_pickle_is_put_in_the_object_store_once(
    ray_executor: RayExecutor,
) -> None:
    import ray

    table = bytes(range(256)) * 800  # 200 KB held by the closure: past SHIP_LIMIT

    def look_up(k: int, x: int) -> int:
        return table[k] + x

    graph = WorkGraph([WorkGraphNode(functools.partial(look_up, k)) for k in range(4)])
    assert graph.run(1, executor=ray_executor) == [1, 2, 3, 4]
    shipped = ray_executor._shipped(look_up, "look_up")
    assert isinstance(shipped, ray.ObjectRef)
    assert ray_executor._shipped(look_up, "look_up") is shipped  # put once, then reused
