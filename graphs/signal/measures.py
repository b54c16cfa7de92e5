"""`quantdesk eval signal`: did the run end in a valid signal, and did the signals it generated pass the
truncation (look-ahead) test the first time."""

from __future__ import annotations

from graphs.measures import Measures, RunRecord, rate
from tools.lookahead import is_lookahead_problem


def measure_signal(run: RunRecord) -> Measures:
    state = run.state
    failures = sum(is_lookahead_problem(error) for error in state.get("error_log") or [])
    generated = bool(state.get("signal_code")) or failures > 0
    return {
        "valid_signal": rate(bool(state.get("result")) and bool(state.get("validated"))),
        "truncation_pass": rate(failures == 0) if generated else None,
        "look_ahead_caught": float(failures),
        "retries": float(state.get("retry_count") or 0),
        "asked_to_clarify": rate(any(i.get("type") == "clarify" for i in run.interrupts)),
    }
