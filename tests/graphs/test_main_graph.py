"""The main graph's routing and follow-ups in free text, with scripted chat models emitting real tool calls."""

from __future__ import annotations

from sqlalchemy import Engine

from graphs.context import WorkflowContext
from testkit.fakes.chat import ScriptedChatModel, answer, decision, tool_call
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

CODES, START, END = "000001.SZ,600519.SH", "20190101", "20200601"


def ma_cross(fast: int, slow: int) -> str:
    return (f"fast = close.rolling({fast}).mean()\nslow = close.rolling({slow}).mean()\n"
            "signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())")


def test_free_text_follow_up_continues_the_signal_work(db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    light = ScriptedChatModel(script=[
        tool_call("RouteAnswer", workflow="signal"),  # routing the first, free-text request
        tool_call("daily_bar", ts_code=CODES, start_date=START, end_date=END), answer("fetched close"),
    ])
    llm = ScriptedChatModel(script=[
        decision("data_fetch", CODES, START, END, "5/20 moving-average cross"),
        tool_call("run_signal_code", code=ma_cross(5, 20)), answer("5/20 cross stored"),
        # the follow-up: same thread, same workflow, data already there
        decision("signal_generate", CODES, START, END, "10/30 moving-average cross"),
        tool_call("run_signal_code", code=ma_cross(10, 30)), answer("10/30 cross stored"),
    ])
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                          artifacts=ArtifactStore(engine), llm=llm, light_llm=light)
    thread = GraphThread(db_url, ctx)
    first = thread.say("Moving-average cross for Ping An and Moutai, 2019 to mid-2020: buy when the 5-day "
                       "average is above the 20-day one")
    assert first["workflow"] == "signal" and first["result"]["code"] == ma_cross(5, 20)
    routed = len(light.prompts)

    follow = thread.say("use 10 and 30")
    assert len(light.prompts) == routed  # no routing call and no new data fetch: the running workflow continued
    assert follow["workflow"] == "signal" and follow["result"]["code"] == ma_cross(10, 30)
    assert follow["result"]["codes"] == CODES.split(",")
    reflection_prompt = str(llm.prompts[3][0].content)  # the follow-up's reflection saw the whole conversation
    assert "buy when the 5-day average is above the 20-day one" in reflection_prompt
    assert "use 10 and 30" in reflection_prompt and "signal ready: True" in reflection_prompt
    assert not llm.script and not light.script


def test_free_text_that_is_no_workflow_gets_the_routers_reply(db_url: str, engine: Engine,
                                                               sandbox: Sandbox) -> None:
    light = ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="none", reply="I do signals and factors.")])
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                          artifacts=ArtifactStore(engine), llm=None, light_llm=light)
    out = GraphThread(db_url, ctx).say("what's the weather in Shanghai?")
    assert out["final_reply"] == "I do signals and factors." and out.get("workflow") is None
