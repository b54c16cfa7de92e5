"""The house layering (ARCHITECTURE §1): imports point bot → graphs → tools, never back; tools/ imports no
LangGraph, LangChain or Slack; graphs/ imports no Slack; the bot names no workflow (the registry does)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from graphs.registry import WORKFLOWS

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "tools": ("bot", "graphs", "langgraph", "langchain", "langchain_core", "langchain_openai", "slack_sdk",
              "slack_bolt"),
    "graphs": ("bot", "slack_sdk", "slack_bolt"),
}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_down_the_layers(package: str) -> None:
    offenders = [f"{path.relative_to(ROOT)}: {name}" for path in _modules(package) for name in _imports(path)
                 if name.split(".")[0] in FORBIDDEN[package]]
    assert offenders == []


def test_the_bot_names_no_workflow() -> None:
    assert {"signal", "factor"} <= set(WORKFLOWS)
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}" for path in _modules("bot")
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in WORKFLOWS]
    assert offenders == []
