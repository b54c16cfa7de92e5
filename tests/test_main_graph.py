"""The main graph's routing and follow-ups in free text, with scripted chat models emitting real tool calls."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.main import build_main_graph
from tests.fakes.chat import ScriptedChatModel, answer, decision, tool_call
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.checkpointer import open_checkpointer

CODES, START, END = "000001.SZ,600519.SH", "20190101", "20200601"


def ma_cross(fast: int, slow: int) -> str:
    return (f"fast = close.rolling({fast}).mean()\nslow = close.rolling({slow}).mean()\n"
            "signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())")


class Thread:
    def __init__(self, url: str, ctx: WorkflowContext) -> None:
        self.url, self.ctx = url, ctx
        self.config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:10]}"}}

    def say(self, text: str) -> dict[str, Any]:
        return self._invoke({"messages": [HumanMessage(text)], "requester": "UALICE"})

    def answer(self, out: dict[str, Any], text: str) -> dict[str, Any]:
        (pending,) = out["__interrupt__"]
        return self._invoke(Command(resume={pending.id: {"type": "respond", "message": text}}))

    def _invoke(self, value: Any) -> dict[str, Any]:
        with open_checkpointer(self.url) as saver:
            return build_main_graph(saver).invoke(value, self.config, context=self.ctx)


def test_free_text_follow_up_continues_the_signal_work(db_url: str, engine: Engine, sandbox: Sandbox,
                                                        tmp_path: Path) -> None:
    light = ScriptedChatModel(script=[
        answer(json.dumps({"workflow": "signal"})),  # routing the first, free-text request
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
                          artifacts_dir=tmp_path / "artifacts", llm=llm, light_llm=light)
    thread = Thread(db_url, ctx)
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


def test_free_text_that_is_no_workflow_gets_the_routers_reply(db_url: str, engine: Engine, sandbox: Sandbox,
                                                               tmp_path: Path) -> None:
    light = ScriptedChatModel(script=[answer(json.dumps({"workflow": "none", "reply": "I do signals and factors."}))])
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                          artifacts_dir=tmp_path / "artifacts", llm=None, light_llm=light)
    out = Thread(db_url, ctx).say("what's the weather in Shanghai?")
    assert out["final_reply"] == "I do signals and factors." and out.get("workflow") is None
