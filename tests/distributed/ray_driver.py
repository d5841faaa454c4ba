"""A driver process for the driver-kill test: joins the test's Ray cluster and runs the
chain graph on a DurableRun in PostgreSQL; the test kills it with SIGKILL mid-run.

Usage: python ray_driver.py RAY_ADDRESS SCHEMA LOG"""

from __future__ import annotations

import sys

import ray_nodes

from weft.distributed import RayExecutor
from weft.persist import DurableRun, PostgresBackend


def main(address: str, schema: str, log: str) -> None:
    backend = PostgresBackend(ray_nodes.PG, schema=schema, timeout=5)
    durable = DurableRun.open(backend, "driven", run_id="d1")
    executor = RayExecutor(address=address)
    print(durable.run_graph(ray_nodes.chain_graph(log), 0, executor=executor), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
