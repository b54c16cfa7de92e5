"""The real LLM client path end to end: `ChatOpenAI` from settings (graphs/llm.py) against a fake OpenAI-compatible
server on loopback, through tool calls, JSON answers and every way an answer can be unusable; the main router and
the workflow nodes say what the model did wrong; the scripted-model and fake-server fixtures fail a test that
leaves answers unused or runs out of them."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import openai
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError

from graphs.context import WorkflowContext
from graphs.llm import (
    LLM_MAX_RETRIES,
    ModelAnswerError,
    describe_model_failure,
    get_light_llm,
    get_llm,
    invoke_structured,
)
from graphs.main import RouteAnswer, no_route
from testkit.fakes.chat import ScriptedChatModel, ScriptedModels, ScriptExhausted, UnboundToolCall, answer, tool_call
from testkit.fakes.openai_server import API_KEY, FakeOpenAI, OpenAIServer, Step, hang, http_error
from testkit.graph_thread import GraphThread
from testkit.llm import FREE_TEXT, LIGHT, MAIN, settings_for
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

pytest_plugins = ["pytester"]

E = TypeVar("E", bound=BaseException)


def failure_of(call: Callable[[], object], kind: type[E]) -> E:
    """The `kind` exception `call` raises (it must raise one)."""
    with pytest.raises(kind) as caught:
        call()
    return caught.value


@pytest.fixture
def scripted() -> Iterator[ScriptedModels]:
    """Scripted models; at teardown none may have run out or left answers unused."""
    models = ScriptedModels()
    yield models
    models.check()


# --- the client ----------------------------------------------------------------------------------------------


def test_no_model_without_configuration() -> None:
    settings = Settings(_env_file=None, OPENAI_API_KEY=None, OPENAI_BASE_URL=None)
    assert get_llm(settings) is None and get_light_llm(settings) is None


def test_settings_reach_the_endpoint_and_usage_comes_back(openai_server: OpenAIServer) -> None:
    openai_server.fake.script(MAIN, answer("main says hi"))
    openai_server.fake.script(LIGHT, answer("light says hi there"))
    settings = settings_for(openai_server, timeout=7.5)
    main = get_llm(settings).invoke([SystemMessage("Be brief."), HumanMessage("hello")])  # type: ignore[union-attr]
    light = get_light_llm(settings).invoke("hello")  # type: ignore[union-attr]
    assert (main.content, light.content) == ("main says hi", "light says hi there")
    (main_call,), (light_call,) = openai_server.fake.of(MAIN), openai_server.fake.of(LIGHT)
    assert main_call.headers["authorization"] == f"Bearer {API_KEY}"
    assert main_call.headers["x-stainless-read-timeout"] == "7.5"  # QUANTDESK_LLM_TIMEOUT on every call
    assert main_call.body["messages"] == [{"role": "system", "content": "Be brief."},
                                          {"role": "user", "content": "hello"}]
    assert main_call.body["temperature"] == 0 and not main_call.body.get("stream")
    usage = light_call.answer["usage"]  # type: ignore[index]
    assert light.usage_metadata["input_tokens"] == usage["prompt_tokens"] == 1  # type: ignore[index]
    assert light.usage_metadata["output_tokens"] == usage["completion_tokens"] == 4  # type: ignore[index]


def test_tool_call_round_trip_through_create_agent(openai_server: OpenAIServer) -> None:
    seen: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append((a, b))
        return a + b

    openai_server.fake.script("You are a calculator", tool_call("add", a=2, b=3), answer("2 + 3 = 5"))
    agent = create_agent(get_llm(settings_for(openai_server)), tools=[add], system_prompt="You are a calculator.")
    run = agent.invoke({"messages": [HumanMessage("what is 2 + 3?")]})
    assert seen == [(2, 3)] and run["messages"][-1].content == "2 + 3 = 5"
    called = run["messages"][1]
    assert called.response_metadata["finish_reason"] == "tool_calls"
    assert called.tool_calls == [{"name": "add", "args": {"a": 2, "b": 3}, "id": called.tool_calls[0]["id"],
                                  "type": "tool_call"}]
    first, second = openai_server.fake.of("You are a calculator")
    assert [t["function"]["name"] for t in first.body["tools"]] == ["add"]
    assert first.body["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assistant, result = second.body["messages"][-2:]  # the client sent the call back with the tool's result
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert result == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "5"}


def test_agent_that_never_stops_calling_tools_is_described(openai_server: OpenAIServer) -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    openai_server.fake.script(LIGHT, tool_call("ping"), tool_call("ping"))  # a third call would pass the limit
    agent = create_agent(get_light_llm(settings_for(openai_server)), tools=[ping])
    error = failure_of(lambda: agent.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 4}),
                       GraphRecursionError)
    assert describe_model_failure(error) == ("The model did not finish: it kept calling tools until the step limit "
                                             "stopped it.")


def test_bind_tools_sends_the_schema_and_reads_the_call(openai_server: OpenAIServer) -> None:
    @tool
    def lookup(ts_code: str) -> str:
        """Look a stock up."""
        return ts_code

    openai_server.fake.script(LIGHT, tool_call("lookup", ts_code="600519.SH"))
    reply = get_light_llm(settings_for(openai_server)).bind_tools([lookup]).invoke("Moutai?")  # type: ignore[union-attr]
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("lookup", {"ts_code": "600519.SH"})]
    (call,) = openai_server.fake.of(LIGHT)
    assert call.body["tools"][0]["function"]["name"] == "lookup"


def broken_call(name: str, arguments: str) -> AIMessage:
    """An AI turn calling `name` with `arguments` that are not JSON (as the endpoint sent them)."""
    return AIMessage(content="", invalid_tool_calls=[{"name": name, "args": arguments, "id": "call_broken",
                                                      "error": None, "type": "invalid_tool_call"}])


def test_structured_answer_is_a_forced_tool_call(openai_server: OpenAIServer) -> None:
    """The router's answer through the real client: the request offers RouteAnswer alone and forces it
    (function calling), with no response_format (json_schema is not served by every compatible endpoint)."""
    openai_server.fake.script(LIGHT, tool_call("RouteAnswer", workflow="signal"))
    model = get_light_llm(settings_for(openai_server))
    assert model is not None
    routed = invoke_structured(model, [HumanMessage("route")], RouteAnswer, "routing answer")
    assert routed == RouteAnswer(workflow="signal")
    (call,) = openai_server.fake.of(LIGHT)
    assert [t["function"]["name"] for t in call.body["tools"]] == ["RouteAnswer"]
    assert call.body["tool_choice"] == {"type": "function", "function": {"name": "RouteAnswer"}}
    assert "response_format" not in call.body
    assert "none" in call.body["tools"][0]["function"]["parameters"]["properties"]["workflow"]["enum"]


@pytest.mark.parametrize(("step", "reason"), [
    (answer("Sure! This sounds like a signal request."),
     'The model\'s answer could not be used: it replied in prose instead of the JSON routing answer ("Sure! This '
     'sounds like a signal request.").'),
    (broken_call("RouteAnswer", '{"workflow": "sig'), "The model's answer could not be used: its JSON routing answer "
                                                      "is broken (Unterminated string starting at: line 1 column 14 "
                                                      "(char 13))."),
    (broken_call("RouteAnswer", '{"workflow": signal}'), "The model's answer could not be used: its JSON routing "
                                                         "answer is broken (Expecting value: line 1 column 14 "
                                                         "(char 13))."),
    (tool_call("RouteAnswer", flow="signal"), "The model's answer could not be used: its JSON routing answer is "
                                              "broken (workflow: Field required)."),
    (answer(""), "The model's answer could not be used: it gave an empty answer instead of the JSON routing answer."),
], ids=["prose", "unclosed", "not json", "not the schema", "empty"])
def test_unusable_structured_answers(openai_server: OpenAIServer, step: AIMessage, reason: str) -> None:
    openai_server.fake.script(LIGHT, step)
    model = get_light_llm(settings_for(openai_server))
    assert model is not None
    error = failure_of(lambda: invoke_structured(model, [HumanMessage("route")], RouteAnswer, "routing answer"),
                       ModelAnswerError)
    assert describe_model_failure(error) == reason


def test_http_500_is_retried_then_described(openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, *[http_error(500)] * (LLM_MAX_RETRIES + 1))
    error = failure_of(lambda: get_light_llm(settings_for(openai_server)).invoke("x"),  # type: ignore[union-attr]
                       openai.InternalServerError)
    assert describe_model_failure(error) == "The model endpoint returned HTTP 500 after 2 retries (fake HTTP 500)."
    assert [e.headers["x-stainless-retry-count"] for e in openai_server.fake.of(LIGHT)] == ["0", "1", "2"]


def test_http_429_honours_retry_after_then_answers(openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, http_error(429, retry_after=1), answer("ok now"))
    assert get_light_llm(settings_for(openai_server)).invoke("x").content == "ok now"  # type: ignore[union-attr]
    limited, answered = openai_server.fake.of(LIGHT)
    assert answered.received - limited.received >= 1.0  # the client's own backoff would be at most 0.5 s


def test_http_429_to_the_end_is_described(openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, *[http_error(429, retry_after=0.1)] * (LLM_MAX_RETRIES + 1))
    error = failure_of(lambda: get_light_llm(settings_for(openai_server)).invoke("x"),  # type: ignore[union-attr]
                       openai.RateLimitError)
    assert describe_model_failure(error) == "The model endpoint kept answering HTTP 429 (rate limited) after 2 retries."


def test_hang_ends_at_the_configured_timeout(openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, *[hang(30)] * (LLM_MAX_RETRIES + 1))
    model = get_light_llm(settings_for(openai_server, timeout=0.5))
    started = time.monotonic()
    error = failure_of(lambda: model.invoke("x"), openai.APITimeoutError)  # type: ignore[union-attr]
    assert time.monotonic() - started < 10  # three 0.5 s attempts and two short backoffs, not the 30 s hang
    assert describe_model_failure(error) == ("The model did not answer within 0.5 s (QUANTDESK_LLM_TIMEOUT) "
                                             "after 2 retries.")
    assert len(openai_server.fake.of(LIGHT)) == LLM_MAX_RETRIES + 1


def test_wrong_key_is_described_without_the_key(openai_server: OpenAIServer) -> None:
    model = get_light_llm(settings_for(openai_server, key="sk-wrong-secret"))
    error = failure_of(lambda: model.invoke("x"), openai.AuthenticationError)  # type: ignore[union-attr]
    assert len(openai_server.fake.exchanges) == 1  # not retried
    reason = describe_model_failure(error)
    assert reason == "The model endpoint refused the API key (HTTP 401); check OPENAI_API_KEY."
    assert "sk-wrong" not in reason


def test_unreachable_endpoint_is_described() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(_env_file=None, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY=API_KEY)
    error = failure_of(lambda: get_llm(settings).invoke("x"), openai.APIConnectionError)  # type: ignore[union-attr]
    assert describe_model_failure(error) == (f"The model endpoint 127.0.0.1:{port} could not be reached after 2 "
                                             "retries (check OPENAI_BASE_URL).")


# --- the fakes fail the test ---------------------------------------------------------------------------------


def test_fake_server_running_out_is_an_error_the_client_sees_and_check_raises() -> None:
    with OpenAIServer() as server:
        server.fake.script(LIGHT, answer("one"))
        model = get_light_llm(settings_for(server))
        assert model.invoke("x").content == "one"  # type: ignore[union-attr]
        error = failure_of(lambda: model.invoke("x"), openai.BadRequestError)  # type: ignore[union-attr]
    assert "no scripted answer left for 'light-model'" in str(error)
    with pytest.raises(AssertionError, match="no scripted answer left"):
        server.fake.check()


def test_fake_server_routes_by_prompt_marker_and_reports_unused_steps() -> None:
    fake = FakeOpenAI()
    fake.script("You are Alpha", answer("alpha"))
    fake.script("You are Beta", answer("beta"), answer("beta again"))
    with OpenAIServer(fake) as server:
        model = get_llm(settings_for(server))
        replies = [model.invoke([SystemMessage(f"You are {n}."), HumanMessage("hi")]).content  # type: ignore[union-attr]
                   for n in ("Beta", "Alpha")]
    assert replies == ["beta", "alpha"]
    with pytest.raises(AssertionError, match="1 scripted step\\(s\\) for 'You are Beta' were never requested"):
        fake.check()


def test_fixture_teardowns_fail_on_leftovers_and_swallowed_exhaustion(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
        import pytest
        from langchain_core.messages import HumanMessage
        from graphs.llm import get_light_llm
        from testkit.fakes.chat import ScriptedModels, answer, tool_call
        from testkit.fakes.openai_server import API_KEY, OpenAIServer
        from tools.settings import Settings

        LIGHT = "light-model"

        @pytest.fixture
        def openai_server():
            with OpenAIServer() as server:
                yield server
            server.fake.check()

        @pytest.fixture
        def scripted():
            models = ScriptedModels()
            yield models
            models.check()

        def light(server):
            return get_light_llm(Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY,
                                          QUANTDESK_LIGHT_MODEL=LIGHT))

        def test_scripted_leftover(scripted):
            scripted(script=[answer("never asked")])

        def test_scripted_exhaustion_swallowed(scripted):
            model = scripted(script=[])
            try:
                model.invoke([HumanMessage("x")])
            except BaseException:  # a product catching too much must still not hide it
                pass

        def test_scripted_unbound_call_swallowed(scripted):
            model = scripted(script=[tool_call("lookup", ts_code="600519.SH")])
            try:
                model.invoke([HumanMessage("x")])
            except BaseException:
                pass

        def test_server_leftover(openai_server):
            openai_server.fake.script(LIGHT, answer("never asked"))

        def test_server_exhaustion_swallowed(openai_server):
            openai_server.fake.script(LIGHT, answer("asked"))
            for _ in range(2):
                try:
                    light(openai_server).invoke("x")
                except Exception:
                    pass

        def test_all_used(scripted, openai_server):
            openai_server.fake.script(LIGHT, answer("asked"))
            assert scripted(script=[answer("asked")]).invoke("x").content == "asked"
            assert light(openai_server).invoke("x").content == "asked"
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, errors=5)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_scripted_leftover*", "*1 scripted answer(s) for 'the script' were never asked*",
        "*ERROR at teardown of test_scripted_exhaustion_swallowed*", "*the scripted model ran out of answers*",
        "*ERROR at teardown of test_scripted_unbound_call_swallowed*", "*calls lookup, which this call did not bind*",
        "*ERROR at teardown of test_server_leftover*", "*1 scripted step(s) for 'light-model' were never requested*",
        "*ERROR at teardown of test_server_exhaustion_swallowed*", "*no scripted answer left for 'light-model'*",
    ])


def test_scripted_model_keyed_per_agent(scripted: ScriptedModels) -> None:
    model = scripted(scripts={"You fetch": [answer("fetched")], "You judge": [answer("ok"), answer("ok again")]})
    asks: list[list[BaseMessage]] = [[SystemMessage("You judge code."), HumanMessage("1")],
                                     [SystemMessage("You fetch data."), HumanMessage("2")],
                                     [SystemMessage("You judge code."), HumanMessage("3")]]
    assert [model.invoke(a).content for a in asks] == ["ok", "fetched", "ok again"]
    assert [p[-1].content for p in model.prompts_for("You judge")] == ["1", "3"]
    with pytest.raises(ScriptExhausted, match="no single script key"):
        model.invoke([SystemMessage("You plan."), HumanMessage("4")])
    model.failures.clear()  # the fixture would (rightly) fail this test for the unmatched prompt above


def test_scripted_model_refuses_a_call_to_a_tool_the_call_did_not_bind(scripted: ScriptedModels) -> None:
    @tool
    def lookup(ts_code: str) -> str:
        """Look a stock up."""
        return ts_code

    model = scripted(script=[tool_call("lookup", ts_code="600519.SH")] * 3)
    reply = model.bind_tools([lookup]).invoke("Moutai?")
    assert [c["name"] for c in reply.tool_calls] == ["lookup"]
    with pytest.raises(UnboundToolCall, match="calls lookup, which this call did not bind \\(it offered no tools\\)"):
        model.invoke("Moutai?")
    with pytest.raises(UnboundToolCall, match="it offered \\['RouteAnswer'\\]"):  # the structured-output parser
        model.with_structured_output(RouteAnswer, method="function_calling").invoke("Moutai?")  # would take it
    assert model.bound == [["lookup"], ["RouteAnswer"]]
    model.failures.clear()  # the fixture would (rightly) fail this test for the refused calls above


def test_fake_server_refuses_a_call_to_a_tool_the_request_did_not_offer() -> None:
    with OpenAIServer() as server:
        server.fake.script(LIGHT, tool_call("lookup", ts_code="600519.SH"))
        model = get_light_llm(settings_for(server))
        assert model is not None
        structured = model.with_structured_output(RouteAnswer, method="function_calling")
        error = failure_of(lambda: structured.invoke("Moutai?"), openai.BadRequestError)
    assert "calls lookup, which the request did not offer (it offered ['RouteAnswer'])" in str(error)
    with pytest.raises(AssertionError, match="did not offer"):
        server.fake.check()


# --- workflows against the real client -----------------------------------------------------------------------


@pytest.fixture
def thread_for(sqlite_url: str, sandbox: Sandbox,
               openai_server: OpenAIServer) -> Iterator[Callable[..., GraphThread]]:
    """Main-graph threads whose models are the real ChatOpenAI against the fake server."""
    engine = make_engine(sqlite_url)
    upgrade(engine)

    def make(timeout: float = 10.0) -> GraphThread:
        settings = settings_for(openai_server, timeout)
        ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                              artifacts=ArtifactStore(engine), llm=get_llm(settings),
                              light_llm=get_light_llm(settings))
        return GraphThread(sqlite_url, ctx)

    yield make
    engine.dispose()


ATTEMPTS = LLM_MAX_RETRIES + 1
ROUTER_FAULTS: dict[str, tuple[list[Step], str]] = {
    "prose": ([answer("Good question! Momentum ideas did well last year.")],
              'The model\'s answer could not be used: it replied in prose instead of the JSON routing answer'),
    "broken arguments": ([broken_call("RouteAnswer", '{"workflow": "signal", "reply": ')],
                         "The model's answer could not be used: its JSON routing answer is broken"),
    "http 500": ([http_error(500)] * ATTEMPTS, "The model endpoint returned HTTP 500 after 2 retries"),
    "http 429": ([http_error(429, retry_after=0.1)] * ATTEMPTS,
                 "The model endpoint kept answering HTTP 429 (rate limited) after 2 retries."),
    "hang": ([hang(30)] * ATTEMPTS, "The model did not answer within 0.5 s (QUANTDESK_LLM_TIMEOUT) after 2 retries."),
}


@pytest.mark.parametrize("fault", ROUTER_FAULTS)
def test_router_says_what_the_model_did_wrong(fault: str, thread_for: Callable[..., GraphThread],
                                              openai_server: OpenAIServer) -> None:
    steps, reason = ROUTER_FAULTS[fault]
    openai_server.fake.script(LIGHT, *steps)
    out = thread_for(timeout=0.5).say(FREE_TEXT)
    reply = out["final_reply"]
    assert reply.startswith(reason) and out.get("workflow") is None
    assert "need an LLM" not in reply and reply != no_route()
    assert "These work without the model:\n• `signal STRATEGY CODES START END" in reply
    assert len(openai_server.fake.of(LIGHT)) == len(steps)


def test_factor_spec_in_prose_is_reported(thread_for: Callable[..., GraphThread],
                                          openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, tool_call("RouteAnswer", workflow="factor"))
    openai_server.fake.script(MAIN, answer("A reversal factor sounds great; let me know the dates."))
    out = thread_for().say("a factor that buys last week's losers")
    assert out["workflow"] == "factor"
    assert out["final_reply"].startswith("The model's answer could not be used: it replied in prose instead of the "
                                         'JSON factor spec ("A reversal factor sounds great')


def test_signal_reflection_failing_twice_stops_with_the_reason_and_what_works_without_a_model(
        thread_for: Callable[..., GraphThread], openai_server: OpenAIServer) -> None:
    openai_server.fake.script(LIGHT, tool_call("RouteAnswer", workflow="signal"))
    openai_server.fake.script(MAIN, *[http_error(503)] * (2 * ATTEMPTS))  # reflection, then its one retry
    out = thread_for().say("a signal that goes long Moutai when it dips")
    assert "__interrupt__" not in out  # nothing to answer: the model is what failed (issue 28, item 19)
    assert out["final_reply"].startswith("The same problem happened twice: reflection: The model endpoint returned "
                                         "HTTP 503 after 2 retries (fake HTTP 503).\nStopped. Without the model, name "
                                         "a built-in strategy: signal STRATEGY CODES START END")
    assert "- `ma_cross` (fast=5, slow=20)" in out["final_reply"]


class BuggyModel(ScriptedChatModel):
    """A model whose call hits a programming error (not a model failure)."""

    def _generate(self, messages: list[BaseMessage], *args: object, **kwargs: object):  # noqa: ANN202
        raise KeyError("a bug, not a model failure")


def test_a_bug_is_not_reported_as_a_model_failure(sqlite_url: str, sandbox: Sandbox,
                                                   scripted: ScriptedModels) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                          artifacts=ArtifactStore(engine), llm=BuggyModel(), light_llm=BuggyModel())
    with pytest.raises(KeyError, match="a bug"):  # the router
        GraphThread(sqlite_url, ctx).say(FREE_TEXT)
    ctx.light_llm = scripted(script=[tool_call("RouteAnswer", workflow="signal")])
    with pytest.raises(KeyError, match="a bug"):  # the reflection agent
        GraphThread(sqlite_url, ctx).say("a signal that goes long Moutai when it dips")
    ctx.llm = scripted(script=[])
    ctx.light_llm = scripted(script=[tool_call("RouteAnswer", workflow="signal")])
    with pytest.raises(ScriptExhausted):  # a script that runs out inside an agent inside a subgraph
        GraphThread(sqlite_url, ctx).say("a signal that goes long Moutai when it dips")
    ctx.llm.failures.clear()  # type: ignore[union-attr] - expected here; the fixture fails tests on it otherwise
    engine.dispose()
