"""Tokens a decision has used so far: the analysts' and the finished debates' own counts."""

from __future__ import annotations

from graphs.decision.state import DecisionState


def tokens_used(state: DecisionState) -> int:
    runs = [*(state.get("analyst_runs") or {}).values(), *(state.get("stage_runs") or {}).values()]
    return sum(int(run.get("tokens") or 0) for run in runs)
