"""The trading decision desk (issues 14 and 27): its analyst stage and its critical path, beside the same agents
one after another.

Every model call answers after the same latency L (0.5 s; 0.02 s with --quick) and reports fixed token usage. The
agents are scripted by role marker (testkit.desk) on the bundled sample, with a temp SQLite database
(migrated) and a SQLite checkpointer; the risk manager answers Hold, so no order approval interrupts a run.
Each figure is the median of ROUNDS (5) decisions, the parallel and sequential ones interleaved. Like `quantdesk
worker` before its first job, `main` freezes the process's start-up heap first (bot/heap.py): without that, a full
collection walking the imports' 350,000 objects (0.2-0.3 s, every thread stopped) lands in some analyst stages.
- parallel: the product's graph (`build_analyze_graph`);
- sequential: that same graph's nodes, subgraphs and edges rewired here so the analysts run one after another (a
  `share` node gives each the token share the Send would have). No product code changes.

An analyst makes two calls (a tool round, then its report: 2 L of its own, 1.0 s in the full run) and its report
makes one memory summary (the light model, one call) due. Printed:
1. the analyst stage on a fresh day (four analysts, depth 1), from the `prepare` update to the last analyst's;
   goal: at most 1.2 x the longest analyst's own calls in parallel (1.2 s), where one after another they take more
   than the four analysts' own calls (4 s): the memory summaries are not on it;
2. the decision end to end per depth: calls and their summed time, the critical path (the longest analyst's own
   calls, then every debate turn and both judges one after another) and the wall time, less the desk's own time
   (the same decision with models answering at once); goal: within 10 % of the critical path, no other serial call.
Both runs make the same calls and tokens, and the desk's own token count equals the two models' together: the light
model's summaries count toward the decision's token budget (issue 27: the bench compared the desk's count with the
main model's alone, 38,750 against 34,950 at depth 1, the 3,800 being the four 950-token summaries).
"""

from __future__ import annotations

import copy
import itertools
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field
from sqlalchemy import Engine

from bench import goals
from bot.heap import startup_done
from graphs.analyze.graph import SPECS, build_analyze_graph
from graphs.analyze.routes import RESEARCH_ROUNDS, RISK_ROUNDS, research_turns, risk_turns, route_after_prepare
from graphs.analyze.state import AnalyzeState
from graphs.checkpointer import open_checkpointer
from testkit.desk import ROLES, desk_context, desk_scripts, risk_answer
from testkit.fakes.chat import ScriptedChatModel, answer
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CODE = "600519.SH"
DEPTHS = (1, 2, 3, 4, 5)
ANALYSTS = tuple(spec.name for spec in SPECS)
LATENCY, QUICK_LATENCY = 0.5, 0.02  # seconds per model call
ANALYST_CALL = (1_500, 300)  # tokens in, tokens out: the tool round, then the report
SUMMARY_CALL = (800, 150)  # an analyst's post-close memory summary (light model), once per analyst
TURN_CALL = (2_500, 250)  # one debate turn
JUDGE_CALL = (3_000, 400)  # the research manager, the risk manager
ANALYST_ROUNDS = 2  # each analyst's own calls
ROUNDS = 5  # decisions per figure, whose median it is
STAGE_GOAL, SEQUENTIAL_GOAL, PATH_GOAL = 1.2, 4.0, 1.1  # x own calls (par), x own calls (seq), x critical path


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


def _models(depth: int, latency: float) -> tuple[TimedChatModel, TimedChatModel]:
    """The desk's model (every agent, keyed by role) and the light model (the four memory summaries), each call
    answering after `latency` seconds."""
    scripts = desk_scripts((RESEARCH_ROUNDS[depth], RISK_ROUNDS[depth]), risk_judge=[risk_answer("Hold", 0.0)])
    usage = {ROLES[name]: ANALYST_CALL for name in ANALYSTS}
    usage |= {ROLES[name]: TURN_CALL for name in ("bull", "bear", "risky", "safe", "neutral")}
    usage |= {ROLES[name]: JUDGE_CALL for name in ("research_judge", "risk_judge")}
    llm = TimedChatModel(scripts=scripts, calls={key: (latency, *tokens) for key, tokens in usage.items()})
    light = TimedChatModel(script=[answer("summary of the day") for _ in ANALYSTS],
                           calls={"": (latency, *SUMMARY_CALL)})
    return llm, light


def _share_node(state: AnalyzeState) -> dict[str, Any]:
    """What `route_after_prepare` hands each analyst with its Send: an equal share of the token budget."""
    request = state["request"]
    return {"budget": request["budget"] // len(request["analysts"])}


def _route_after_prepare(state: AnalyzeState) -> str:
    """The product's route, with its fan-out of Sends replaced by the chain's first node."""
    route = route_after_prepare(state)
    return "share" if isinstance(route, list) else route


def build_sequential_desk(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The product's desk (`build_analyze_graph`, its very nodes, subgraphs and edges) rewired so the four
    analysts run one after another: prepare → share → market → news → sentiment → fundamentals → fusion."""
    product = build_analyze_graph().builder
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


def critical_calls(depth: int) -> int:
    """The calls one after another on the decision's critical path: the longest analyst's own, then the debates."""
    return ANALYST_ROUNDS + research_turns(depth) + 1 + risk_turns(depth) + 1


def run_desk(build: Callable[[BaseCheckpointSaver], CompiledStateGraph], url: str, engine: Engine,
             sandbox: Sandbox, provider: SampleProvider, depth: int, latency: float) -> dict[str, Any]:
    """One decision: wall times of the analyst stage and of the desk, calls and tokens, checked against the desk."""
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
    if result["tokens"] != llm.tokens + light.tokens:  # the budget's accounting saw every call's usage
        raise RuntimeError(f"depth {depth}: the desk counted {result['tokens']:,} tokens, the models "
                           f"{llm.tokens + light.tokens:,} ({llm.tokens:,} + the light model's {light.tokens:,})")
    analysts = max(marks[f"{name}_analyst"] for name in ANALYSTS) - marks["prepare"]
    return {"analysts": analysts, "desk": desk, "calls": llm.made_calls + light.made_calls,
            "tokens": llm.tokens + light.tokens}


@dataclass(frozen=True)
class Stage:
    """The analyst stage of one decision (depth 1), in the product's graph and one analyst after another."""

    latency: float
    parallel_s: float
    sequential_s: float

    @property
    def ok(self) -> bool:
        own = ANALYST_ROUNDS * self.latency
        return self.parallel_s <= STAGE_GOAL * own and self.sequential_s > SEQUENTIAL_GOAL * own


@dataclass(frozen=True)
class EndToEnd:
    """One decision end to end at `depth`: its calls, its critical path and its wall time (less the desk's own)."""

    depth: int
    calls: int
    calls_s: float
    critical_s: float
    wall_s: float
    own_s: float
    tokens: int

    @property
    def ok(self) -> bool:
        return self.wall_s - self.own_s <= PATH_GOAL * self.critical_s


def run(quick: bool = False) -> tuple[Stage, list[EndToEnd]]:
    """Measure and print both tables, each figure the median of ROUNDS decisions; `quick`: one round at depth 1
    only, with 0.02 s calls (a smoke run of the whole bench)."""
    latency, depths, rounds = (QUICK_LATENCY, DEPTHS[:1], 1) if quick else (LATENCY, DEPTHS, ROUNDS)
    own = ANALYST_ROUNDS * latency
    provider = SampleProvider()
    sandbox = Sandbox(workers=1)
    paths: list[EndToEnd] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            engine = make_engine(url)
            upgrade(engine)

            def desk(depth: int, wait: float, build: Callable[..., CompiledStateGraph] = build_analyze_graph
                     ) -> dict[str, Any]:
                return run_desk(build, url, engine, sandbox, provider, depth, wait)

            desk(1, 0.0)  # warm-up
            bare = {depth: statistics.median(desk(depth, 0.0)["desk"] for _ in range(rounds)) for depth in depths}
            par, seq = [], []
            for _ in range(rounds):  # interleaved, so both see the same machine
                par.append(desk(1, latency))
                seq.append(desk(1, latency, build_sequential_desk))
            if {(r["calls"], r["tokens"]) for r in par + seq} != {(par[0]["calls"], par[0]["tokens"])}:
                raise RuntimeError(f"the runs made different calls: {par} vs {seq}")
            stage = Stage(latency, statistics.median(r["analysts"] for r in par),
                          statistics.median(r["analysts"] for r in seq))
            print(f"  median of {rounds} round(s) each; every model call answers after {latency} s")
            print(f"  analyst stage, fresh day, {len(ANALYSTS)} analysts ({ANALYST_ROUNDS} own calls each, then a "
                  f"memory summary): parallel {stage.parallel_s:.3f} s, sequential {stage.sequential_s:.3f} s | goal "
                  f"parallel <= {STAGE_GOAL * own:.2f} s, sequential > {SEQUENTIAL_GOAL * own:.2f} s | "
                  f"{goals.judge('analyst stage in parallel', stage.ok, quick)}")
            print(f"  {'depth':>5} | {'calls':>5} | {'calls s':>7} | {'critical path s':>15} | {'wall s':>6} | "
                  f"{'desk own s':>10} | {'tokens':>7} | goal (wall - own <= {PATH_GOAL} x critical path)")
            for depth in depths:
                done = par if depth == 1 else [desk(depth, latency) for _ in range(rounds)]
                path = EndToEnd(depth, done[0]["calls"], done[0]["calls"] * latency, critical_calls(depth) * latency,
                                statistics.median(r["desk"] for r in done), bare[depth], done[0]["tokens"])
                paths.append(path)
                print(f"  {depth:>5} | {path.calls:>5} | {path.calls_s:>7.2f} | {path.critical_s:>15.2f} | "
                      f"{path.wall_s:>6.2f} | {path.own_s:>10.2f} | {path.tokens:>7,} | "
                      f"{goals.judge(f'depth {depth}: wall - own <= {PATH_GOAL} x critical path', path.ok, quick)}")
            engine.dispose()
    finally:
        sandbox.close()
    failed = (not stage.ok) + sum(not path.ok for path in paths)
    judged = goals.NOT_JUDGED if quick else f"{'met' if not failed else 'NOT met'} ({failed} failed)"
    print(f"  goals {judged}; calls and tokens are the same in every run and the desk's own token count equals the "
          "two models' together")
    return stage, paths


def main(quick: bool = False) -> None:
    startup_done()  # this process's start-up heap, frozen as `quantdesk worker` does before its first job
    run(quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
