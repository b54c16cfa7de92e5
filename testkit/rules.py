"""Saved rules as the schedule tests need them: scheduled over the gate, since what they test is what a schedule
does (the gate itself: tests/graphs/test_rule_gate.py)."""

from __future__ import annotations

from typing import Any

from tools.rules.store import Rule, RuleStore

REASON = "a test of what a schedule does"


def add_scheduled(store: RuleStore, owner: str, channel: str, symbol: str, requirements: str, schedule: str,
                  **options: Any) -> Rule:
    """A rule saved and scheduled at `schedule` by its owner with a reason (it has no backtest)."""
    rule = store.add(owner, channel, symbol, requirements, **options)
    return store.update_schedule(rule.id, owner, schedule, anyway=REASON)
