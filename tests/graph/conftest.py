"""The parity fixture: every scenario that takes ``mode`` runs twice, with sync node values
through ``graph.run()`` and with async node values through ``await graph.arun()``."""

from __future__ import annotations

import pytest
from graph_helpers import Mode


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> Mode:
    return Mode(request.param)
