"""A second process writing to a thread while ``weft events --follow`` tails it:
``python follow_writer.py DB THREAD N`` writes ``state:tick`` = 1..N, one commit each,
after waiting for a line on stdin (the test's go)."""

from __future__ import annotations

import sys
import time

from weft.persist import DurableRun, SQLiteBackend


def main(db: str, thread: str, count: int) -> None:
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, thread, run_id="writer")
        sys.stdin.readline()
        for n in range(1, count + 1):
            run.store.write("state", "tick", n, source="writer")
            time.sleep(0.05)
        run.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
