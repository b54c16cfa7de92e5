"""The signal subgraph end to end: real data, real sandbox, real workspace, real checkpointers (SQLite and
PostgreSQL); LLM paths driven by scripted chat models that emit real tool calls."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import Engine

from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.signal.graph import build_signal_graph
from graphs.signal.library import STRATEGIES
from graphs.signal.nodes.reflection import no_llm_reply
from graphs.signal.present import present_signal
from testkit.fakes.chat import ScriptedChatModel, answer, decision, tool_call
from testkit.fakes.tushare_server import GOOD_TOKEN, FakeTushare, TushareServer
from testkit.graph_thread import GraphThread
from tools.data.cache import CachingProvider
from tools.data.local import LocalProvider, SampleProvider
from tools.data.provider import MarketDataProvider
from tools.data.tushare import TushareProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CODES = "000001.SZ,600519.SH,000002.SZ,601318.SH,600036.SH"


@pytest.fixture(scope="module")
def real_data(shared_data: Path) -> LocalProvider:
    return LocalProvider(shared_data / "cn_csi300_baostock_qfq")


def signal_thread(url: str, ctx: WorkflowContext) -> GraphThread:
    return GraphThread(url, ctx, build=build_signal_graph, requester=None)


def _ctx(engine: Engine, provider: MarketDataProvider, sandbox: Sandbox, tmp_path: Path,
         llm: ScriptedChatModel | None = None, light: ScriptedChatModel | None = None) -> WorkflowContext:
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                         llm=llm, light_llm=light)


@pytest.fixture
def sqlite_runner_factory(tmp_path: Path, sandbox: Sandbox):  # noqa: ANN201
    url = f"sqlite:///{tmp_path / 'q.db'}"
    engine = make_engine(url)
    upgrade(engine)

    def make(provider: MarketDataProvider, llm: ScriptedChatModel | None = None,
             light: ScriptedChatModel | None = None) -> GraphThread:
        return signal_thread(url, _ctx(engine, provider, sandbox, tmp_path, llm, light))

    return make


def _question(out: dict[str, Any]) -> dict[str, Any]:
    assert "__interrupt__" in out, out.get("final_reply") or out.get("error_messages")
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "clarify"
    return pending.value


# --- structured path ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in STRATEGIES if n != "valuation"])
def test_every_library_strategy_on_real_data(name: str, sqlite_runner_factory, real_data: LocalProvider) -> None:
    runner = sqlite_runner_factory(real_data)
    out = runner.say(f"signal {name} {CODES} 20180101 20191231")
    assert out.get("result"), out.get("final_reply") or out.get("error_messages") or out.get("__interrupt__")
    result = out["result"]
    assert result["strategy"] == name and result["shape"][1] == 5
    assert result["counts"]["buy"] + result["counts"]["sell"] > 0
    signal = runner.workspace.get(f"signal/{name}")
    inputs = {f: real_data.wide(f, CODES, "20180101", "20191231") for f in STRATEGIES[name].fields}
    reference: dict[str, Any] = {"pd": pd, "np": np, **inputs}
    exec(STRATEGIES[name].code(STRATEGIES[name].resolve({})), reference)  # trusted library code, in-process
    pd.testing.assert_frame_equal(signal, reference["signal"].astype("float64"), check_freq=False)
    chart = next(a for a in result["artifacts"] if a["kind"] == "chart")
    assert "path" not in chart and runner.ctx.artifacts.get(chart["id"]).data[:8] == b"\x89PNG\r\n\x1a\n"
    parquet = next(a for a in result["artifacts"] if a["kind"] == "signal_parquet")
    saved = pd.read_parquet(io.BytesIO(runner.ctx.artifacts.get(parquet["id"]).data))
    pd.testing.assert_frame_equal(saved, signal, check_freq=False)
    assert "Sharpe" in out["messages"][-1].content


def test_valuation_needs_daily_indicators(sqlite_runner_factory, real_data: LocalProvider) -> None:
    out = sqlite_runner_factory(real_data).say(f"signal valuation {CODES} 20180101 20191231")
    assert "__interrupt__" not in out and out.get("result") is None  # a refusal, not a question
    assert out["final_reply"].startswith("The valuation strategy needs data the local provider does not have: "
                                         "pe, pb from daily_basic (it offers: none).")


def test_valuation_on_the_sample_says_where_pe_and_pb_come_from(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(CachingProvider(SampleProvider()))
    out = runner.say("signal valuation")  # refused at once: no codes or dates asked for first
    assert "__interrupt__" not in out and out.get("result") is None
    reply = out["final_reply"]
    assert "the bundled sample provider does not have: pe, pb from daily_basic (it offers: turnover_rate)" in reply
    assert "tushare's daily_basic (set TUSHARE_TOKEN)" in reply and "QUANTDESK_LOCAL_DATA" in reply
    assert "indicators/pe" not in runner.workspace.names()


def test_range_after_the_data_asks_for_other_dates(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(CachingProvider(SampleProvider()))  # the sample ends on 20200824
    out = runner.say("signal ma_cross 000001.SZ 20210101 20210601")
    assert _question(out)["question"].startswith("the data ends on 20200824; your range 20210101–20210601 has no "
                                                 "bars.")
    out = runner.answer(out, "20200101 20200601")
    assert out["result"]["last_date"] <= "2020-06-01"


def test_range_running_past_the_data_says_where_it_ends(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(SampleProvider())
    # 20200803–20200824 is 16 trade dates, fewer than the 20-day slow average needs: no trade at all
    question = _question(runner.say("signal ma_cross 000001.SZ 20200801 20210601"))["question"]
    assert "the signal has no buy or sell at all (all 0 or NaN): the data ends on 20200824, so your range " \
           "20200801–20210601 has only 16 bar(s)" in question
    out = sqlite_runner_factory(SampleProvider()).say("signal ma_cross 000001.SZ 20200601 20210601")
    assert out["result"]["last_date"] == "2020-08-24"
    assert out["result"]["notes"] == ["Asked for 20200601–20210601; ran 20200601–20200824: there is no data after "
                                      "20200824."]


def test_a_start_before_the_data_says_which_dates_ran_and_why(sqlite_runner_factory) -> None:
    """Issue 28, item 5: the sample begins on 20190102; a request from 20180101 says so instead of clipping."""
    out = sqlite_runner_factory(SampleProvider()).say("signal ma_cross 600519.SH 20180101 20200601")
    assert out["result"]["first_date"] == "2019-01-02"
    note = "Asked for 20180101–20200601; ran 20190102–20200601: there is no data before 20190102."
    assert out["result"]["notes"] == [note]
    view = present_signal(out["result"])
    assert note in view.notes
    assert "on equal sleeves of the capital" in view.summary and dict(view.facts)["Base"].startswith(
        "equal sleeves of the capital; each of the N codes trades its own 1/N of the starting capital; weights drift")


def test_valuation_with_tushare_indicators(sqlite_runner_factory, shared_data: Path) -> None:
    bars = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet")
    bars = bars[(bars.tradestatus == 1) & (bars.trade_date >= "20190101")]
    rng = np.random.default_rng(3)
    basics = bars[["ts_code", "trade_date"]].reset_index(drop=True)
    basics = basics.assign(pe=rng.uniform(-5, 60, len(basics)), pb=rng.uniform(0.5, 8, len(basics)))
    with TushareServer(FakeTushare({"daily": bars, "daily_basic": basics})) as server:
        runner = sqlite_runner_factory(TushareProvider(GOOD_TOKEN, server.url))
        out = runner.say(f"signal valuation {CODES} 20190101 20191231 cheap=0.4")
    assert out["result"]["strategy"] == "valuation" and out["result"]["params"]["cheap"] == 0.4
    assert runner.workspace.get("indicators/pe").shape == runner.workspace.get("ohlcv/close").shape


def test_missing_dates_clarify_then_complete(db_url: str, engine: Engine, sandbox: Sandbox, tmp_path: Path) -> None:
    runner = signal_thread(db_url, _ctx(engine, SampleProvider(), sandbox, tmp_path))
    out = runner.say("signal ma_cross 600519.SH fast=10 slow=30")
    question = _question(out)
    assert "date range" in question["question"]
    assert question["action_requests"][0]["name"] == "clarify"
    assert question["review_configs"][0]["allowed_decisions"] == ["respond"]
    out = runner.answer(out, "2019-06-01 20200601")
    assert out["result"]["params"] == {"fast": 10, "slow": 30}
    assert out["result"]["first_date"] >= "2019-06-03" and out["result"]["last_date"] <= "2020-06-01"


def test_missing_strategy_offers_choices_and_missing_codes_come_first(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(SampleProvider())
    out = runner.say("signal 20200101 20200601")
    assert "Which stocks" in _question(out)["question"]
    out = runner.answer(out, "000001.SZ 600000.SH 600519.SH")
    assert _question(out)["choices"] == list(STRATEGIES)
    out = runner.answer(out, "momentum")
    assert out["result"]["strategy"] == "momentum"


def test_bad_parameter_is_asked_again(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(SampleProvider())
    out = runner.say("signal ma_cross 600519.SH 20190101 20200601 fast=30 slow=10")
    assert "fast (30) must be shorter than slow (10)" in _question(out)["question"]
    out = runner.answer(out, "fast=5 slow=20")
    assert out["result"]["params"] == {"fast": 5, "slow": 20}


def test_clarifications_are_bounded(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(SampleProvider())
    out = runner.say("signal ma_cross 20190101 20200101")
    for _ in range(3):
        _question(out)
        out = runner.answer(out, "I don't know")
    assert "__interrupt__" not in out
    assert out["final_reply"].startswith("Stopping after 3 questions")


def test_cancel(sqlite_runner_factory) -> None:
    runner = sqlite_runner_factory(SampleProvider())
    out = runner.answer(runner.say("signal rsi 600519.SH"), "cancel")
    assert out["final_reply"] == "Cancelled; nothing was run."


def test_free_form_without_llm_says_what_to_configure(sqlite_runner_factory) -> None:
    out = sqlite_runner_factory(SampleProvider()).say("find me stocks with rising volume and falling price")
    assert out["final_reply"] == no_llm_reply()
    assert "OPENAI_API_KEY" in out["final_reply"] and "signal ma_cross" in out["final_reply"]


# --- LLM path (scripted models, real tool calls) ---------------------------------------------------

GOOD_CODE = ("fast = close.rolling(5).mean()\nslow = close.rolling(20).mean()\n"
             "signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())")


def _fetch_script() -> list:
    return [tool_call("daily_bar", ts_code="000001.SZ,600519.SH", start_date="20190101", end_date="20200601"),
            answer("fetched close and open")]


def test_llm_complete_request(db_url: str, engine: Engine, sandbox: Sandbox, tmp_path: Path) -> None:
    llm = ScriptedChatModel(script=[
        tool_call("workspace_status"),
        decision("data_fetch", "000001.SZ,600519.SH", "20190101", "20200601", "5/20 moving-average cross"),
        tool_call("run_signal_code", code=GOOD_CODE),
        answer("signal stored"),
    ])
    light = ScriptedChatModel(script=_fetch_script())
    runner = signal_thread(db_url, _ctx(engine, SampleProvider(), sandbox, tmp_path, llm, light))
    out = runner.say("Buy when the 5-day average crosses above the 20-day one, for Ping An and Moutai in 2019-2020")
    assert out["result"]["codes"] == ["000001.SZ", "600519.SH"]
    assert out["result"]["code"] == GOOD_CODE and out["signal_name"] == "signal/custom"
    assert {"ohlcv/close", "ohlcv/open", "signal/custom"} <= set(runner.workspace.names())
    assert not llm.script and not light.script
    # the reflection prompt saw the workspace tool's answer
    assert any("(empty)" in str(m.content) for m in llm.prompts[1])


def test_llm_missing_dates_interrupt_then_resume(db_url: str, engine: Engine, sandbox: Sandbox,
                                                 tmp_path: Path) -> None:
    llm = ScriptedChatModel(script=[
        decision("clarify", "600519.SH", question="Which period should I use (YYYYMMDD to YYYYMMDD)?"),
        decision("data_fetch", "000001.SZ,600519.SH", "20190101", "20200601", "ma cross"),
        tool_call("run_signal_code", code=GOOD_CODE),
        answer("done"),
    ])
    runner = signal_thread(db_url, _ctx(engine, SampleProvider(), sandbox, tmp_path, llm,
                                 ScriptedChatModel(script=_fetch_script())))
    out = runner.say("moving-average cross on Moutai")
    assert _question(out)["question"] == "Which period should I use (YYYYMMDD to YYYYMMDD)?"
    out = runner.answer(out, "20190101 to 20200601")
    assert out["result"]["last_date"] <= "2020-06-01"
    assert "20190101 to 20200601" in str(llm.prompts[1][0].content)  # the answer reached reflection


def test_llm_code_error_is_fed_back_and_fixed(sqlite_runner_factory) -> None:
    llm = ScriptedChatModel(script=[
        decision("data_fetch", "000001.SZ,600519.SH", "20190101", "20200601", "ma cross"),
        tool_call("run_signal_code", code="signal = closing.rolling(5).mean()"),
        tool_call("run_signal_code", code=GOOD_CODE),
        answer("fixed"),
    ])
    runner = sqlite_runner_factory(SampleProvider(), llm, ScriptedChatModel(script=_fetch_script()))
    out = runner.say("ma cross please")
    assert out["result"]["code"] == GOOD_CODE
    observation = llm.prompts[2][-1]
    assert observation.type == "tool" and "NameError" in observation.content and "line 1" in observation.content


def test_llm_repeated_failure_ends_in_clarify(sqlite_runner_factory) -> None:
    broken = "signal = close.rolling(5).mean() > undefined_thing"
    llm = ScriptedChatModel(script=[
        decision("data_fetch", "000001.SZ,600519.SH", "20190101", "20200601", "something odd"),
        tool_call("run_signal_code", code=broken), answer("failed"),
        decision("signal_generate", "000001.SZ,600519.SH", "20190101", "20200601", "something odd"),
        tool_call("run_signal_code", code=broken), answer("failed again"),
    ])
    runner = sqlite_runner_factory(SampleProvider(), llm, ScriptedChatModel(script=_fetch_script()))
    question = _question(runner.say("something odd"))
    assert question["question"].startswith("The same problem happened twice")
    assert "undefined_thing" in question["question"]
    assert not llm.script


def test_llm_calling_an_unknown_tool_twice_is_named_and_the_run_stops(sqlite_runner_factory) -> None:
    broken = {"name": "fetch_everything", "args": '{"codes": [', "id": "call_broken", "error": "not JSON",
              "type": "invalid_tool_call"}
    llm = ScriptedChatModel(script=[AIMessage(content="", invalid_tool_calls=[broken]) for _ in range(2)])
    runner = sqlite_runner_factory(SampleProvider(), llm, ScriptedChatModel(script=[]))
    out = runner.say("something odd")
    assert "__interrupt__" not in out  # no "How should I proceed?": the model cannot plan, so the run stops
    reply = out["final_reply"]
    assert reply.startswith("The same problem happened twice: reflection: The model's answer could not be used: it "
                            "called a tool that does not exist: fetch_everything")
    assert "empty answer" not in reply
    assert "Without the model" in reply and "signal ma_cross" in reply  # what works without a model
    assert not llm.script


def test_llm_fetch_after_the_data_is_told_where_it_ends(sqlite_runner_factory) -> None:
    llm = ScriptedChatModel(script=[
        decision("data_fetch", "000001.SZ", "20210101", "20210601", "ma cross"),
        decision("clarify", "000001.SZ", question="Which dates?"),
    ])
    light = ScriptedChatModel(script=[
        tool_call("daily_bar", ts_code="000001.SZ", start_date="2021-01-01", end_date="20210601"),
        answer("the data ends before the range")])
    runner = sqlite_runner_factory(SampleProvider(), llm, light)
    assert _question(runner.say("ma cross on Ping An in 2021"))["question"] == "Which dates?"
    observation = light.prompts[1][-1]
    assert observation.type == "tool"
    assert observation.content == "error: the data ends on 20200824; your range 20210101–20210601 has no bars"
    assert "the data ends on 20200824" in str(llm.prompts[1][0].content)  # reflection saw the reason


def test_llm_lookahead_signal_is_rejected(sqlite_runner_factory) -> None:
    cheat = "future = close.shift(-1)\nsignal = ((future > close).astype(float) * 2 - 1).where(future.notna())"
    llm = ScriptedChatModel(script=[
        decision("data_fetch", "000001.SZ,600519.SH", "20190101", "20200601", "buy before it rises"),
        tool_call("run_signal_code", code=cheat), answer("done"),
        decision("signal_generate", "000001.SZ,600519.SH", "20190101", "20200601", "buy before it rises"),
        tool_call("run_signal_code", code=cheat), answer("done"),
    ])
    runner = sqlite_runner_factory(SampleProvider(), llm, ScriptedChatModel(script=_fetch_script()))
    out = runner.say("buy the day before it rises")
    question = _question(out)
    assert "look-ahead: the signal on " in question["question"] and "uses future data" in question["question"]
    with open_checkpointer(runner.url) as saver:
        history = build_signal_graph(saver).get_state(runner.config).values["execution_history"]
    assert any(h.startswith("validation: 1 error(s)") for h in history)
