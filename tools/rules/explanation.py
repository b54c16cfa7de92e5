"""A rule's decision on one bar, explained step by step: each indicator read, each value and each comparison,
as the rule run's logged tool calls."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tools.i18n import N_, _
from tools.rules.evaluator import evaluate, steps_of
from tools.rules.parser import parse_rule
from tools.rules.syntax import (
    INDICATORS,
    Compare,
    Cross,
    Field,
    Indicator,
    Lookback,
    Number,
    Rule,
    Term,
)

TRUTH = {True: N_("true"), False: N_("false")}
CLAUSES = {"buy": N_("buy when {condition} → {truth}"), "sell": N_("sell when {condition} → {truth}")}


def _number(value: Any) -> float | None:
    """A JSON-ready value: a float, or None for a missing one."""
    return None if pd.isna(value) else float(value)


def _shown(value: float | None) -> str:
    return _("no value") if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _truth_text(value: Any) -> str:
    """Whether a comparison holds, as the trace says it: true, false or unknown (in the language in effect)."""
    return _("unknown") if pd.isna(value) else _(TRUTH[bool(value)])


def _tool(node: Term) -> dict[str, Any]:
    """The step's action: which tool computed the term, with its parameters."""
    if isinstance(node, Lookback):
        inner = _tool(node.term)
        return {"name": inner["name"], "params": {**inner["params"], "bars_ago": node.bars}}
    if isinstance(node, Field):
        return {"name": "price", "params": {"field": node.name}}
    if isinstance(node, Indicator):
        names = [p.name for p in INDICATORS[node.name].params]
        params: dict[str, Any] = {n: p if isinstance(p, int) else float(p) for n, p in zip(names, node.params,
                                                                                              strict=True)}
        if node.output:
            params["output"] = node.output
        return {"name": node.name, "params": params}
    return {"name": "arithmetic", "params": {"expression": node.describe()}}


def explain(rule: Rule | str, bars: pd.DataFrame, at: Any = None) -> list[dict[str, Any]]:
    """The decision on the bar dated `at` (default: the last bar) as logged steps: a "calculation" step per term,
    comparison and clause, then the "decision" step (action, reason, confidence 1.0: the rule is deterministic).
    Only bars up to `at` are read."""
    rule = parse_rule(rule) if isinstance(rule, str) else rule
    if at is not None:
        stamp = pd.Timestamp(at)
        if stamp not in bars.index:
            raise ValueError(f"no bar on {stamp:%Y-%m-%d}")
        bars = bars.loc[:stamp]
    if bars.empty:
        raise ValueError("no bars to decide on")
    frame = evaluate(rule, bars)
    now = frame.iloc[-1]
    before = frame.iloc[-2] if len(frame) > 1 else None
    when = frame.index[-1]
    when_text = f"{when:%Y-%m-%d}" if isinstance(when, pd.Timestamp) else str(when)
    steps: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(reasoning: str, action: dict[str, Any], result: dict[str, Any]) -> None:
        steps.append({"step": len(steps) + 1, "type": "calculation", "reasoning": reasoning, "action": action,
                      "intermediate_result": result})

    for side, condition in rule.clauses():
        for node in steps_of(condition):
            text = node.describe()
            if text in seen:
                continue
            seen.add(text)
            if isinstance(node, Compare | Cross):
                operands = [o.describe() for o in (node.left, node.right) if not isinstance(o, Number)]
                result = {name: _number(now[name]) for name in operands}
                if isinstance(node, Cross):
                    result |= {f"{name} (previous bar)": None if before is None else _number(before[name])
                               for name in operands}
                result[text] = None if pd.isna(now[text]) else bool(now[text])
                add(_comparison_text(node, now, before), {"name": "compare", "params": {"expression": text}}, result)
            else:
                value = _number(now[text])
                add(_("{term} on {day} = {value}").format(term=text, day=when_text, value=_shown(value)), _tool(node),
                    {text: value})
        holds = bool(now[f"{side}_condition"])
        add(_(CLAUSES[side]).format(condition=condition.describe(), truth=_truth_text(holds)),
            {"name": "condition", "params": {"clause": side, "expression": condition.describe()}},
            {f"{side}_condition": holds})
    steps.append({"step": len(steps) + 1, "type": "decision", "reasoning": rule.describe(),
                  "action": str(now["action"]), "reason": str(now["reason"]), "confidence": 1.0})
    return steps


def _comparison_text(test: Compare | Cross, now: pd.Series, before: pd.Series | None) -> str:
    """"close=10.52, ma(30)=10.31 → close > ma(30) true"; a cross also shows the previous bar's values."""
    shown = []
    for operand in (test.left, test.right):
        if isinstance(operand, Number):
            continue
        text = operand.describe()
        value = f"{text}={_shown(_number(now[text]))}"
        if isinstance(test, Cross):
            previous = None if before is None else _number(before[text])
            value += _(" (previous bar {value})").format(value=_shown(previous))
        shown.append(value)
    truth = now[test.describe()]
    tail = _(" (warming up)") if pd.isna(truth) else ""
    return f"{', '.join(shown)} → {test.describe()} {_truth_text(truth)}{tail}"
