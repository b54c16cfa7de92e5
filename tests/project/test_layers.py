"""The house layering, checked by import-linter contracts (pyproject.toml, [tool.importlinter]): imports point
bot → graphs → tools, never back, TYPE_CHECKING imports included; tools/ imports no LangGraph, LangChain or Slack;
graphs/ imports no Slack; the core imports no surface. And the bot names no workflow: no workflow's name as a
string, a key prefix or the first word of a chat text it builds (the registry names workflows)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphs.registry import WORKFLOWS
from testkit.paths import REPO

LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())"]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the tree under `root`, not the installed one
    return subprocess.run([*LINT, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_hold() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(("planted", "source", "broken"), [
    ("tools/_planted.py", "import graphs.registry\n", "Imports point bot -> graphs -> tools, never back"),
    ("tools/_planted.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bot.runner\n",
     "Imports point bot -> graphs -> tools, never back"),
    ("bot/core/_planted.py", "import bot.slack.surface\n", "The core knows no surface"),
    ("graphs/_planted.py", "from tools.broker.paper import PaperBroker\n",
     "graphs/ and bot/ import no concrete broker"),
    ("bot/console/_planted.py", "from graphs.grammar import split\n",
     "Surfaces read no text: the core's dispatcher does"),
    ("graphs/_planted.py", "import slack_sdk\n", "graphs/ imports no Slack"),
])
def test_a_planted_import_breaks_its_contract(tmp_path: Path, planted: str, source: str, broken: str) -> None:
    for package in ("bot", "graphs", "tools"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.parquet"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / planted).write_text(source)
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert f"{broken} BROKEN" in result.stdout, result.stdout
    assert "_planted" in result.stdout


NAMED = re.compile(rf"^/?({'|'.join(map(re.escape, WORKFLOWS))})(\s|:|=|$)", re.IGNORECASE)  # rule, rule:…


def _naming(tree: ast.AST) -> list[tuple[int, str]]:
    """Each string literal (f-strings' literal parts too) that starts with a workflow's name as a word: a name,
    a key prefix (`rule:`) or a chat text (`rule run …`)."""
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.match(node.value.strip())]


def test_the_bot_names_no_workflow() -> None:
    assert {"signal", "factor", "rule"} <= set(WORKFLOWS)
    offenders = [f"{path.relative_to(REPO)}:{line}: {text!r}" for path in sorted((REPO / "bot").rglob("*.py"))
                 for line, text in _naming(ast.parse(path.read_text()))]
    assert offenders == []


def test_the_name_check_catches_a_key_prefix_and_a_chat_text() -> None:
    planted = ast.parse('KEY = "rule:"\ntext = f"rule run {1} execution={2}"\nfine = "ruler"\n')
    assert [text for _line, text in _naming(planted)] == ["rule:", "rule run "]


MOST_METHODS = 20


def test_no_class_in_the_bot_has_more_than_twenty_methods() -> None:
    """A class a newcomer can hold in their head (issue 37): the core is split by what it does (intake, decisions,
    presentation), the console's data commands are their own."""
    crowded = []
    for path in sorted((REPO / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                if len(methods) > MOST_METHODS:
                    crowded.append(f"{path.relative_to(REPO)}:{node.name} has {len(methods)}")
    assert crowded == []


SURFACE_NAMED = re.compile(r"^(slack|console)\b", re.IGNORECASE)


def test_the_core_and_the_stores_name_no_surface() -> None:
    """Surfaces are registered (bot/surfaces.py: a name, the teams it owns, the channels it serves); the core and
    the stores read the table and never spell a surface's name in a value (docstrings and comments may say it)."""
    named = []
    for path in sorted([*(REPO / "bot" / "core").rglob("*.py"), *(REPO / "bot" / "stores").rglob("*.py")]):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        named += [f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and SURFACE_NAMED.match(node.value.strip())]
    assert named == []
