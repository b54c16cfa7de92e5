from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from sqlalchemy import Engine, inspect

from graphs.checkpointer import open_checkpointer
from tools.storage.db import libpq_url, make_engine, redacted, sqlalchemy_url
from tools.storage.migrate import current_revision, downgrade, head_revision, upgrade

APP_TABLES = {"threads", "audit_log", "workspace_frames", "decisions", "posts", "inbox", "artifacts"}


def test_migrations_create_the_application_tables(engine: Engine) -> None:
    assert current_revision(engine) == head_revision()
    assert set(inspect(engine).get_table_names()) >= APP_TABLES


def test_upgrade_is_idempotent_and_downgrade_reverses(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    assert upgrade(engine) == head_revision()
    downgrade(engine, "base")
    assert not APP_TABLES & set(inspect(engine).get_table_names())
    upgrade(engine)
    assert set(inspect(engine).get_table_names()) >= APP_TABLES
    engine.dispose()


def test_url_helpers() -> None:
    url = "postgresql://app:secret@db:5432/quant"
    assert sqlalchemy_url(url).startswith("postgresql+psycopg://app:secret@db")
    assert libpq_url("postgresql+psycopg://app:secret@db/quant") == "postgresql://app:secret@db/quant"
    assert "secret" not in redacted(url)


class _State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(checkpointer):  # noqa: ANN001, ANN202
    def ask(_state: _State) -> dict:
        answer = interrupt({"kind": "clarify", "question": "which code?"})
        return {"steps": [f"answer:{answer}"]}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=checkpointer)


def test_checkpointer_survives_reopening(db_url: str) -> None:
    config = {"configurable": {"thread_id": f"t-{db_url[-8:]}-reopen"}}
    with open_checkpointer(db_url) as saver:
        result = _graph(saver).invoke({"steps": ["start"]}, config)
        (pending,) = result["__interrupt__"]
        assert pending.value["question"] == "which code?"
    with open_checkpointer(db_url) as saver:
        graph = _graph(saver)
        assert graph.get_state(config).next == ("ask",)
        final = graph.invoke(Command(resume={pending.id: "600519.SH"}), config)
    assert final["steps"] == ["start", "answer:600519.SH"]


def test_sqlite_memory_url_is_refused() -> None:
    with pytest.raises(ValueError, match="in-memory"), open_checkpointer("sqlite:///:memory:"):
        pass
