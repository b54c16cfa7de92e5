"""The registry names its heavy parts lazily (graphs/workflow.py `Lazy`): each names a function or class that
exists, so a typo in a name fails here rather than at a person's first command."""

from __future__ import annotations

import inspect

import pytest

from graphs.registry import WORKFLOWS, lazy_parts
from graphs.workflow import Lazy


def test_every_heavy_part_is_named_lazily() -> None:
    assert {w.name for w in WORKFLOWS.values() if isinstance(w.build, Lazy) and isinstance(w.present, Lazy)
            and isinstance(w.deps, Lazy)} == set(WORKFLOWS)
    assert len(lazy_parts()) >= 40


@pytest.mark.parametrize("part", lazy_parts(), ids=lambda part: part.target)
def test_each_lazy_part_names_a_callable_of_its_module(part: Lazy) -> None:
    module, _, name = part.target.partition(":")
    found = part.resolve()
    assert callable(found) and inspect.getmodule(found).__name__ == module and found.__name__ == name


def test_a_lazy_part_naming_nothing_fails_at_its_first_use() -> None:
    with pytest.raises(AttributeError):
        Lazy("graphs.workflow:no_such_thing")()
    with pytest.raises(ModuleNotFoundError):
        Lazy("graphs.no_such_module:run").resolve()

