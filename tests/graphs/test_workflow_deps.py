"""Each workflow reads from the run's context only what its `deps.py` Protocol declares, and the one context the
adapters build satisfies every declaration (issue 24: no workflow receives the whole bag)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import get_type_hints

import pytest

from graphs.context import WorkflowContext
from graphs.registry import WORKFLOWS
from graphs.workflow import Workflow
from testkit.paths import REPO

GRAPHS = REPO / "graphs"
CONTEXT_HOLDERS = {"runtime", "call"}  # `runtime.context` (a node), `call.context` (a subcommand)


def members(klass: type) -> dict[str, object]:
    """A declaration's own members and their types: its fields and its read-only properties (not the dataclass
    marker every declaration carries for LangGraph)."""
    hints = {name: hint for name, hint in get_type_hints(klass).items() if not name.startswith("__")}
    properties = {name: get_type_hints(value.fget)["return"] for name, value in vars(klass).items()
                  if isinstance(value, property) and value.fget is not None}
    return hints | properties


def declared(deps: type) -> set[str]:
    return {name for klass in deps.__mro__ if klass.__name__ not in {"Protocol", "Generic", "object"}
            for name in members(klass)}


def _is_context(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return (isinstance(node, ast.Attribute) and node.attr == "context" and isinstance(node.value, ast.Name)
            and node.value.id in CONTEXT_HOLDERS)


def _context_names(function: ast.FunctionDef | ast.Lambda, deps_names: set[str]) -> set[str]:
    """Parameters annotated with a deps protocol, and locals bound to `runtime.context`."""
    names = {arg.arg for arg in function.args.args + function.args.kwonlyargs
             if arg.annotation is not None and ast.unparse(arg.annotation) in deps_names}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            pairs = (zip(target.elts, value.elts, strict=False)
                     if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) else [(target, value)])
            names |= {t.id for t, v in pairs if isinstance(t, ast.Name) and _is_context(v, set())}
    return names


def reads(source: str, deps_names: set[str]) -> dict[str, int]:
    """Every attribute read off the context in a module: name -> first line."""
    found: dict[str, int] = {}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.Lambda):
            continue
        names = _context_names(function, deps_names)
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and _is_context(node.value, names):
                found.setdefault(node.attr, node.lineno)
    return found


def _package(workflow: Workflow) -> Path:
    return GRAPHS / workflow.deps.resolve().__module__.split(".")[1]


@pytest.mark.parametrize("workflow", WORKFLOWS.values(), ids=lambda w: w.name)
def test_a_workflow_reads_only_what_it_declares(workflow: Workflow) -> None:
    deps = workflow.deps.resolve()
    allowed = declared(deps)
    deps_names = {"Market", "Models", "Storage"} | {w.deps.resolve().__name__ for w in WORKFLOWS.values()}
    undeclared = []
    for path in sorted(_package(workflow).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "WorkflowContext" not in source, f"{path} names the whole context; type it {deps.__name__}"
        undeclared += [f"{path.relative_to(GRAPHS)}:{line} reads {name}"
                       for name, line in reads(source, deps_names).items() if name not in allowed]
    assert not undeclared, f"{deps.__name__} does not declare: {undeclared}"


def test_the_workflows_read_different_things() -> None:
    """The declarations are narrow: no workflow is handed everything the adapters build."""
    everything = {field.name for field in dataclasses.fields(WorkflowContext)}
    for workflow in WORKFLOWS.values():
        assert declared(workflow.deps.resolve()) < everything, workflow.name
    assert "sandbox" not in declared(WORKFLOWS["order"].deps.resolve())


@pytest.mark.parametrize("workflow", WORKFLOWS.values(), ids=lambda w: w.name)
def test_the_adapters_context_satisfies_each_declaration(workflow: Workflow) -> None:
    fields = get_type_hints(WorkflowContext)
    for klass in workflow.deps.resolve().__mro__:
        if klass.__name__ in {"Protocol", "Generic", "object"}:
            continue
        for name, hint in members(klass).items():
            assert name in fields, f"{workflow.name} declares {name}, which the context does not carry"
            assert fields[name] == hint, f"{workflow.name}'s {name} is {hint}, the context's {fields[name]}"


def test_the_reader_sees_aliases_parameters_and_commands() -> None:
    """The checker itself: it finds reads through `runtime.context`, an alias, a typed parameter and a command."""
    source = '''
def node(state, runtime):
    ctx, x = runtime.context, 1
    return ctx.sandbox, runtime.context.engine
def helper(deps: SignalDeps):
    return deps.traders
def command(call):
    return call.context.rules
'''
    assert set(reads(source, {"SignalDeps"})) == {"sandbox", "engine", "traders", "rules"}
