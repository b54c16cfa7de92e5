"""The structured rule language: trading rules that run and backtest without an LLM.

    buy when close > ma(30) and rsi(14) < 70; sell when close < ma(30) or rsi(14) > 80

Parsing is a hand-written tokenizer and recursive-descent parser over the grammar below; nothing in the text is
ever handed to Python (no eval, exec, compile or ast). Keywords and names are case-insensitive.

    rule       = clause [ ";" clause ] [ ";" ] ;              (* at most one buy and one sell clause *)
    clause     = ( "buy" | "sell" ) "when" condition ;
    condition  = conjunct { "or" conjunct } ;
    conjunct   = negation { "and" negation } ;
    negation   = "not" negation | comparison ;
    comparison = sum [ ( "<" | "<=" | ">" | ">=" | "==" | "!=" ) sum
                     | "crosses" ( "above" | "below" ) sum ] ;
    sum        = product { ( "+" | "-" ) product } ;
    product    = unary { ( "*" | "/" ) unary } ;
    unary      = "-" unary | primary ;
    primary    = NUMBER | series [ "[" INTEGER "]" ] | "(" condition ")" ;
    series     = FIELD | INDICATOR [ "(" NUMBER { "," NUMBER } ")" ] [ "." OUTPUT ] ;
    FIELD      = "open" | "high" | "low" | "close" | "volume" ;

Indicators (tools.research.indicators, TA-Lib conventions; omitted trailing parameters take their defaults):
ma(n), ema(n), rsi(n=14), atr(n=14), macd(fast=12, slow=26, signal=9).dif|dea|hist,
boll(n=20, k=2).upper|mid|lower, kdj(n=9, m1=3, m2=3).k|d|j. `x[k]` is x k bars ago (1 to 250).
A parenthesised group may hold a condition or a value; the parser checks which one each place needs.

Semantics, per bar of one code's own trading days:
- a comparison is unknown when an operand has no value (an indicator inside its warm-up, a lookback before the
  first bar); `x crosses above y` is x > y on this bar and x <= y on the previous one (`below`: x < y, x >= y),
  unknown when any of the four values is missing;
- `and`, `or` and `not` follow three-valued (Kleene) logic, so `not` of an unknown comparison stays unknown and a
  warm-up never turns into a trade; a clause holds only when its condition is true;
- the action is "buy" when only the buy clause holds, "sell" when only the sell clause holds, else "hold". When
  both hold the rule contradicts itself on that bar: the action is "hold" with the reason "conflict", so a
  contradictory rule neither opens nor closes a position (it does not guess which side was meant).

This module holds the language's vocabulary (fields, keywords, indicator specs) and its syntax tree;
parser.py reads text into it, evaluator.py runs it over bars, explanation.py says step by step what it found."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

import pandas as pd

from tools.i18n import _
from tools.research import indicators

FIELDS = ("open", "high", "low", "close", "volume")
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}
ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
}
KEYWORDS = frozenset({"buy", "sell", "when", "and", "or", "not", "crosses", "above", "below"})
MAX_PERIOD = 1000
MAX_LOOKBACK = 250


class RuleSyntaxError(ValueError):
    """A rule the parser refuses: the problem, the column (1-based), the rule text and a caret under the column."""

    def __init__(self, text: str, offset: int, problem: str) -> None:
        self.text, self.column, self.problem = text, offset + 1, problem
        shown = "".join(" " if ch.isspace() else ch for ch in text)
        super().__init__(_("{problem} at column {column}").format(problem=problem, column=self.column)
                         + f"\n{shown}\n{' ' * offset}^")


# ---------------------------------------------------------------------------------------------------- indicators


@dataclass(frozen=True)
class _Param:
    name: str
    default: int | Decimal | None  # None: required
    low: Decimal
    high: Decimal
    whole: bool = True

    def allowed(self) -> str:
        kind = _("a whole number from {low} to {high}") if self.whole else _("a number from {low} to {high}")
        return kind.format(low=_num_text(self.low), high=_num_text(self.high))


@dataclass(frozen=True)
class Spec:
    params: tuple[_Param, ...]
    outputs: tuple[str, ...]  # () for a one-line indicator
    inputs: tuple[str, ...]  # the bar columns it reads
    warmup: Callable[[tuple[Any, ...]], int]  # bars before its first value (tools.research.indicators' `warmup`)
    compute: Callable[[pd.DataFrame, tuple[Any, ...]], indicators.IndicatorResult]


def _period(name: str, default: int | None = None, low: int = 2) -> _Param:
    return _Param(name, default, Decimal(low), Decimal(MAX_PERIOD))


INDICATORS: dict[str, Spec] = {
    "ma": Spec((_period("n"),), (), ("close",), lambda p: p[0] - 1, lambda b, p: indicators.ma(b["close"], p[0])),
    "ema": Spec((_period("n"),), (), ("close",), lambda p: p[0] - 1, lambda b, p: indicators.ema(b["close"], p[0])),
    "rsi": Spec((_period("n", 14),), (), ("close",), lambda p: p[0], lambda b, p: indicators.rsi(b["close"], p[0])),
    "macd": Spec((_period("fast", 12), _period("slow", 26), _period("signal", 9, 1)), ("dif", "dea", "hist"),
                  ("close",), lambda p: (p[1] - 1) + (p[2] - 1), lambda b, p: indicators.macd(b["close"], *p)),
    "boll": Spec((_period("n", 20), _Param("k", Decimal(2), Decimal("0.1"), Decimal(10), whole=False)),
                  ("upper", "mid", "lower"), ("close",), lambda p: p[0] - 1,
                  lambda b, p: indicators.boll(b["close"], p[0], float(p[1]))),
    "atr": Spec((_period("n", 14, 1),), (), ("high", "low", "close"), lambda p: p[0],
                 lambda b, p: indicators.atr(b["high"], b["low"], b["close"], p[0])),
    "kdj": Spec((_period("n", 9), _period("m1", 3, 1), _period("m2", 3, 1)), ("k", "d", "j"),
                 ("high", "low", "close"), lambda p: p[0] - 1,
                 lambda b, p: indicators.kdj(b["high"], b["low"], b["close"], *p)),
}


def signature(name: str) -> str:
    return f"{name}({', '.join(p.name for p in INDICATORS[name].params)})"


def _num_text(value: Decimal | int) -> str:
    """Canonical text of a number: no exponent, no trailing zeros (70, 1.02, 0.5)."""
    if isinstance(value, int):
        return str(value)
    text = f"{value.normalize():f}"
    return "0" if text == "-0" else text


# ---------------------------------------------------------------------------------------------------- the tree


@dataclass(frozen=True)
class Number:
    value: Decimal

    def describe(self) -> str:
        return _num_text(self.value)


@dataclass(frozen=True)
class Field:
    name: str  # one of FIELDS

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Indicator:
    name: str
    params: tuple[int | Decimal, ...]  # every parameter, defaults filled in
    output: str | None = None  # the line of a multi-line indicator

    def describe(self) -> str:
        line = f".{self.output}" if self.output else ""
        return f"{self.name}({','.join(_num_text(p) for p in self.params)}){line}"

    @property
    def warmup(self) -> int:
        """Bars of the code's own trading days before the indicator's first value."""
        return INDICATORS[self.name].warmup(self.params)


@dataclass(frozen=True)
class Lookback:
    term: Field | Indicator
    bars: int  # how many bars ago, at least 1

    def describe(self) -> str:
        return f"{self.term.describe()}[{self.bars}]"


@dataclass(frozen=True)
class Neg:
    operand: Term

    def describe(self) -> str:
        return "-" + _wrap(self.operand, 7)


@dataclass(frozen=True)
class Arith:
    op: str  # + - * /
    left: Term
    right: Term

    def describe(self) -> str:
        prec = _prec(self)
        return f"{_wrap(self.left, prec)} {self.op} {_wrap(self.right, prec + 1)}"


@dataclass(frozen=True)
class Compare:
    op: str  # < <= > >= == !=
    left: Term
    right: Term

    def describe(self) -> str:
        return f"{self.left.describe()} {self.op} {self.right.describe()}"


@dataclass(frozen=True)
class Cross:
    direction: Literal["above", "below"]
    left: Term
    right: Term

    def describe(self) -> str:
        return f"{self.left.describe()} crosses {self.direction} {self.right.describe()}"


@dataclass(frozen=True)
class Not:
    operand: Condition

    def describe(self) -> str:
        return "not " + _wrap(self.operand, 3)


@dataclass(frozen=True)
class And:
    operands: tuple[Condition, ...]

    def describe(self) -> str:
        return " and ".join(_wrap(o, 3) for o in self.operands)


@dataclass(frozen=True)
class Or:
    operands: tuple[Condition, ...]

    def describe(self) -> str:
        return " or ".join(_wrap(o, 2) for o in self.operands)


Series = Field | Indicator | Lookback
Term = Number | Field | Indicator | Lookback | Neg | Arith
Condition = Compare | Cross | Not | And | Or
Node = Term | Condition
TERMS = (Number, Field, Indicator, Lookback, Neg, Arith)
CONDITIONS = (Compare, Cross, Not, And, Or)


def _prec(node: Node) -> int:
    """Binding strength, loosest first: or, and, not, comparison, + -, * /, unary minus, atoms."""
    if isinstance(node, Arith):
        return 5 if node.op in "+-" else 6
    ranks: dict[type, int] = {Or: 1, And: 2, Not: 3, Compare: 4, Cross: 4, Neg: 7}
    return ranks.get(type(node), 8)


def _wrap(node: Node, prec: int) -> str:
    """`node`'s text, in parentheses when it binds more loosely than `prec`."""
    text = node.describe()
    return f"({text})" if _prec(node) < prec else text


@dataclass(frozen=True)
class Rule:
    """A parsed rule: the buy and/or the sell condition (at least one)."""

    buy: Condition | None
    sell: Condition | None

    def clauses(self) -> Iterator[tuple[str, Condition]]:
        """(action, condition) of each clause present, buy first."""
        if self.buy is not None:
            yield "buy", self.buy
        if self.sell is not None:
            yield "sell", self.sell

    def describe(self) -> str:
        """The canonical text: lower case, buy clause first, every parameter written out, minimal parentheses."""
        return "; ".join(f"{action} when {condition.describe()}" for action, condition in self.clauses())

    def indicators_needed(self) -> tuple[Indicator, ...]:
        """Every indicator the rule reads, once each, in order of appearance."""
        bases = (leaf.term if isinstance(leaf, Lookback) else leaf
                 for _, c in self.clauses() for test in comparisons(c) for leaf in leaves(test))
        return tuple(dict.fromkeys(base for base in bases if isinstance(base, Indicator)))

    @property
    def warmup(self) -> int:
        """Bars needed before the first decision: the longest indicator warm-up plus its lookback, plus one for
        the operands of `crosses` (they read the previous bar)."""
        return max((_series_warmup(leaf) + isinstance(test, Cross)
                    for _, c in self.clauses() for test in comparisons(c) for leaf in leaves(test)), default=0)


def _series_warmup(leaf: Series) -> int:
    if isinstance(leaf, Lookback):
        return _series_warmup(leaf.term) + leaf.bars
    return leaf.warmup if isinstance(leaf, Indicator) else 0


def comparisons(condition: Condition) -> Iterator[Compare | Cross]:
    """The comparisons and crosses of a condition, left to right."""
    if isinstance(condition, Compare | Cross):
        yield condition
    elif isinstance(condition, Not):
        yield from comparisons(condition.operand)
    else:
        for operand in condition.operands:
            yield from comparisons(operand)


def leaves(node: Node) -> Iterator[Series]:
    """The price fields, indicators and lookbacks a term or comparison reads, left to right."""
    if isinstance(node, Field | Indicator | Lookback):
        yield node
    elif isinstance(node, Neg):
        yield from leaves(node.operand)
    elif isinstance(node, Arith | Compare | Cross):
        yield from leaves(node.left)
        yield from leaves(node.right)
