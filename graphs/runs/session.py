"""One run's recording: the context it runs with (its data reads kept), the recorder its model calls go through,
the outputs of its nodes as they finish, and the manifest saved when it ends or stops at an interrupt."""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any
from urllib.parse import urlparse

from langchain_core.language_models import BaseChatModel

from graphs.context import WorkflowContext, model_for
from graphs.model_roles import DEEP, LIGHT, MAIN
from graphs.runs.outputs import output_digest, plain
from graphs.runs.recorder import Recorder
from tools.broker.accounts import BrokerEnv, open_registered
from tools.broker.clock import SHANGHAI
from tools.broker.protocol import Broker
from tools.data.klines import AShareKlines, KlineProvider
from tools.data.provider import MarketDataProvider
from tools.runs.environment import code_versions
from tools.runs.hashing import digest
from tools.runs.provider import DataRecord, RecordingProvider
from tools.runs.state import memory_snapshot, snapshot
from tools.runs.store import RunStore, new_run_id

Guard = Callable[[Recorder], None]
BrokerFactory = Callable[[str, str | None], Broker]


@dataclass
class RunSession:
    """A run being recorded: `context` and `recorder` are what its graph runs with."""

    run_id: str
    thread_id: str
    manifest: dict[str, Any]
    context: WorkflowContext
    recorder: Recorder
    data: DataRecord
    outputs: list[list[str]] = field(default_factory=list)
    parameters: dict[str, Any] | None = None
    rating: str | None = None  # a desk decision's rating, once its risk judge gave one

    def observe(self, namespace: tuple[str, ...], update: Any) -> None:
        """A node finished (an `updates` event of the stream): its output joins the record."""
        if not isinstance(update, dict):
            return
        path = "/".join(part.split(":", 1)[0] for part in namespace)
        for name, value in update.items():
            self.outputs.append([f"{path}/{name}" if path else name, output_digest(value)])
            if self.parameters is None and isinstance(value, dict) and isinstance(value.get("request"), dict):
                self.parameters = plain(value["request"])
            if isinstance(value, dict) and isinstance(risk := value.get("risk_summary"), dict) and risk.get("rating"):
                self.rating = str(risk["rating"])


def open_session(store: RunStore, context: WorkflowContext, thread_id: str, configurable: dict[str, Any],
                 segment: dict[str, Any], day: Callable[[], str], guard: Guard | None = None) -> RunSession:
    """A new run for a start; for a resume, the run of the thread that waits on the decision (a new one when none
    is recorded)."""
    run_id = store.open_run(thread_id) if segment["kind"] == "resume" else None
    row = store.get(run_id) if run_id else None
    now = context.now()
    segment = {**segment, "now": now.isoformat()}
    if row is None:
        manifest: dict[str, Any] = {
            "run": run_id or new_run_id(), "thread": thread_id, "surface": thread_id.split("-", 1)[0],
            "user": configurable.get("user"), "account": configurable.get("account") or "",
            "language": configurable.get("language"), "text": segment.get("text", ""),
            "started_at": now.isoformat(), "opened_at": datetime.now(UTC).isoformat(), "segments": [], "outputs": [],
            "data": {"reads": [], "lookups": {}},
            "code": code_versions(), "models": models_of(context), "seeds": seeds(), "calls": 0,
            "state": snapshot(context.engine)}
    else:
        manifest = row.manifest
    manifest["segments"].append(segment)
    data = DataRecord(lookups=dict(manifest["data"]["lookups"]))
    recorder = Recorder(day, guard, first_seq=manifest["calls"])
    provider = RecordingProvider(context.provider, data)
    clock = _recording_clock(context.now, segment.setdefault("clock", []))
    run_context = dataclasses.replace(context, provider=provider, now=clock)
    run_context = dataclasses.replace(run_context, broker=paper_broker(run_context, provider),
                                      klines=share_klines(context, provider))
    return RunSession(str(manifest["run"]), thread_id, manifest, run_context, recorder, data,
                      outputs=list(manifest["outputs"]), parameters=manifest.get("parameters"))


def close_session(store: RunStore, session: RunSession, *, status: str, workflow: str | None,
                  interrupts: list[dict[str, Any]], checkpoint: str, result: Any, day: str) -> str:
    """Save the run's record as it stands; the manifest's hash back."""
    manifest = session.manifest
    manifest["segments"][-1].update({"status": status, "checkpoint": checkpoint,
                                     "interrupts": [i["id"] for i in interrupts]})
    manifest.update({
        "workflow": workflow, "parameters": session.parameters, "outputs": session.outputs,
        "prompts": prompt_hashes(workflow), "calls": manifest["calls"] + len(session.recorder.records),
        "result": plain(result) if result is not None else None,
        "interrupts": [plain(i["value"]) for i in interrupts],
        "rating": session.rating or manifest.get("rating"),
        "memory": manifest.get("memory") or desk_memory(session.context, manifest, session.parameters),
        "data": {"provider": session.data.provider, "price_basis": session.data.price_basis,
                 "reads": _reads(manifest["data"]["reads"], session.data), "lookups": session.data.lookups}})
    return store.save(session.run_id, thread_id=session.thread_id, user=manifest["user"], account=manifest["account"],
                      text=manifest["text"], day=day, status=status, manifest=manifest, workflow=workflow,
                      calls=session.recorder.records, data=session.data, ended=status != "waiting")


def desk_memory(context: WorkflowContext, manifest: dict[str, Any],
                parameters: dict[str, Any] | None) -> dict[str, Any] | None:
    """The desk memory a desk decision could read when it started (tools/runs/state.py `memory_snapshot`): the
    rows of its namespace on its code stamped before the run opened; None for a run that reads no memory (its
    parameters name no desk namespace) or a record from before the wall-clock start was kept."""
    namespace, code = (parameters or {}).get("namespace"), (parameters or {}).get("ts_code")
    if not isinstance(namespace, str) or not isinstance(code, str) or "opened_at" not in manifest:
        return None
    rows = memory_snapshot(context.engine, namespace, [code], datetime.fromisoformat(manifest["opened_at"]))
    return {"namespace": namespace, "codes": [code], "rows": rows}


def _recording_clock(now: Callable[[], datetime], kept: list[str]) -> Callable[[], datetime]:
    """`now`, each time it is read kept (ISO) for a re-run to read the same times in the same order."""
    lock = threading.Lock()

    def read() -> datetime:
        moment = now()
        with lock:
            kept.append(moment.isoformat())
        return moment
    return read


def replayed_clock(manifest: dict[str, Any], segment: int) -> Callable[[], datetime]:
    """The times a recorded segment read, in order (the last one again once they run out)."""
    kept = [datetime.fromisoformat(t) for t in manifest["segments"][segment].get("clock") or []]
    moments = iter(kept)
    last = [when(manifest, segment)]
    lock = threading.Lock()

    def read() -> datetime:
        with lock:
            last[0] = next(moments, last[0])
            return last[0]
    return read


def share_klines(context: WorkflowContext, provider: MarketDataProvider) -> Callable[[str], KlineProvider] | None:
    """The context's kline sources with A-share bars read through `provider` (crypto bars are not recorded)."""
    klines = context.klines
    if klines is None:
        return None

    def pick(symbol: str) -> KlineProvider:
        chosen = klines(symbol)
        return AShareKlines(provider) if isinstance(chosen, AShareKlines) else chosen
    return pick


def paper_broker(context: WorkflowContext, provider: MarketDataProvider) -> BrokerFactory | None:
    """The context's paper accounts reading through `provider` (their quotes and limits are data the run read) and
    the context's clock (a re-run's is the run's); a live account stays with its own broker."""
    paper, engine, now, opener = context.paper, context.engine, context.now, context.broker
    if opener is None or paper is None:
        return opener
    env = BrokerEnv(engine, provider, paper, None, now=lambda: now().astimezone(SHANGHAI))

    kind_of = getattr(opener, "kind", None)  # the settings' opener knows each account's kind
    if kind_of is None:  # an opener of the caller's own (a test's fixed clock, Studio's): it stays as given
        return opener

    def open_account(name: str, by: str | None) -> Broker:
        if kind_of(name) != "paper":  # a live account: its server's reports are its record
            return opener(name, by)
        return open_registered("paper", env, name, by)

    return open_account


def _reads(before: list[dict[str, Any]], data: DataRecord) -> list[dict[str, Any]]:
    known = {r["key"] for r in before}
    return [*before, *({"key": r.key, "dataset": r.dataset, "codes": list(r.codes), "start": r.start, "end": r.end,
                        "fields": list(r.fields), "rows": len(r.rows), "rows_hash": r.digest}
                       for r in data.reads.values() if r.key not in known)]


def models_of(context: WorkflowContext) -> dict[str, dict[str, Any]]:
    """Each model role's name, endpoint host, temperature and answer limit."""
    return {role: _model(model_for(context, role)) for role in (MAIN, LIGHT, DEEP)}


def _model(model: BaseChatModel | None) -> dict[str, Any]:
    if model is None:
        return {}
    base = getattr(model, "openai_api_base", None)
    return {"name": getattr(model, "model_name", None) or type(model).__name__,
            "host": urlparse(base).hostname if base else None,
            "temperature": getattr(model, "temperature", None), "max_tokens": getattr(model, "max_tokens", None)}


def seeds() -> dict[str, Any]:
    """The seeds a run's randomness would follow: no workflow draws random numbers; the hash seed orders sets."""
    return {"PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"), "random": None}


@cache
def prompt_hashes(workflow: str | None) -> dict[str, str]:
    """A hash of each prompt template of the workflow's package and of the router (module constants whose name
    says PROMPT)."""
    found: dict[str, str] = {}
    packages = ["graphs.main", *([f"graphs.{workflow}"] if workflow else [])]
    for name in packages:
        module = importlib.import_module(name)
        modules = [module]
        if hasattr(module, "__path__"):
            modules += [importlib.import_module(info.name)
                        for info in pkgutil.walk_packages(module.__path__, f"{name}.")]
        for mod in modules:
            for attr, value in vars(mod).items():
                if "PROMPT" in attr and isinstance(value, str):
                    found[f"{mod.__name__}.{attr}"] = digest(value)
    return dict(sorted(found.items()))


def when(manifest: dict[str, Any], segment: int) -> datetime:
    """The wall clock a segment of a recorded run started at (a re-run's `now`)."""
    return datetime.fromisoformat(manifest["segments"][segment]["now"])
