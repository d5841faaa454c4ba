"""The inspector's tests read threads made by real runs (``inspect_data``) on SQLite and on
the real PostgreSQL server (127.0.0.1:5432, database ``weft_test``), each PostgreSQL test in
a schema of its own that is dropped afterwards. A server that cannot be reached fails the
test with how to start it: it is never skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_data import make_all
from inspect_db import Opener, opener


@pytest.fixture(params=["sqlite", "postgres"])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A fresh empty database (per test) of each kind."""
    make, cleanup = opener(request.param, tmp_path)
    yield make
    cleanup()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def made(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Opener]:
    """A database holding the threads ``make_all`` makes, shared by the tests of a module
    that only read it."""
    make, cleanup = opener(request.param, tmp_path_factory.mktemp("made"))
    make_all(make())
    yield make
    cleanup()
