"""One local Ray cluster (2 CPUs, not local mode) for the whole session: starting Ray
costs seconds, so every distributed test shares it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_nodes import PG

from weft.distributed import RayExecutor

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def ray_executor() -> Iterator[RayExecutor]:
    # the workers import the test helpers (ray_nodes) by name, from this folder
    paths = [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    executor = RayExecutor(address="local", num_cpus=2, max_retries=3).start()
    yield executor
    executor.shutdown()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema, dropped after the test."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
