"""The collector around a process's start-up (bot/heap.py): paused while `serve`, `worker` or `chat` starts, the
start's garbage collected once and what it left alive frozen out of later collections, and back on for a start that
ends early (a refused `quantdesk worker`: tests/bot/core/test_jobs.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.heap import paused_for_startup, startup_done


class Node:
    """An object that can be part of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, frozen objects given back, whatever the test did."""
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()
        else:
            gc.disable()


def test_the_start_is_not_collected_then_its_garbage_is_and_what_it_kept_is_frozen(collector: None) -> None:
    with paused_for_startup():
        assert not gc.isenabled()
        kept = Node()
        garbage = Node()
        garbage.other = Node()
        garbage.other.other = garbage  # a cycle: only the collector frees it
        gone = weakref.ref(garbage)
        del garbage
        assert gone() is not None  # nothing freed it while the start runs
        startup_done()
        assert gc.isenabled()
        assert gone() is None
        assert gc.get_freeze_count() > 0
        assert not any(obj is kept for obj in gc.get_objects())  # frozen: no later collection walks it
    assert gc.isenabled()


def test_a_start_that_ends_before_it_is_done_has_the_collector_back(collector: None) -> None:
    with pytest.raises(RuntimeError), paused_for_startup():
        raise RuntimeError("the database is not migrated")
    assert gc.isenabled() and gc.get_freeze_count() == 0
