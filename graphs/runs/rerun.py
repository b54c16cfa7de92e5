"""`rerun ID`: the run again, on a scratch database, from its record (the rows it read, the answers its models
gave, its clock, the desk memory it started from and its decisions); every node's output is compared with the
record's and the first that differs is named. `rerun ID live`: the current data and the live models instead, and
what changed."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, cast

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.runs.outputs import plain
from graphs.runs.recorded import RecordedChatModel
from graphs.runs.recorder import Recorder
from graphs.runs.session import RunSession, paper_broker, replayed_clock, share_klines
from tools.rules.store import RuleStore
from tools.runs.provider import DataRecord, RecordedProvider, RecordingProvider
from tools.runs.state import MEMORY_TABLES, restore
from tools.runs.store import RunRow, RunStore
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade


@dataclass
class Rerun:
    """What a re-run came to beside its record."""

    run: RunRow
    live: bool
    first_difference: str | None = None  # the first node whose output differs from the record's (None: none)
    failure: str | None = None  # what stopped the re-run (a request the record has no answer for, say)
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)  # (path, before, after) of the result
    changed_inputs: list[str] = field(default_factory=list)  # reads whose rows differ from the recorded ones
    tokens: int = 0
    seconds: float = 0.0
    result: Any = None
    rating: str | None = None  # a desk decision's: the rating the re-run's risk judge gave
    recorded_rating: str | None = None  # and the run's

    @property
    def same(self) -> bool:
        return self.first_difference is None and self.failure is None and not self.changes


def rerun(ctx: WorkflowContext, run_id: str, live: bool = False) -> Rerun | None:
    """Run `run_id` again (None: no such run)."""
    store = RunStore(ctx.engine)
    row = store.get(run_id)
    if row is None:
        return None
    manifest = row.manifest
    recorded = store.data(run_id, manifest["data"]["provider"], manifest["data"]["price_basis"],
                          manifest["data"]["lookups"])
    report = Rerun(row, live)
    started = time.monotonic()
    with _scratch(manifest.get("state") or {}, (manifest.get("memory") or {}).get("rows") or {}) as engine:
        live_data = DataRecord()
        provider = (RecordingProvider(ctx.provider, live_data) if live
                    else RecordedProvider(recorded, ctx.provider.trading_calendar))
        model = None if live else RecordedChatModel.of(store.calls(run_id))
        base = dataclasses.replace(
            ctx, provider=provider, engine=engine, artifacts=ArtifactStore(engine),
            rules=RuleStore(engine, ctx.rules.admins if ctx.rules else frozenset()),
            broker=paper_broker(dataclasses.replace(ctx, engine=engine), provider),
            klines=share_klines(ctx, provider),
            llm=model or ctx.llm, light_llm=model or ctx.light_llm, deep_llm=model or ctx.deep_llm)
        recorder = Recorder(lambda: "")
        session = RunSession(run_id, row.thread_id, manifest, base, recorder, live_data)
        try:
            outcome = _replay(session, manifest, live)
        except Exception as exc:  # the re-run's failure is its finding, reported beside the record
            report.failure = f"{type(exc).__name__}: {exc}"
            outcome = None
        report.tokens, report.seconds = recorder.input_tokens + recorder.output_tokens, time.monotonic() - started
        report.first_difference = first_difference(manifest["outputs"], session.outputs)
        if outcome is not None:
            report.result = outcome
            report.changes = changes(manifest.get("result") or manifest.get("interrupts"), outcome)
        if live:
            report.changed_inputs = changed_inputs(recorded, live_data)
        report.rating, report.recorded_rating = session.rating, manifest.get("rating")
    return report


@contextmanager
def _scratch(state: dict[str, list[dict[str, Any]]], memory: dict[str, list[dict[str, Any]]]) -> Iterator[Engine]:
    """A migrated SQLite database for the re-run's writes (its saves, orders and artifacts), then dropped; it starts
    with the paper accounts' state and the desk memory the run started from."""
    with TemporaryDirectory(prefix="quantdesk-rerun-") as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'rerun.db'}")
        try:
            upgrade(engine)
            restore(engine, state)
            restore(engine, memory, MEMORY_TABLES)
            yield engine
        finally:
            engine.dispose()


def _replay(session: RunSession, manifest: dict[str, Any], live: bool) -> Any:
    """Each recorded segment in turn (the request, then each decision on the interrupt at the same place); the
    result, or the interrupts' payloads where the run stopped, as comparable JSON."""
    from graphs.main import build_main_graph  # the registry imports this package's commands: built when asked

    graph = build_main_graph(InMemorySaver())
    pending: list[str] = []
    before: list[str] = []
    for number, segment in enumerate(manifest["segments"]):
        configurable: dict[str, Any] = {"thread_id": manifest["thread"]}
        for key in ("language", "account"):
            if manifest.get(key):
                configurable[key] = manifest[key]
        value: Any
        if segment["kind"] == "resume":
            configurable["user"] = segment.get("user")
            if segment.get("decided_at"):
                configurable["decided_at"] = segment["decided_at"]
            place = before.index(segment["interrupt"]) if segment["interrupt"] in before else 0
            value = Command(resume={pending[place]: segment["decision"]})
        elif segment["kind"] == "start":
            configurable["user"] = manifest.get("user")
            value = {"messages": [HumanMessage(segment["text"], id=segment.get("message_id"))],
                     "background_request": segment.get("request")}
            if manifest.get("user"):
                value["requester"] = manifest["user"]
        else:
            value = None
        context = session.context
        if not live:  # the run's clock, its brokers' too
            context = dataclasses.replace(context, now=replayed_clock(manifest, number))
            context = dataclasses.replace(context, broker=paper_broker(context, context.provider),
                                          klines=share_klines(context, context.provider))
        config: RunnableConfig = {"configurable": configurable, "callbacks": [session.recorder]}
        for part in graph.stream(value, config, context=context, stream_mode="updates", subgraphs=True):
            namespace, event = cast(tuple[tuple[str, ...], Any], part)
            session.observe(namespace, event)
        state = graph.get_state(config)
        pending = [i.id for i in state.interrupts]
        before = list(segment.get("interrupts") or [])
    if state.interrupts:
        return [plain(i.value) for i in state.interrupts]
    return plain(state.values.get("result"))


def first_difference(recorded: list[list[str]], rerun: list[list[str]]) -> str | None:
    """The first node, in the record's order, with an output the re-run's outputs of that node do not have (a
    node's parallel tasks, one per analyst say, may finish in any order); then a node the re-run ran more often."""
    again: dict[str, list[str]] = {}
    for node, value in rerun:
        again.setdefault(node, []).append(value)
    for node, value in recorded:
        outputs = again.get(node, [])
        if value not in outputs:
            return node
        outputs.remove(value)
    return next((node for node, values in again.items() if values), None)


def changes(before: Any, after: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Each value that moved between two results, by its path (rating, numbers, texts)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [c for key in dict.fromkeys([*before, *after])
                for c in changes(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [c for i, (b, a) in enumerate(zip(before, after, strict=True)) for c in changes(b, a, f"{path}[{i}]")]
    return [] if before == after else [(path, before, after)]


def changed_inputs(recorded: DataRecord, live: DataRecord) -> list[str]:
    """Each read whose rows now differ from the rows recorded for the same request, with how many rows differ (a
    request the run did not make is not a changed input: the re-run went another way)."""
    found = []
    for key, read in live.reads.items():
        old = recorded.reads.get(key)
        if old is not None and old.digest != read.digest:
            differ = _rows_differing(old.rows, read.rows)
            found.append(f"{read.dataset} {','.join(read.codes)} {read.start}-{read.end}: {differ}")
    return found


def _rows_differing(old: Any, new: Any) -> str:
    if list(old.columns) != list(new.columns) or len(old) != len(new):
        return f"{len(old)} rows before, {len(new)} now"
    mask = (old.reset_index(drop=True) != new.reset_index(drop=True)) & ~(old.isna() & new.isna()).to_numpy()
    rows = mask.any(axis=1)
    first = old.reset_index(drop=True)[rows].head(1)
    where = ""
    if not first.empty and "trade_date" in first:
        where = f", first on {first['trade_date'].iloc[0]}"
    return f"{int(rows.sum())} rows changed{where}"
