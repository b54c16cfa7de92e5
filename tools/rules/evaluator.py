"""The rule language run over one code's bars: per bar, buy, sell or hold with three-valued (Kleene) logic, and
why."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from tools.i18n import N_, _, ngettext
from tools.research import indicators
from tools.rules.parser import parse_rule
from tools.rules.syntax import (
    ARITHMETIC,
    COMPARISONS,
    INDICATORS,
    And,
    Arith,
    Compare,
    Condition,
    Cross,
    Field,
    Indicator,
    Lookback,
    Neg,
    Not,
    Number,
    Rule,
    Term,
    comparisons,
    leaves,
)

HOLDS = {"buy": N_("the buy condition holds: {condition}"), "sell": N_("the sell condition holds: {condition}")}
FAILS = {"buy": N_("the buy condition does not hold"), "sell": N_("the sell condition does not hold")}


class _Evaluator:
    """Values and truths of nodes over one code's bars, each computed once."""

    def __init__(self, bars: pd.DataFrame) -> None:
        if not bars.index.is_monotonic_increasing or not bars.index.is_unique:
            raise ValueError("the bars' index must be unique dates in increasing order")
        self.bars = bars
        self.results: dict[tuple[str, tuple[Any, ...]], indicators.IndicatorResult] = {}
        self.values: dict[Term, pd.Series] = {}
        self.truths: dict[Condition, pd.Series] = {}

    def column(self, name: str) -> pd.Series:
        column = "vol" if name == "volume" and "vol" in self.bars.columns else name
        if column not in self.bars.columns:
            raise ValueError(f"the bars have no {name} column")
        return self.bars[column].astype("float64")

    def value(self, node: Term) -> pd.Series:
        if node not in self.values:
            self.values[node] = self._value(node)
        return self.values[node]

    def _value(self, node: Term) -> pd.Series:
        if isinstance(node, Number):
            return pd.Series(float(node.value), index=self.bars.index)
        if isinstance(node, Field):
            return self.column(node.name)
        if isinstance(node, Indicator):
            key = (node.name, node.params)
            if key not in self.results:
                spec = INDICATORS[node.name]
                inputs = pd.DataFrame({name: self.column(name) for name in spec.inputs})
                self.results[key] = spec.compute(inputs, node.params)
            return getattr(self.results[key], node.output or "value")
        if isinstance(node, Lookback):
            return self.value(node.term).shift(node.bars)
        if isinstance(node, Neg):
            return -self.value(node.operand)
        return ARITHMETIC[node.op](self.value(node.left), self.value(node.right))

    def truth(self, node: Condition) -> pd.Series:
        """True, False or <NA> (unknown) per bar."""
        if node not in self.truths:
            self.truths[node] = self._truth(node)
        return self.truths[node]

    def _truth(self, node: Condition) -> pd.Series:
        if isinstance(node, Compare | Cross):
            left, right = self.value(node.left), self.value(node.right)
            known = left.notna() & right.notna()
            if isinstance(node, Compare):
                result = COMPARISONS[node.op](left, right)
            else:
                before_left, before_right = left.shift(1), right.shift(1)
                known &= before_left.notna() & before_right.notna()
                result = ((left > right) & (before_left <= before_right) if node.direction == "above"
                          else (left < right) & (before_left >= before_right))
            return result.astype("boolean").mask(~known)
        if isinstance(node, Not):
            return ~self.truth(node.operand)
        parts = [self.truth(o) for o in node.operands]
        out = parts[0]
        for part in parts[1:]:
            out = (out & part) if isinstance(node, And) else (out | part)
        return out

    def missing(self, test: Compare | Cross) -> dict[str, pd.Series]:
        """Per leaf of a comparison: where it lacks a value the comparison needs (this bar, or the previous one for
        a cross)."""
        out: dict[str, pd.Series] = {}
        for leaf in leaves(test):
            absent = self.value(leaf).isna()
            if isinstance(test, Cross):
                absent |= absent.shift(1, fill_value=True)
            out[leaf.describe()] = absent
        return out


def steps_of(condition: Condition) -> Iterator[Term | Compare | Cross]:
    """What a condition computes, in the order a log shows it: for each comparison its operands' leaves, its
    composite operands, then the comparison itself."""
    for test in comparisons(condition):
        for operand in (test.left, test.right):
            yield from leaves(operand)
            if isinstance(operand, Neg | Arith):
                yield operand
        yield test


def evaluate(rule: Rule | str, bars: pd.DataFrame) -> pd.DataFrame:
    """The rule's decision on every bar of one code (bars: index = dates ascending, columns open, high, low,
    close and vol or volume, as the rule needs them).

    Columns: action ("buy", "sell" or "hold"), reason, buy_condition and sell_condition (whether each clause holds),
    warming_up (some value a comparison needs is missing), then the value of every term used and the truth of
    every comparison (True, False or <NA> when unknown), named by their canonical text, in order of appearance.
    """
    rule = parse_rule(rule) if isinstance(rule, str) else rule
    ev = _Evaluator(bars)
    columns: dict[str, pd.Series] = {}
    missing: dict[str, pd.Series] = {}
    for _side, condition in rule.clauses():
        for node in steps_of(condition):
            if isinstance(node, Compare | Cross):
                columns.setdefault(node.describe(), ev.truth(node))
                for name, absent in ev.missing(node).items():
                    missing[name] = missing[name] | absent if name in missing else absent
            else:
                columns.setdefault(node.describe(), ev.value(node))
    never = pd.Series(False, index=bars.index)
    buy = ev.truth(rule.buy).fillna(False).astype(bool) if rule.buy is not None else never
    sell = ev.truth(rule.sell).fillna(False).astype(bool) if rule.sell is not None else never
    absent = pd.DataFrame(missing, index=bars.index, dtype=bool)
    action = np.select([buy & ~sell, sell & ~buy], ["buy", "sell"], "hold")
    reasons = [_reason(rule, b, s, [name for name, gone in zip(absent.columns, row, strict=True) if gone])
               for b, s, row in zip(buy, sell, absent.to_numpy(), strict=True)]
    head = pd.DataFrame({"action": action, "reason": reasons, "buy_condition": buy, "sell_condition": sell,
                         "warming_up": absent.any(axis=1)}, index=bars.index)
    return pd.concat([head, pd.DataFrame(columns, index=bars.index)], axis=1)


def _reason(rule: Rule, buy: bool, sell: bool, missing: list[str]) -> str:
    """Why the rule decided what it did on one bar, in the language in effect."""
    if buy and sell:
        return _("conflict: both the buy and the sell conditions hold, so the rule holds")
    if buy or sell:
        condition = rule.buy if buy else rule.sell
        assert condition is not None
        return _(HOLDS["buy" if buy else "sell"]).format(condition=condition.describe())
    sides = [side for side, _condition in rule.clauses()]
    base = _("neither condition holds") if len(sides) == 2 else _(FAILS[sides[0]])
    if not missing:
        return base
    return ngettext("warming up: {terms} has no value yet; {base}", "warming up: {terms} have no value yet; {base}",
                    len(missing)).format(terms=", ".join(missing), base=base)
