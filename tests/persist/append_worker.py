"""One of two processes appending to the same thread (run as a script).

    python append_worker.py BACKEND THREAD NAME COUNT MODE SYNC_DIR

Loads the thread, writes ``SYNC_DIR/ready-NAME`` and waits for ``SYNC_DIR/go``, so both
processes start from the same step. Then it appends COUNT items to ``state:log``
(MODE ``live``: plain writes; ``tx``: one transaction per item), reloading and
retrying after each ``ConflictError``. Prints ``conflicts N``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from crash_worker import open_backend

from weft.errors import ConflictError
from weft.persist import DurableRun
from weft.store import reducers


def main() -> None:
    spec, thread, name, count, mode, sync = sys.argv[1:7]
    backend = open_backend(spec)
    conflicts = 0
    try:
        run = DurableRun.open(backend, thread, run_id=name, reducers={"state:log": reducers.append})
        run.store.declare("state", "log", reducers.append)
        Path(sync, f"ready-{name}").touch()
        while not Path(sync, "go").exists():
            time.sleep(0.001)
        for i in range(int(count)):
            while True:
                try:
                    if mode == "tx":
                        with run.store.transaction() as tx:
                            tx.write("state", "log", f"{name}-{i}")
                            tx.write("shared", f"last-{name}", i)
                    else:
                        run.store.write("state", "log", f"{name}-{i}")
                    break
                except ConflictError:
                    conflicts += 1
                    run.reload()
        run.close()
    finally:
        backend.close()
    print("conflicts", conflicts, flush=True)


if __name__ == "__main__":
    main()
