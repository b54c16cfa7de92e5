"""The cyclic garbage collector around a long-running process's start-up (serve, worker, chat).

Importing langchain, langgraph, pandas and the app leaves about 350,000 long-lived objects. Collecting while they
are made costs a quarter of the imports' time, and every later full collection walks them all again: 0.2-0.3 s
with every thread stopped, so a Slack ack or an analyst's tool round waits for it. So the collector is paused
while such a process starts, and what the start left alive is frozen out of later collections before it serves."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


@contextmanager
def paused_for_startup() -> Iterator[None]:
    """No cyclic collection in the block until `startup_done`: the process only builds long-lived objects until
    then. A start that ends before it (a refusal, an error) has the collector back on the way out."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def startup_done() -> None:
    """Collect the start's garbage once, move everything alive to the permanent generation (gc.freeze, never
    scanned again) and collect as usual from here on."""
    gc.collect()
    gc.freeze()
    gc.enable()
    log.debug("start-up heap frozen: %d objects", gc.get_freeze_count())
