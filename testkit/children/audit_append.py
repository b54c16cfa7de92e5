"""A writer process for the audit concurrency test: waits for the start file, then appends `count` order events to
one account's chain (and every tenth a human decision to the global chain), each in its own transaction. A writer
pauses 2 ms after each: SQLite's lock is not fair (a waiting writer's busy handler sleeps while the holder takes the
lock again at once), so without a pause one process could write all 500 before the other wrote one, and the test
would show no concurrency at all."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from bot.stores.decisions import DecisionStore
from tools.broker.store import log_event
from tools.storage.db import make_engine

PAUSE = 0.002  # seconds between a writer's appends


def main(url: str, account: str, writer: str, count: int, start: Path) -> None:
    engine = make_engine(url)
    decisions = DecisionStore(engine)
    while not start.exists():
        time.sleep(0.01)
    for i in range(count):
        log_event(engine, f"{writer}-{i}", account, "proposed", writer, {"n": i})
        if i % 10 == 0:
            decisions.accept(f"{writer}-{i}", f"console-{writer}", {"type": "approve"}, writer, "console")
        time.sleep(PAUSE)
    engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5]))
