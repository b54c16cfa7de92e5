"""The structured signal path end to end (fetch → sandbox → validation with look-ahead rerun → backtest,
chart and artifacts), per stage, for MA cross on every code of a data set over its whole span.

`python -m bench signal_workflow`; `main(quick=True)`: the bundled sample only (tests call it)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from langchain_core.messages import HumanMessage

from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.signal.graph import build_signal_graph
from tools.data.cache import CachingProvider
from tools.data.local import LocalProvider, SampleProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _run(label: str, provider: LocalProvider, sandbox: Sandbox) -> None:
    codes = ",".join(sorted(provider.known_codes()))
    first, last = provider.date_range()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        engine = make_engine(url)
        upgrade(engine)
        ctx = WorkflowContext(provider=CachingProvider(provider), engine=engine, sandbox=sandbox,
                            artifacts=ArtifactStore(engine))
        with open_checkpointer(url) as saver:
            graph = build_signal_graph(saver)
            request = {"messages": [HumanMessage(f"signal ma_cross {codes} {first} {last} fast=5 slow=20")]}
            stages: list[tuple[str, float]] = []
            started = last_mark = time.perf_counter()
            for update in graph.stream(request, {"configurable": {"thread_id": "bench"}}, context=ctx,
                                       stream_mode="updates"):
                now = time.perf_counter()
                stages.append((next(iter(update)), now - last_mark))
                last_mark = now
            total = time.perf_counter() - started
    n_codes = len(codes.split(","))
    print(f"  {label}: MA cross on {n_codes} codes, {first}..{last}: total {total * 1000:.0f} ms")
    for stage, seconds in stages:
        print(f"    {stage:16s} {seconds * 1000:8.1f} ms")


def main(quick: bool = False) -> None:
    sandbox = Sandbox(workers=1)
    sandbox.warm()
    try:
        _run("bundled sample", SampleProvider(), sandbox)
        if SHARED.is_dir() and not quick:
            _run("cn_csi300_tushare (300 codes)", LocalProvider(SHARED / "cn_csi300_tushare"), sandbox)
    finally:
        sandbox.close()
