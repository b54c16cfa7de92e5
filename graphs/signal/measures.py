"""`quantdesk eval signal`: did the run end in a valid signal, and did the signals it generated pass the
truncation (look-ahead) test the first time (None when no signal got as far as that test)."""

from __future__ import annotations

from graphs.measures import Measures, RunRecord, rate
from tools.research.lookahead import is_lookahead_problem


def measure_signal(run: RunRecord) -> Measures:
    state = run.state
    failures = sum(is_lookahead_problem(error) for error in state.get("error_log") or [])
    tested = failures > 0 or bool(state.get("validated"))  # the truncation test runs once the other checks pass
    return {
        "valid_signal": rate(bool(state.get("result")) and bool(state.get("validated"))),
        "truncation_pass": rate(failures == 0) if tested else None,
        "look_ahead_caught": float(failures),
        "retries": float(state.get("retry_count") or 0),
        "asked_to_clarify": rate(any(i.get("type") == "clarify" for i in run.interrupts)),
    }
