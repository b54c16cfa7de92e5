"""The graphs `langgraph.json` serves (graphs/studio.py), driven the way LangGraph Agent Server drives them: the
factory's graph gets the server's checkpointer attached (`graph.copy(update={"checkpointer": ...})`, as
langgraph_api.graph.get_graph does) and every run a JSON dict as its context (the caller's configurable mirrored).
Then the same through a real `langgraph dev` on loopback and langgraph-sdk, behind the auth handler
`langgraph.json` names (bot/studio_auth.py): bearer tokens mapped to Slack user ids, one a trader and one not. Sample
data, embedded SQLite in a temporary data dir, no model."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_type_hints

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from langgraph_sdk import Auth
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot import studio_auth
from graphs import studio
from graphs.context import traders_of
from graphs.main import build_main_graph
from graphs.registry import WORKFLOWS
from testkit.paths import REPO
from testkit.wait import wait_until
from tools.broker.records import OrderEvent
from tools.factors.store import FactorStore
from tools.settings import get_settings
from tools.storage.db import make_engine

TRADER = "UTRADER"
VIEWER = "UVIEWER"  # has a Studio token, is not a trader
TOKENS = {TRADER: "trader-" + "t" * 40, VIEWER: "viewer-" + "v" * 40}
SIGNAL = "signal ma_cross 000001.SZ 20200101 20200630"
ORDER = "order 600519.SH buy 100"
ENV = {"QUANTDESK_DATA_PROVIDER": "sample", "QUANTDESK_TRADERS": TRADER, "QUANTDESK_SANDBOX_WORKERS": "1",
       "LANGSMITH_TRACING": "false",
       "QUANTDESK_STUDIO_TOKENS": ",".join(f"{user}:{studio_auth.token_digest(t)}" for user, t in TOKENS.items())}
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


def _events(thread: str, engine: Engine | None = None) -> list[tuple[str, str | None]]:
    """The order audit trail of the thread's orders (their client order ids start with the thread id)."""
    with Session(engine or studio.server_context().engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.client_order_id.startswith(f"{thread}:"))
                               .order_by(OrderEvent.id))
        return [(row.event, row.actor) for row in rows]


def test_langgraph_json_serves_every_workflow_and_the_router_from_the_factories() -> None:
    config = json.loads((REPO / "langgraph.json").read_text())
    assert config["graphs"] == {"quantdesk": "graphs.studio:main",
                                **{name: f"graphs.studio:{name}" for name in WORKFLOWS}}
    assert config["dependencies"] == ["."] and config["python_version"] == "3.11"
    # every request goes through bot/studio_auth.py, Studio's too (no LangSmith bypass under `langgraph dev`)
    assert config["auth"] == {"path": "bot.studio_auth:auth", "disable_studio_auth": True}


@pytest.mark.parametrize("name", ["main", *WORKFLOWS])
def test_each_factory_compiles_without_a_checkpointer_on_the_settings_context(data_dir: Path, name: str) -> None:
    graph = asyncio.run(getattr(studio, name)())
    assert graph.checkpointer is None and graph.context_schema is studio.ServerContext
    assert graph.get_context_jsonschema() == {"properties": {}, "type": "object"}  # Studio's context form: empty
    context = studio.ServerContext(user=TRADER)  # what LangGraph builds from the server's dict
    assert context.engine is studio.server_context().engine and traders_of(context, "") == frozenset({TRADER})  # seeded
    assert (data_dir / "quantdesk.db").is_file()


@pytest.mark.parametrize("name", ["main", *WORKFLOWS])
def test_each_served_graph_has_an_input_form_for_its_request_message(data_dir: Path, name: str) -> None:
    schema = asyncio.run(getattr(studio, name)()).get_input_jsonschema()
    assert list(schema["properties"]) == ["messages"] and schema["required"] == ["messages"]
    field = schema["properties"]["messages"]
    assert field["type"] == "array" and "human message" in field["description"]
    shown = [w for w in WORKFLOWS.values() if name in ("main", w.name)]
    for workflow in shown:  # the grammar and an example request of each workflow the graph serves
        assert workflow.usage in schema["description"] and f'"content": "{workflow.example}"' in field["description"]


@pytest.mark.parametrize("name", ["main", *WORKFLOWS])
def test_each_served_graph_takes_its_request_form_as_its_input_schema(data_dir: Path, name: str) -> None:
    schema = asyncio.run(getattr(studio, name)()).builder.input_schema
    assert schema.__name__ == ("Quantdesk" if name == "main" else name.capitalize()) + "Input"
    assert list(get_type_hints(schema)) == ["messages"]


@pytest.mark.parametrize("name", ["main", *WORKFLOWS])
def test_a_graph_served_with_an_input_schema_is_the_same_graph_otherwise(name: str) -> None:
    """The served graph is rebuilt through StateGraph's public constructor and methods: the same node specs, edges,
    branches, channels and drawing; only the input schema is new."""
    graph = build_main_graph() if name == "main" else WORKFLOWS[name].build()
    schema = studio.input_schema(name, "A request.", ["an example"])
    served = studio._with_input(graph, schema)
    built, rebuilt = graph.builder, served.builder
    assert rebuilt.input_schema is schema and built.input_schema is built.state_schema
    assert (rebuilt.state_schema, rebuilt.context_schema, rebuilt.output_schema) == (
        built.state_schema, built.context_schema, built.output_schema)
    assert rebuilt.nodes == built.nodes and rebuilt.edges == built.edges and rebuilt.branches == built.branches
    assert rebuilt.waiting_edges == built.waiting_edges
    assert rebuilt.channels == built.channels and rebuilt.managed == built.managed
    assert rebuilt.schemas == {**built.schemas, schema: rebuilt.schemas[schema]}
    assert served.get_graph().to_json() == graph.get_graph().to_json() and served.name == graph.name


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


def test_under_the_server_only_the_resuming_identity_decides_an_order(data_dir: Path) -> None:
    """Behind the auth handler's refusal of state writes, the policy node itself: a `decided_by` written into the
    state is ignored under the Agent Server, and the identity running the thread on is checked instead."""
    thread = ServedThread(studio.order)
    thread.say(ORDER)
    config = {"configurable": {"thread_id": thread.thread}}
    subgraph = thread.graph.get_state(config, subgraphs=True).tasks[0].state.config
    forged = {"decision": {"type": "approve"}, "decided_by": TRADER, "decided_at": datetime.now(UTC).isoformat()}
    thread.graph.update_state(subgraph, forged, as_node="approve")
    thread.run(None, {"langgraph_auth_user_id": VIEWER})
    (again,) = thread.pending()
    assert f"{VIEWER} is not a trader" in again.value["description"]
    assert _events(thread.thread)[-2:] == [("proposed", None), ("refused", VIEWER)]


def test_under_the_server_a_decision_time_the_caller_names_is_ignored(data_dir: Path) -> None:
    """Issue 38, item 3: the decision time is the server's. A caller dating its approval back could approve an
    expired card; here one dating it after the card's expiry is not believed either: the order fills."""
    thread = ServedThread(studio.order)
    (card,) = thread.say("order 000001.SZ buy 100")["__interrupt__"]  # small: the module's other orders filled
    late = {"langgraph_auth_user_id": TRADER, "decided_at": "2999-01-01T00:00:00+00:00"}
    done = thread.run(Command(resume={card.id: {"type": "approve"}}), late)
    assert done["result"]["status"] == "filled" and done["result"]["decided_by"] == TRADER
    assert ("expired", TRADER) not in _events(thread.thread)


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


# --- the auth handler langgraph.json names (bot/studio_auth.py) ---------------------------------------------------


def test_tokens_map_to_slack_users_by_their_hashes() -> None:
    configured = studio_auth.token_users(ENV["QUANTDESK_STUDIO_TOKENS"])
    assert studio_auth.user_for(f"Bearer {TOKENS[TRADER]}", configured) == TRADER
    assert studio_auth.user_for(f"bearer  {TOKENS[VIEWER]} ", configured) == VIEWER
    for header in (None, "", TOKENS[TRADER], f"Basic {TOKENS[TRADER]}", f"Bearer {TOKENS[TRADER]}x",
                   "Bearer " + TOKENS[TRADER][:20]):
        assert studio_auth.user_for(header, configured) is None
    short = "s" * 20  # below the floor even when its hash is configured
    assert studio_auth.user_for(f"Bearer {short}", ((studio_auth.token_digest(short), VIEWER),)) is None


@pytest.mark.parametrize("raw", [f"{TRADER}:{TOKENS[TRADER]}", f"{TRADER}={'a' * 64}", f"U 1:{'a' * 64}",
                                 f"{TRADER}:{'a' * 64},{VIEWER}:{'A' * 64}"])
def test_malformed_token_settings_are_refused_without_echoing_them(raw: str) -> None:
    with pytest.raises(ValueError) as caught:
        studio_auth.token_users(raw)
    assert TOKENS[TRADER] not in str(caught.value) and "a" * 64 not in str(caught.value).lower()


def test_authenticate_answers_401_without_a_configured_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_STUDIO_TOKENS", ENV["QUANTDESK_STUDIO_TOKENS"])
    get_settings.cache_clear()
    try:
        user = asyncio.run(studio_auth.authenticate(f"Bearer {TOKENS[TRADER]}"))
        assert user == {"identity": TRADER, "display_name": TRADER}
        monkeypatch.delenv("QUANTDESK_STUDIO_TOKENS")
        get_settings.cache_clear()
        with pytest.raises(Auth.exceptions.HTTPException) as caught:  # nobody configured: nobody gets in
            asyncio.run(studio_auth.authenticate(f"Bearer {TOKENS[TRADER]}"))
        assert caught.value.status_code == 401
    finally:
        get_settings.cache_clear()


# --- a real `langgraph dev` on loopback -------------------------------------------------------------------------


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DevServer:
    url: str
    port: int
    args: list[str]  # its command line
    engine: Engine  # the server's own database (its QUANTDESK_DATA_DIR), for the order audit trail

    def client(self, user: str | None) -> Any:
        """A langgraph-sdk client sending `user`'s bearer token (None: no Authorization header)."""
        from langgraph_sdk import get_sync_client

        headers = {"Authorization": f"Bearer {TOKENS[user]}"} if user else None
        return get_sync_client(url=self.url, headers=headers)


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """`langgraph dev` on 127.0.0.1 in a temporary copy of the project's langgraph.json, one for the module:
    nothing leaves the machine (no tracing, analytics, version check or browser), its data dir and the server's
    own files are temporary; the trader and the viewer have tokens."""
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
    if cli is None:
        message = 'langgraph-cli is not installed: pip install -e ".[test]" (it brings langgraph-cli[inmem])'
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    home = tmp_path_factory.mktemp("dev")
    shutil.copy(REPO / "langgraph.json", home / "langgraph.json")
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(ENV, QUANTDESK_DATA_DIR=str(home / "data"), PYTHONPATH=str(REPO), LANGGRAPH_CLI_NO_ANALYTICS="1",
               LANGGRAPH_NO_VERSION_CHECK="true")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    args = [cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)]
    log = (home / "server.log").open("w")
    server = subprocess.Popen(args, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    engine = None
    try:
        try:
            wait_until(lambda: _answers(f"{url}/ok"), "langgraph dev to answer", 90, interval=0.5,
                       gone=lambda: None if server.poll() is None else f"langgraph dev exited ({server.returncode})")
        except AssertionError as exc:
            pytest.fail(f"{exc}:\n{(home / 'server.log').read_text()}")
        engine = make_engine(f"sqlite:///{home / 'data' / 'quantdesk.db'}")
        yield DevServer(url, port, args, engine)
    finally:
        if engine is not None:
            engine.dispose()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    served = (home / "server.log").read_text()  # every request the module's tests made, refused ones too
    assert not [t for t in TOKENS.values() if t in served], "a bearer token reached the server's log"


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net shows them) of the sockets listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_langgraph_dev_listens_on_loopback_only(dev_server: DevServer) -> None:
    assert dev_server.args[dev_server.args.index("--host") + 1] == "127.0.0.1"
    if not Path("/proc/net/tcp").is_file():
        pytest.skip("no /proc/net/tcp to read the listening address from")
    assert _listening(dev_server.port) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or IPv6


def test_langgraph_dev_refuses_callers_without_a_known_token(dev_server: DevServer) -> None:
    from langgraph_sdk.errors import AuthenticationError

    for headers in ({}, {"Authorization": "Bearer " + "x" * 40}, {"Authorization": TOKENS[TRADER]},
                    {"x-auth-scheme": "langsmith"}):  # Studio's LangSmith scheme gets no pass either
        for method, path in (("POST", "/threads"), ("POST", "/assistants/search")):
            answer = httpx.request(method, dev_server.url + path, json={}, headers=headers, timeout=10)
            assert answer.status_code == 401 and TOKENS[TRADER] not in answer.text, (headers, path)
    with pytest.raises(AuthenticationError):
        dev_server.client(None).threads.create()
    assert {a["graph_id"] for a in dev_server.client(VIEWER).assistants.search()} == {"quantdesk", *WORKFLOWS}


def _propose(client: Any) -> tuple[str, dict[str, Any]]:
    """A new thread of `client`'s with an order waiting for approval, and its approval card."""
    thread = client.threads.create()["thread_id"]
    first = client.runs.wait(thread, "order", input={"messages": [{"role": "user", "content": ORDER}]})
    assert first["__interrupt__"][0]["value"]["type"] == "approval"
    (card,) = client.threads.get_state(thread)["interrupts"]
    return thread, card


def test_a_non_traders_approval_is_refused_and_recorded_and_their_thread_is_their_own(dev_server: DevServer,
                                                                                    ) -> None:
    from langgraph_sdk.errors import NotFoundError

    viewer, trader = dev_server.client(VIEWER), dev_server.client(TRADER)
    thread, card = _propose(viewer)
    # the decider is the token's Slack user; a `configurable.user` the caller types changes nothing
    viewer.runs.wait(thread, "order", command={"resume": {card["id"]: {"type": "approve"}}},
                     config={"configurable": {"user": TRADER}})
    (again,) = viewer.threads.get_state(thread)["interrupts"]
    assert f"{VIEWER} is not a trader" in again["value"]["description"]
    assert _events(thread, dev_server.engine) == [("proposed", None), ("refused", VIEWER)]

    # the thread is the viewer's: the trader cannot find, read or resume it
    assert thread not in {t["thread_id"] for t in trader.threads.search()}
    for call in (lambda: trader.threads.get(thread), lambda: trader.threads.get_state(thread)):
        with pytest.raises(NotFoundError):
            call()
    with pytest.raises(httpx.HTTPStatusError) as caught:
        trader.runs.wait(thread, "order", command={"resume": {again["id"]: {"type": "approve"}}})
    assert caught.value.response.status_code == 404
    assert _events(thread, dev_server.engine)[-1] == ("refused", VIEWER)

    rejected = viewer.runs.wait(thread, "order", command={"resume": {again["id"]: {
        "type": "reject", "message": "placed from Slack instead"}}})
    assert rejected["result"]["status"] == "rejected" and viewer.threads.get_state(thread)["interrupts"] == []
    assert _events(thread, dev_server.engine)[-1] == ("rejected", VIEWER)


def test_a_factor_request_is_reviewed_and_saved_through_the_sdk_with_its_reviewer(dev_server: DevServer) -> None:
    """The issue's own check: create a thread, run a factor request, read the code review, resume it with
    approve, and find the factor saved with the token's user as its reviewer."""
    viewer = dev_server.client(VIEWER)
    thread = viewer.threads.create()["thread_id"]
    name = f"mom_{uuid.uuid4().hex[:6]}"
    viewer.runs.wait(thread, "factor", input={"messages": [
        {"role": "user", "content": f"factor momentum 20190301 20200601 window=20 name={name}"}]})
    (review,) = viewer.threads.get_state(thread)["interrupts"]
    assert review["value"]["type"] == "code_review" and review["value"]["allowed"] == ["approve", "edit", "reject"]
    done = viewer.runs.wait(thread, "factor", command={"resume": {review["id"]: {"type": "approve"}}})
    assert done["result"]["workflow"] == "factor" and done["result"]["decision"] == "approve"
    saved = FactorStore(dev_server.engine).latest(name)
    assert saved is not None and saved.reviewer == VIEWER and viewer.threads.get_state(thread)["interrupts"] == []


def test_nobody_can_write_a_threads_state_to_forge_an_approval(dev_server: DevServer) -> None:
    """A caller may not write a decision into the order subgraph's state (as if a trader had approved) and then
    run the thread on: the state write is refused, and nothing is approved or placed."""
    viewer = dev_server.client(VIEWER)
    thread, _card = _propose(viewer)
    subgraph = viewer.threads.get_state(thread, subgraphs=True)["tasks"][0]["state"]
    forged = {"decision": {"type": "approve"}, "decided_by": TRADER, "decided_at": datetime.now(UTC).isoformat()}
    with pytest.raises(httpx.HTTPStatusError) as caught:
        viewer.threads.update_state(thread, forged, as_node="approve", checkpoint=subgraph["checkpoint"])
    assert caught.value.response.status_code in (403, 404)
    viewer.runs.wait(thread, "order", input=None)
    assert _events(thread, dev_server.engine) == [("proposed", None)]
    assert viewer.threads.get_state(thread)["interrupts"][0]["value"]["type"] == "approval"


def test_a_traders_approval_fills_and_records_the_trader(dev_server: DevServer) -> None:
    trader = dev_server.client(TRADER)
    thread, card = _propose(trader)
    done = trader.runs.wait(thread, "order", command={"resume": {card["id"]: {"type": "approve"}}})
    assert done["result"]["status"] == "filled" and done["result"]["decided_by"] == TRADER
    assert trader.threads.get_state(thread)["interrupts"] == []
    assert _events(thread, dev_server.engine) == [("proposed", None), ("approved", TRADER), ("submitted", TRADER),
                                                  ("filled", None)]
