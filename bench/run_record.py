"""What a run's record costs (issue 41): the manifest, the recorded model calls and the rows kept as Parquet, in
kB, of a depth-1 desk decision (scripted agents, four analysts) and of a signal run over 300 codes
(cn_csi300_tushare, the bundled sample in quick mode); and a re-run from the record of each, in seconds, beside
the original run's time. Through the runner the bot uses, on a migrated SQLite file.

`python -m bench run_record`; `run(quick=True)`: the bundled sample's codes for the signal run (tests)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.runner import Runner
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from graphs.runs.rerun import rerun
from testkit.desk import clock_at_data_end, desk_scripts
from testkit.fakes.chat import ScriptedChatModel, answer
from tools.data.local import LocalProvider, SampleProvider
from tools.data.provider import MarketDataProvider
from tools.runs.store import RunStore
from tools.settings import Settings

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cn_csi300_tushare"
USER = "UBENCH"


@dataclass(frozen=True)
class Figures:
    label: str
    manifest_kb: float
    calls_kb: float
    rows_kb: float
    run_s: float
    rerun_s: float
    reproduced: bool

    @property
    def total_kb(self) -> float:
        return self.manifest_kb + self.calls_kb + self.rows_kb


def _measure(label: str, runner: Runner, thread: str, text: str) -> Figures:
    started = time.perf_counter()
    outcome = runner.start(thread, text, user=USER, account="console")
    run_s = time.perf_counter() - started
    if outcome.status == "failed":
        raise RuntimeError(f"{label}: the run failed: {outcome.text}")
    store = RunStore(runner.context.engine)
    row = next(r for r in store.recent(user=USER) if r.thread_id == thread)
    manifest = len(json.dumps(row.manifest, ensure_ascii=False, default=str).encode())
    calls = sum(len(json.dumps(c.answer, ensure_ascii=False).encode()) + 200 for c in store.calls(row.id))
    rows = sum(len(r.rows) for r in store.reads(row.id))
    started = time.perf_counter()
    report = rerun(runner.context, row.id)
    rerun_s = time.perf_counter() - started
    return Figures(label, manifest / 1024, calls / 1024, rows / 1024, run_s, rerun_s,
                   report is not None and report.same)


def run(quick: bool = False) -> list[Figures]:
    provider: MarketDataProvider = SampleProvider() if quick or not SHARED.is_dir() else LocalProvider(SHARED)
    codes = sorted(provider.known_codes() or [])
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        app = build_context(Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(Path(tmp) / "data"),
                                     QUANTDESK_TRADERS=USER))
        with open_checkpointer(url) as saver:
            runner = Runner(app, saver)
            clock_at_data_end(app.engine, runner.context.provider)
            runner.context = dataclasses.replace(
                runner.context, llm=ScriptedChatModel(scripts=desk_scripts()),
                light_llm=ScriptedChatModel(script=[answer("summary of the day") for _ in range(4)]))
            desk = _measure("depth-1 decision", runner, "console-bench-desk", "analyze 600519.SH depth=1")
            runner.context = dataclasses.replace(runner.context, provider=provider)
            first, last = "20200102", provider.last_date() or "20200824"
            signal = _measure(f"signal, {len(codes)} codes", runner, "console-bench-signal",
                              f"signal ma_cross {','.join(codes)} {first} {last} fast=5 slow=20")
        app.engine.dispose()
    figures = [desk, signal]
    for f in figures:
        print(f"  {f.label}: record {f.total_kb:.1f} kB (manifest {f.manifest_kb:.1f}, model calls "
              f"{f.calls_kb:.1f}, rows {f.rows_kb:.1f}); run {f.run_s:.2f} s, re-run from the record "
              f"{f.rerun_s:.2f} s ({'reproduced' if f.reproduced else 'NOT reproduced'})")
    return figures


def main(quick: bool = False) -> None:
    run(quick=quick)
