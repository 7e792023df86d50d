"""The study's SQLite file: WAL mode and connections that commit without a disk sync each.

Used by :func:`kernelrules.tune.study.open_storage` for ``sqlite:///`` study files.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Callable


def wal_mode(path: str, patience: float = 60.0) -> None:
    """Put an SQLite file in WAL mode (concurrent readers and one writer), once.

    Switching needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy time-out, while another process opens or switches the same new file:
    a driver started together with another retries until the file is in WAL mode.
    """
    deadline = time.monotonic() + patience
    while True:
        connection = sqlite3.connect(path, timeout=patience)
        try:
            if str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
        finally:
            connection.close()
        time.sleep(random.uniform(0.01, 0.05))


def connector(path: str, timeout: float, synchronous: str = "NORMAL") -> Callable[[], sqlite3.Connection]:
    """Connections to a WAL-mode study file that commit without waiting for the disk.

    SQLite's default (``synchronous=FULL``) syncs the file at every commit, and a study commits
    several times per trial and about 30 times while Optuna creates its tables: on a disk where a
    sync takes milliseconds that is seconds of a tune run's start-up. In WAL mode
    ``synchronous=NORMAL`` syncs at checkpoints only and still never corrupts the file; a power
    loss (not a crash of the process) can lose the last commits, whose trials a resumed study runs
    again (SQLite's documentation, "PRAGMA synchronous"). ``synchronous`` is there for
    ``benchmarks/bench_study_sync.py``, which times SQLite's default beside it."""

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
        connection.execute(f"PRAGMA synchronous={synchronous}")
        return connection

    return connect
