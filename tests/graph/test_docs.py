"""The examples in the docstrings of the main entry points run."""

from __future__ import annotations

import doctest
import types

import pytest

from weft.graph import graph, node, state


@pytest.mark.parametrize("module", [graph, node, state], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_a_list_of_nodes_as_first_argument_is_taken_as_start_nodes() -> None:
    a = node.WorkGraphNode(lambda: "a")
    assert graph.WorkGraph([a]).run() == "a"
