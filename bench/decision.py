"""The trading decision desk (issue 14): the four analysts in parallel beside the same agents one after another.

Per depth 1..5, two runs of the whole desk (`analyze 600519.SH depth=N`) on the bundled sample, a temp SQLite
database (migrated) with a SQLite checkpointer, and scripted agents keyed by role marker (tests.decision_desk) whose
answers take time and report token usage:
- parallel: the product's graph (`build_decision_graph`), the analysts fanned out as it does;
- sequential: that same graph's nodes, subgraphs and edges (`build_analyst(spec)` for each analyst, the same
  debates, trader, record, report), rewired here so the analysts run one after another (a `share` node gives each
  the token share the Send would have). No product code changes.
The risk manager answers Hold, so no order approval interrupts either run. The analysts' span is timed from the
`prepare` update to the last analyst's update on the graph's update stream; the desk from invoke to its end.

Fake latency and usage per call: an analyst's tool call and its report 0.45 s each, 1,500 tokens in / 300 out,
plus its memory summary (the light model) 0.1 s, 800 in / 150 out: 1.0 s per analyst. Debate turns and judges
0.1 s each, 2,500 in / 250 out (judges 3,000 / 400). Goal: the analysts in under 1.6 s in parallel, where they take
more than 4 s in a row.
"""

from __future__ import annotations

import copy
import itertools
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field
from sqlalchemy import Engine

from graphs.checkpointer import open_checkpointer
from graphs.decision.graph import SPECS, build_decision_graph
from graphs.decision.routes import RESEARCH_ROUNDS, RISK_ROUNDS, route_after_prepare
from graphs.decision.state import DecisionState
from tests.decision_desk import ROLES, desk_context, desk_scripts, risk_answer
from tests.fakes.chat import ScriptedChatModel, answer
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CODE = "600519.SH"
DEPTHS = (1, 2, 3, 4, 5)
ANALYSTS = tuple(spec.name for spec in SPECS)
ANALYST_CALL = (0.45, 1_500, 300)  # seconds, tokens in, tokens out: the tool call, then the report
SUMMARY_CALL = (0.10, 800, 150)  # the analyst's post-close memory summary (light model), once per analyst
TURN_CALL = (0.10, 2_500, 250)  # one debate turn
JUDGE_CALL = (0.10, 3_000, 400)  # the research manager, the risk manager
PARALLEL_GOAL, SEQUENTIAL_GOAL = 1.6, 4.0  # seconds for the four analysts


class TimedChatModel(ScriptedChatModel):
    """The scripted model with latency and usage per role marker (`calls` maps a marker, "" for the single
    script, to (seconds, tokens in, tokens out)); counts calls and tokens. Thread-safe: answers are taken under
    the parent's lock, the sleep happens outside it so parallel branches overlap."""

    calls: dict[str, tuple[float, int, int]] = Field(default_factory=dict)
    made_calls: int = 0
    tokens: int = 0

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        seconds, tokens_in, tokens_out = self.calls[(self._key(messages) or "") if self.scripts else ""]
        time.sleep(seconds)
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
        message = result.generations[0].message.model_copy(update={"usage_metadata": usage})
        with self._lock:
            self.made_calls += 1
            self.tokens += tokens_in + tokens_out
        return ChatResult(generations=[ChatGeneration(message=message)])


def _models(depth: int, latency: bool = True) -> tuple[TimedChatModel, TimedChatModel]:
    """The desk's model (every agent, keyed by role) and the light model (the four memory summaries); without
    `latency` they answer at once."""
    scripts = desk_scripts((RESEARCH_ROUNDS[depth], RISK_ROUNDS[depth]), risk_judge=[risk_answer("Hold", 0.0)])
    timing = {ROLES[name]: ANALYST_CALL for name in ANALYSTS}
    timing |= {ROLES[name]: TURN_CALL for name in ("bull", "bear", "risky", "safe", "neutral")}
    timing |= {ROLES[name]: JUDGE_CALL for name in ("research_judge", "risk_judge")}
    timing[""] = SUMMARY_CALL
    if not latency:
        timing = {key: (0.0, *usage) for key, (_, *usage) in timing.items()}
    llm = TimedChatModel(scripts=scripts, calls=timing)
    light = TimedChatModel(script=[answer("summary of the day") for _ in ANALYSTS], calls={"": timing[""]})
    return llm, light


def _share_node(state: DecisionState) -> dict[str, Any]:
    """What `route_after_prepare` hands each analyst with its Send: an equal share of the token budget."""
    request = state["request"]
    return {"budget": request["budget"] // len(request["analysts"])}


def _route_after_prepare(state: DecisionState) -> str:
    """The product's route, with its fan-out of Sends replaced by the chain's first node."""
    route = route_after_prepare(state)
    return "share" if isinstance(route, list) else route


def build_sequential_desk(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The product's desk (`build_decision_graph`, its very nodes, subgraphs and edges) rewired so the four
    analysts run one after another: prepare → share → market → news → sentiment → fundamentals → fusion."""
    product = build_decision_graph().builder
    analysts = [f"{spec.name}_analyst" for spec in SPECS]
    fan_out = product.branches.get("prepare", {})
    if len(fan_out) != 1 or not all((name, "fusion") in product.edges for name in analysts):
        raise RuntimeError("the desk's graph no longer fans the analysts out from prepare into fusion; "
                           "update bench/decision.py")
    ((_, branch),) = fan_out.items()
    graph = copy.copy(product)
    graph.compiled = False
    graph.nodes = dict(product.nodes)
    graph.edges = {edge for edge in product.edges if edge[0] not in analysts}
    graph.branches = defaultdict(dict, {src: dict(specs) for src, specs in product.branches.items()
                                        if src != "prepare"})
    ends = [end for end in (branch.ends or {}).values() if end not in analysts]
    graph.add_node("share", _share_node)
    graph.add_conditional_edges("prepare", _route_after_prepare, ["share", *ends])
    for before, after in itertools.pairwise(["share", *analysts, "fusion"]):
        graph.add_edge(before, after)
    return graph.compile(checkpointer=checkpointer, name="analyze_sequential")


def run_desk(build: Callable[[BaseCheckpointSaver], CompiledStateGraph], url: str, engine: Engine,
             sandbox: Sandbox, provider: SampleProvider, depth: int, latency: bool = True) -> dict[str, Any]:
    """One decision: wall times of the analysts and of the desk, calls and tokens, checked against the desk."""
    llm, light = _models(depth, latency)
    ctx = desk_context(engine, sandbox, provider, llm, light, desk_namespace=f"bench-{uuid.uuid4().hex[:8]}")
    config = {"configurable": {"thread_id": f"bench-{uuid.uuid4().hex[:8]}", "account": f"bench-{depth}"}}
    request = {"messages": [HumanMessage(f"analyze {CODE} depth={depth}")], "requester": "UBENCH"}
    marks: dict[str, float] = {}
    with open_checkpointer(url) as saver:
        graph = build(saver)
        start = time.perf_counter()
        for update in graph.stream(request, config, context=ctx, stream_mode="updates"):
            for node in update:
                marks[node] = time.perf_counter()
        desk = time.perf_counter() - start
        snapshot = graph.get_state(config)
    result, interrupted = snapshot.values.get("result") or {}, bool(snapshot.next or snapshot.interrupts)
    rating = (result.get("risk_summary") or {}).get("rating")
    if rating != "Hold" or interrupted or result.get("stopped") or llm.leftovers() or light.leftovers():
        raise RuntimeError(f"depth {depth}: the desk did not run through to a Hold ({result.get('stopped')}, "
                           f"unused answers {llm.leftovers()} {light.leftovers()})")
    if result["tokens"] != llm.tokens:  # the desk's own budget accounting saw every call's usage
        raise RuntimeError(f"depth {depth}: the desk counted {result['tokens']:,} tokens, the model {llm.tokens:,}")
    analysts = max(marks[f"{name}_analyst"] for name in ANALYSTS) - marks["prepare"]
    return {"analysts": analysts, "desk": desk, "calls": llm.made_calls + light.made_calls,
            "tokens": llm.tokens + light.tokens}


def _row(label: str, par: dict[str, Any], seq: dict[str, Any], goal: str) -> None:
    print(f"  {label:>7} | {par['analysts']:>14.3f} | {seq['analysts']:>14.3f} | {par['desk']:>10.2f} | "
          f"{seq['desk']:>10.2f} | {par['calls']:>9} | {par['tokens']:>7,} | {goal}")


def main() -> None:
    provider = SampleProvider()
    sandbox = Sandbox(workers=1)
    print(f"  `analyze {CODE} depth=N` on the bundled sample, SQLite; scripted agents: analyst 1.0 s "
          f"(2 x {ANALYST_CALL[0]} s + summary {SUMMARY_CALL[0]} s), debate turn / judge {TURN_CALL[0]} s; "
          "par = the product graph, seq = the same agents one after another")
    print(f"  {'depth':>7} | {'analysts par s':>14} | {'analysts seq s':>14} | {'desk par s':>10} | "
          f"{'desk seq s':>10} | {'LLM calls':>9} | {'tokens':>7} | goal (analysts < {PARALLEL_GOAL} s par, "
          f"> {SEQUENTIAL_GOAL:.0f} s seq)")
    failed = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            engine = make_engine(url)
            upgrade(engine)
            run_desk(build_decision_graph, url, engine, sandbox, provider, 1, latency=False)  # warm-up
            bare = [run_desk(build, url, engine, sandbox, provider, 1, latency=False)
                    for build in (build_decision_graph, build_sequential_desk)]
            _row("1, 0 s", *bare, "(the models answer at once: the desk's own time)")
            for depth in DEPTHS:
                par = run_desk(build_decision_graph, url, engine, sandbox, provider, depth)
                seq = run_desk(build_sequential_desk, url, engine, sandbox, provider, depth)
                if (par["calls"], par["tokens"]) != (seq["calls"], seq["tokens"]):
                    raise RuntimeError(f"depth {depth}: the two runs made different calls: {par} vs {seq}")
                ok = par["analysts"] < PARALLEL_GOAL and seq["analysts"] > SEQUENTIAL_GOAL
                failed += not ok
                _row(str(depth), par, seq, "PASS" if ok else "FAIL")
            engine.dispose()
    finally:
        sandbox.close()
    print(f"  goal {'met' if not failed else 'NOT met'} at {len(DEPTHS) - failed}/{len(DEPTHS)} depths; calls and "
          "tokens are the same in both runs and match the desk's own token count")


if __name__ == "__main__":
    main()
