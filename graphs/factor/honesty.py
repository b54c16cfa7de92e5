"""What the factor's evaluation adds for honesty: its trials recorded (the evaluated code with its in-sample
long-short returns, and every other code attempt of the run as a trial without a series), the thread's trials
judged (DSR, PBO) and the library gate's verdict."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tools.research.gate import verdict
from tools.research.trials import Trial, TrialStore, body_key, judge, universe_key

PERIOD = "1"  # the horizon the gate and the DSR read: next-day returns


def attempted_bodies(attempts: list[dict[str, Any]]) -> set[str]:
    """The keys of every code the run tried (the model's tries and each dry run)."""
    keys = {a["body"] for a in attempts if a.get("body")}
    return keys | {t["body"] for a in attempts for t in a.get("tries", []) if t.get("body")}


def judged(store: TrialStore, thread: str, person: str | None, spec: dict[str, Any], body: str,
           attempts: list[dict[str, Any]], returns: pd.Series, metrics: dict[str, dict[str, float | None]],
           holdout: dict[str, dict[str, float | None]] | None, threshold: float) -> dict[str, Any]:
    """Record this run's trials, judge the evaluated one among its thread's, and the gate: {trials..., gate}."""
    cut = (spec.get("split") or {}).get("in_sample_end") or spec["end"]  # another split is another trial
    scope = f"{thread}:{universe_key(list(spec.get('codes') or []))}:{spec['start']}:{spec['end']}:{cut}"
    evaluated = body_key(body)

    def trial(key: str, kind: str, series: pd.Series | None) -> Trial:
        return Trial(f"{scope}:{key}", thread, person, kind, spec["name"], universe_key(list(spec.get("codes") or [])),
                     spec["start"], spec["end"], series)

    store.record([trial(evaluated, "factor", returns),
                  *(trial(key, "attempt", None) for key in sorted(attempted_bodies(attempts) - {evaluated}))])
    trials = [r for r in store.of_thread(thread) if r.kind != "signal"]  # a thread's signal backtests are apart
    judgement = judge(returns, trials, store.count_of(person))
    in_sample = (metrics.get(PERIOD) or {}).get("rank_ic_mean")
    held = ((holdout or {}).get(PERIOD) or {}).get("rank_ic_mean")
    return {**judgement.as_dict(), "gate": verdict(in_sample, held, judgement.dsr, threshold)}
