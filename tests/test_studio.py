"""The graphs `langgraph.json` serves (graphs/studio.py), driven the way LangGraph Agent Server drives them: the
factory's graph gets the server's checkpointer attached (`graph.copy(update={"checkpointer": ...})`, as
langgraph_api.graph.get_graph does) and every run a JSON dict as its context (the caller's configurable mirrored).
Then the same through a real `langgraph dev` on loopback and langgraph-sdk. Sample data, embedded SQLite in a
temporary data dir, no model."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from sqlalchemy import select
from sqlalchemy.orm import Session

from graphs import studio
from graphs.registry import WORKFLOWS
from tools.settings import get_settings
from tools.storage.broker_records import OrderEvent

ROOT = Path(__file__).resolve().parents[1]
TRADER = "UTRADER"
SIGNAL = "signal ma_cross 000001.SZ 20200101 20200630"
ORDER = "order 600519.SH buy 100"
ENV = {"QUANTDESK_DATA_PROVIDER": "sample", "QUANTDESK_TRADERS": TRADER, "QUANTDESK_SANDBOX_WORKERS": "1",
       "LANGSMITH_TRACING": "false"}
UNSET = ("DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "TUSHARE_TOKEN", "QUANTDESK_LOCAL_DATA",
         "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGCHAIN_TRACING_V2", "LANGGRAPH_CLOUD_LICENSE_KEY")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The settings the server process would read: a fresh data dir, sample data, one trader, no model, no .env."""
    home = tmp_path_factory.mktemp("studio")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(home)
        mp.setenv("QUANTDESK_DATA_DIR", str(home / "data"))
        for name, value in ENV.items():
            mp.setenv(name, value)
        for name in UNSET:
            mp.delenv(name, raising=False)
        get_settings.cache_clear()
        studio._settings_context.cache_clear()
        yield home / "data"
        studio.server_context().engine.dispose()
        studio._settings_context.cache_clear()
        get_settings.cache_clear()


class ServedThread:
    """One thread of a served graph: the factory's graph with an in-memory checkpointer, invoked with a dict
    context the way the server invokes it."""

    def __init__(self, factory: Callable[[], Awaitable[CompiledStateGraph]]) -> None:
        self.graph = asyncio.run(factory()).copy(update={"checkpointer": InMemorySaver(), "store": InMemoryStore()})
        self.thread = uuid.uuid4().hex

    def run(self, value: Any, configurable: dict[str, Any] | None = None) -> dict[str, Any]:
        config = {"configurable": {**(configurable or {}), "thread_id": self.thread}}
        return self.graph.invoke(value, config, context=dict(configurable or {}))

    def say(self, text: str) -> dict[str, Any]:
        return self.run({"messages": [HumanMessage(text)]})

    def pending(self) -> list[Any]:
        return list(self.graph.get_state({"configurable": {"thread_id": self.thread}}).interrupts)


def _events(thread: str) -> list[tuple[str, str | None]]:
    """The order audit trail of the thread's orders (their client order ids start with the thread id)."""
    with Session(studio.server_context().engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.client_order_id.startswith(f"{thread}:"))
                               .order_by(OrderEvent.id))
        return [(row.event, row.actor) for row in rows]


def test_langgraph_json_serves_every_workflow_and_the_router_from_the_factories() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"] == {"quantdesk": "graphs.studio:main",
                                **{name: f"graphs.studio:{name}" for name in WORKFLOWS}}
    assert config["dependencies"] == ["."] and config["python_version"] == "3.11"


@pytest.mark.parametrize("name", ["main", *WORKFLOWS])
def test_each_factory_compiles_without_a_checkpointer_on_the_settings_context(data_dir: Path, name: str) -> None:
    graph = asyncio.run(getattr(studio, name)())
    assert graph.checkpointer is None and graph.context_schema is studio.ServerContext
    assert graph.get_context_jsonschema() == {"properties": {}, "type": "object"}  # Studio's context form: empty
    context = studio.ServerContext(user=TRADER)  # what LangGraph builds from the server's dict
    assert context.engine is studio.server_context().engine and context.traders == frozenset({TRADER})
    assert (data_dir / "quantdesk.db").is_file()


def test_concurrent_first_runs_share_one_context(data_dir: Path) -> None:
    studio.server_context().engine.dispose()
    studio._settings_context.cache_clear()
    with ThreadPoolExecutor(4) as pool:
        contexts = list(pool.map(lambda _: studio.server_context(), range(4)))
    assert all(c is contexts[0] for c in contexts)


@pytest.mark.parametrize("factory", [studio.main, studio.signal])
def test_a_signal_request_runs_to_its_result(data_dir: Path, factory: Callable[[], Awaitable[Any]]) -> None:
    out = ServedThread(factory).say(SIGNAL)
    assert out["result"]["codes"] == ["000001.SZ"] and "sharpe" in out["result"]["metrics"]


def test_an_order_waits_for_a_trader_and_a_resume_naming_nobody_is_refused_and_recorded(data_dir: Path) -> None:
    thread = ServedThread(studio.order)
    out = thread.say(ORDER)
    (card,) = out["__interrupt__"]
    assert card.value["type"] == "approval" and card.value["deciders"] == "traders"

    thread.run(Command(resume={card.id: {"type": "approve"}}))  # no configurable.user
    (again,) = thread.pending()
    assert "a caller who named no user is not a trader" in again.value["description"]
    assert _events(thread.thread)[-1] == ("refused", None)

    done = thread.run(Command(resume={again.id: {"type": "approve"}}), {"user": TRADER})
    assert done["result"]["status"] == "filled" and done["result"]["decided_by"] == TRADER
    assert ("approved", TRADER) in _events(thread.thread) and thread.pending() == []


def test_the_router_sends_an_order_to_the_order_workflow_and_its_approval(data_dir: Path) -> None:
    out = ServedThread(studio.main).say(ORDER)
    assert out["workflow"] == "order" and out["__interrupt__"][0].value["type"] == "approval"


def test_a_rule_runs_on_the_settings_context(data_dir: Path) -> None:
    rule = studio.server_context().rules.add(  # type: ignore[union-attr]
        TRADER, "studio", "600519.SH", "buy when close > 0; sell when close < 0", source="language", size=100)
    out = ServedThread(studio.rule).say(f"rule run {rule.id}")
    assert out["__interrupt__"][0].value["args"]["order"].startswith("BUY 100 600519.SH")


def test_a_factor_request_reaches_its_code_review(data_dir: Path) -> None:
    out = ServedThread(studio.factor).say("factor momentum 20190301 20200601 window=20")
    assert out["__interrupt__"][0].value["type"] == "code_review"


# --- a real `langgraph dev` on loopback -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[str]:
    """`langgraph dev` on 127.0.0.1 in a temporary copy of the project's langgraph.json: nothing leaves the machine
    (no tracing, analytics, version check or browser), its data dir and the server's own files are temporary."""
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
    if cli is None:
        message = 'langgraph-cli is not installed: pip install -e ".[test]" (it brings langgraph-cli[inmem])'
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    shutil.copy(ROOT / "langgraph.json", tmp_path / "langgraph.json")
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(ENV, QUANTDESK_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT), LANGGRAPH_CLI_NO_ANALYTICS="1",
               LANGGRAPH_NO_VERSION_CHECK="true")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if server.poll() is not None:
                pytest.fail(f"langgraph dev exited ({server.returncode}):\n{(tmp_path / 'server.log').read_text()}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer in 90 s:\n{(tmp_path / 'server.log').read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_langgraph_dev_serves_the_order_graph_and_refuses_unauthenticated_approvals(dev_server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server)
    assert {a["graph_id"] for a in client.assistants.search()} == {"quantdesk", *WORKFLOWS}
    thread = client.threads.create()["thread_id"]
    first = client.runs.wait(thread, "order", input={"messages": [{"role": "user", "content": ORDER}]})
    assert first["__interrupt__"][0]["value"]["type"] == "approval"
    (card,) = client.threads.get_state(thread)["interrupts"]

    client.runs.wait(thread, "order", command={"resume": {card["id"]: {"type": "approve"}}})
    (again,) = client.threads.get_state(thread)["interrupts"]  # refused: the resume named nobody
    assert "a caller who named no user is not a trader" in again["value"]["description"]

    # a name the caller types is not an identity: `langgraph dev` authenticates nobody, so it cannot approve
    client.runs.wait(thread, "order", command={"resume": {again["id"]: {"type": "approve"}}},
                     config={"configurable": {"user": TRADER}})
    (still,) = client.threads.get_state(thread)["interrupts"]
    assert "a caller who named no user is not a trader" in still["value"]["description"]
    rejected = client.runs.wait(thread, "order", command={"resume": {still["id"]: {
        "type": "reject", "message": "placed from Slack instead"}}})
    assert rejected["result"]["status"] == "rejected" and client.threads.get_state(thread)["interrupts"] == []
