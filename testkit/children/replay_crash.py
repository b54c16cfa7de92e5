"""The process tests/graphs/test_replay_crash.py kills: a replay of the decision desk over three dates on the sample
data, the market analyst alone. The first date is decided in full (a Buy); on the second the market analyst and the bull
answer, and the bear, whose script holds the first date's turn only, never does. When the bear is asked for its
second turn, the marker file appears and the process sleeps until it is SIGKILLed.

Usage: python -m testkit.children.replay_crash DATABASE_URL THREAD_ID MARKER"""

from __future__ import annotations

import sys

from langchain_core.messages import AIMessage, HumanMessage

from graphs.analyze.graph import build_analyze_graph
from graphs.checkpointer import open_checkpointer
from testkit.children.decision_crash import AlwaysSummarizes, BearHangs
from testkit.desk import ROLES, desk_context, research_answer, risk_answer
from testkit.fakes.chat import answer, tool_call
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.db import make_engine

ASK = "analyze 600519.SH 20200803..20200817 every=5d analysts=market"  # 20200803, 20200810, 20200817
REQUESTER = "UALICE"


def first_date(rating: str = "Buy", target: float = 0.2) -> dict[str, list[AIMessage]]:
    """One date of the market-only desk, by role: the analyst calls a tool and writes, each debater speaks once."""
    scripts = {ROLES["market"]: [tool_call("get_indicators"), answer("Trend report.")],
               ROLES["research_judge"]: [research_answer(rating, target)],
               ROLES["risk_judge"]: [risk_answer(rating, target)]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[ROLES[role]] = [answer(f"{role} speaks")]
    return scripts


def main(url: str, thread: str, marker: str) -> None:
    scripts = first_date()
    # the second date gets as far as the bear: the analyst and the bull answer
    scripts[ROLES["market"]] += [tool_call("get_indicators"), answer("Trend report.")]
    scripts[ROLES["bull"]].append(answer("bull speaks"))
    engine = make_engine(url)
    sandbox = Sandbox(workers=1)  # the desk never runs code: no worker process is ever started
    ctx = desk_context(engine, sandbox, SampleProvider(), BearHangs(scripts=scripts, marker=marker),
                       AlwaysSummarizes())
    with open_checkpointer(url) as saver:
        build_analyze_graph(saver).invoke({"messages": [HumanMessage(ASK)], "requester": REQUESTER},
                                           {"configurable": {"thread_id": thread}}, context=ctx,
                                           durability="async")  # as the runner starts a request
    # the bear never answers on the second date, so the replay cannot end: getting here is a failure
    print("the replay finished although the bear never answered on its second date", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:4])
