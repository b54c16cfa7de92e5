"""The console's early answers (bot/console/early.py, issue 37): a `help` typed while the session warms up is
answered from the light layer with the session's own text, in the operator's own language, and the light layer
imports no graph, no LangChain and (on the embedded default) no SQLAlchemy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.console.early import EarlyAnswers, operator_language
from testkit.console import cli_env, console_lines
from testkit.paths import REPO
from tools.settings import Settings


def _settings(data_dir: Path, **env: str) -> Settings:
    return Settings(_env_file=None, QUANTDESK_DATA_DIR=str(data_dir), **env)


def _help_in(lines: list[str], text: str) -> bool:
    """`text`'s lines appear in `lines`, in order and together."""
    wanted = text.splitlines()
    return any(lines[at:at + len(wanted)] == wanted for at in range(len(lines)))


def test_the_early_help_is_the_sessions_help(tmp_path: Path) -> None:
    early = EarlyAnswers(_settings(tmp_path / "data")).answer("help")
    assert early is not None and "signal STRATEGY CODES START END" in early and "codes the data provider" in early
    assert _help_in(console_lines(tmp_path, "help"), early)


def test_the_early_help_is_in_the_language_the_operator_chose_in_an_earlier_session(tmp_path: Path) -> None:
    console_lines(tmp_path, "lang zh")  # the session stores the choice
    settings = _settings(tmp_path / "data")
    assert operator_language(settings) == "zh-CN"
    early = EarlyAnswers(settings)
    answer, typed_in_chinese = early.answer("help"), early.answer("帮助")
    assert answer is not None and answer == typed_in_chinese and "工作流请求" in answer
    assert _help_in(console_lines(tmp_path, "help"), answer)


def test_without_a_database_yet_the_workspace_language_holds(tmp_path: Path) -> None:
    """A first start: no database file, so nobody chose; QUANTDESK_LANGUAGE is the answer's language."""
    settings = _settings(tmp_path / "data", QUANTDESK_LANGUAGE="中文")
    assert not (tmp_path / "data" / "quantdesk.db").exists()
    assert operator_language(settings) == "zh-CN"
    assert not (tmp_path / "data" / "quantdesk.db").exists(), "reading the language must not create the database"


def test_a_database_without_its_tables_yet_falls_back_to_the_workspace_language(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "quantdesk.db").write_bytes(b"")
    assert operator_language(_settings(tmp_path / "data")) == "en"


def test_a_configured_database_url_is_read_through_the_sessions_stores(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'own.db'}"
    console_lines(tmp_path, "lang zh", DATABASE_URL=url)
    assert operator_language(_settings(tmp_path / "data", DATABASE_URL=url)) == "zh-CN"
    assert operator_language(_settings(tmp_path / "data")) == "en"  # the embedded file is another database


@pytest.mark.parametrize("line", ["fields", "lang zh", "status", "pending", "signal ma_cross 000001.SZ 20200101 "
                                  "20200630", "account", "规则清单", "what is momentum?", "quit", "help me with x"])
def test_every_other_line_waits_for_the_session(tmp_path: Path, line: str) -> None:
    assert EarlyAnswers(_settings(tmp_path / "data")).answer(line) is None


@pytest.mark.parametrize(("module", "absent"), [
    ("bot.console.early", ("langgraph", "langchain_core", "sqlalchemy", "graphs.context", "bot.core")),
    ("graphs.registry", ("langgraph", "langchain_core", "graphs.context", "graphs.signal.graph", "matplotlib")),
])
def test_the_light_layer_imports_nothing_heavy(tmp_path: Path, module: str, absent: tuple[str, ...]) -> None:
    code = f"import sys, {module}; print(' '.join(m for m in {absent!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=cli_env(tmp_path), check=True)
    assert out.stdout.strip() == "", f"importing {module} imported {out.stdout.strip()}"
