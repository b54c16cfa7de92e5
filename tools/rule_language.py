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
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, NoReturn

import numpy as np
import pandas as pd

from tools.research import indicators

__all__ = [
    "And",
    "Arith",
    "Compare",
    "Cross",
    "Field",
    "Indicator",
    "Lookback",
    "Neg",
    "Not",
    "Number",
    "Or",
    "Rule",
    "RuleSyntaxError",
    "evaluate",
    "explain",
    "parse_rule",
]

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
        super().__init__(f"{problem} at column {self.column}\n{shown}\n{' ' * offset}^")


# ---------------------------------------------------------------------------------------------------- indicators


@dataclass(frozen=True)
class _Param:
    name: str
    default: int | Decimal | None  # None: required
    low: Decimal
    high: Decimal
    whole: bool = True

    def allowed(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} from {_num_text(self.low)} to {_num_text(self.high)}"


@dataclass(frozen=True)
class _Spec:
    params: tuple[_Param, ...]
    outputs: tuple[str, ...]  # () for a one-line indicator
    inputs: tuple[str, ...]  # the bar columns it reads
    warmup: Callable[[tuple[Any, ...]], int]  # bars before its first value (tools.research.indicators' `warmup`)
    compute: Callable[[pd.DataFrame, tuple[Any, ...]], indicators.IndicatorResult]


def _period(name: str, default: int | None = None, low: int = 2) -> _Param:
    return _Param(name, default, Decimal(low), Decimal(MAX_PERIOD))


_SPECS: dict[str, _Spec] = {
    "ma": _Spec((_period("n"),), (), ("close",), lambda p: p[0] - 1, lambda b, p: indicators.ma(b["close"], p[0])),
    "ema": _Spec((_period("n"),), (), ("close",), lambda p: p[0] - 1, lambda b, p: indicators.ema(b["close"], p[0])),
    "rsi": _Spec((_period("n", 14),), (), ("close",), lambda p: p[0], lambda b, p: indicators.rsi(b["close"], p[0])),
    "macd": _Spec((_period("fast", 12), _period("slow", 26), _period("signal", 9, 1)), ("dif", "dea", "hist"),
                  ("close",), lambda p: (p[1] - 1) + (p[2] - 1), lambda b, p: indicators.macd(b["close"], *p)),
    "boll": _Spec((_period("n", 20), _Param("k", Decimal(2), Decimal("0.1"), Decimal(10), whole=False)),
                  ("upper", "mid", "lower"), ("close",), lambda p: p[0] - 1,
                  lambda b, p: indicators.boll(b["close"], p[0], float(p[1]))),
    "atr": _Spec((_period("n", 14, 1),), (), ("high", "low", "close"), lambda p: p[0],
                 lambda b, p: indicators.atr(b["high"], b["low"], b["close"], p[0])),
    "kdj": _Spec((_period("n", 9), _period("m1", 3, 1), _period("m2", 3, 1)), ("k", "d", "j"),
                 ("high", "low", "close"), lambda p: p[0] - 1,
                 lambda b, p: indicators.kdj(b["high"], b["low"], b["close"], *p)),
}


def _signature(name: str) -> str:
    return f"{name}({', '.join(p.name for p in _SPECS[name].params)})"


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
        return _SPECS[self.name].warmup(self.params)


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
_TERMS = (Number, Field, Indicator, Lookback, Neg, Arith)
_CONDITIONS = (Compare, Cross, Not, And, Or)


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
                 for _, c in self.clauses() for test in _tests(c) for leaf in _leaves(test))
        return tuple(dict.fromkeys(base for base in bases if isinstance(base, Indicator)))

    @property
    def warmup(self) -> int:
        """Bars needed before the first decision: the longest indicator warm-up plus its lookback, plus one for
        the operands of `crosses` (they read the previous bar)."""
        return max((_series_warmup(leaf) + isinstance(test, Cross)
                    for _, c in self.clauses() for test in _tests(c) for leaf in _leaves(test)), default=0)


def _series_warmup(leaf: Series) -> int:
    if isinstance(leaf, Lookback):
        return _series_warmup(leaf.term) + leaf.bars
    return leaf.warmup if isinstance(leaf, Indicator) else 0


def _tests(condition: Condition) -> Iterator[Compare | Cross]:
    """The comparisons and crosses of a condition, left to right."""
    if isinstance(condition, Compare | Cross):
        yield condition
    elif isinstance(condition, Not):
        yield from _tests(condition.operand)
    else:
        for operand in condition.operands:
            yield from _tests(operand)


def _leaves(node: Node) -> Iterator[Series]:
    """The price fields, indicators and lookbacks a term or comparison reads, left to right."""
    if isinstance(node, Field | Indicator | Lookback):
        yield node
    elif isinstance(node, Neg):
        yield from _leaves(node.operand)
    elif isinstance(node, Arith | Compare | Cross):
        yield from _leaves(node.left)
        yield from _leaves(node.right)


# ---------------------------------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Token:
    kind: Literal["number", "name", "symbol", "bad", "end"]
    text: str  # names lower-cased
    start: int  # offset in the rule text
    end: int


_SYMBOLS = ("<=", ">=", "==", "!=", "<", ">", "(", ")", "[", "]", ",", ".", ";", "+", "-", "*", "/")
_DIGITS = "0123456789"
_HINTS = {"=": " (compare with '==')", "&": " (use 'and')", "|": " (use 'or')", "!": " (use 'not')"}


def _tokens(text: str) -> list[_Token]:
    """The rule's tokens; a character the language does not use becomes a "bad" token, refused when reached."""
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        j = i + 1
        if ch in _DIGITS:
            while j < n and text[j] in _DIGITS:
                j += 1
            if j + 1 < n and text[j] == "." and text[j + 1] in _DIGITS:
                j += 1
                while j < n and text[j] in _DIGITS:
                    j += 1
            out.append(_Token("number", text[i:j], i, j))
        elif ch.isascii() and (ch.isalpha() or ch == "_"):
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(_Token("name", text[i:j].lower(), i, j))
        else:
            symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
            if symbol is None:
                out.append(_Token("bad", ch, i, j))
            else:
                j = i + len(symbol)
                out.append(_Token("symbol", symbol, i, j))
        i = j
    out.append(_Token("end", "", n, n))
    return out


# ---------------------------------------------------------------------------------------------------- parser


@dataclass(frozen=True)
class _Span:
    """A parsed node and where its text lies."""

    node: Node
    start: int
    end: int


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, text: str) -> bool:
        token = self.peek()
        return token.kind in ("name", "symbol") and token.text == text

    def fail(self, where: _Token | int, problem: str) -> NoReturn:
        if isinstance(where, _Token) and where.kind == "bad":
            problem = f"unexpected character {where.text!r}{_HINTS.get(where.text, '')}"
        raise RuleSyntaxError(self.text, where.start if isinstance(where, _Token) else where, problem)

    def source(self, span: _Span) -> str:
        return self.text[span.start:span.end]

    # --- rule and conditions

    def rule(self) -> Rule:
        clauses: dict[str, Condition] = {}
        while True:
            head = self.peek()
            if not (head.kind == "name" and head.text in ("buy", "sell")):
                self.fail(head, "expected 'buy when' or 'sell when'")
            if head.text in clauses:
                self.fail(head, f"a rule has at most one {head.text} clause")
            self.take()
            if not self.at("when"):
                self.fail(self.peek(), f"expected 'when' after '{head.text}'")
            self.take()
            body = self.condition(self.disjunction())
            clauses[head.text] = body.node
            if self.at(";"):
                self.take()
                if self.peek().kind == "end":
                    break
            elif self.peek().kind == "end":
                break
            else:
                self.fail(self.peek(), f"expected 'and', 'or', ';' or the end of the rule after '{self.source(body)}'")
        return Rule(clauses.get("buy"), clauses.get("sell"))

    def condition(self, span: _Span) -> _Span:
        """`span`, which must be a condition: a value there lacks its comparison, refused at the next token."""
        if not isinstance(span.node, _CONDITIONS):
            self.fail(self.peek(), f"expected a comparison operator after '{self.source(span)}'")
        return span

    def value(self, span: _Span) -> _Span:
        """`span`, which must be a value (compared or computed with), not a condition."""
        if not isinstance(span.node, _TERMS):
            self.fail(span.start, f"expected a value, not the condition '{self.source(span)}'")
        return span

    def disjunction(self) -> _Span:
        return self.joined("or", self.conjunction, Or)

    def conjunction(self) -> _Span:
        return self.joined("and", self.negation, And)

    def joined(self, word: str, part: Callable[[], _Span], kind: type[And] | type[Or]) -> _Span:
        first = part()
        if not self.at(word):
            return first
        spans = [self.condition(first)]
        while self.at(word):
            self.take()
            spans.append(self.condition(part()))
        flat = tuple(o for s in spans for o in (s.node.operands if isinstance(s.node, kind) else (s.node,)))
        return _Span(kind(flat), first.start, spans[-1].end)

    def negation(self) -> _Span:
        if not self.at("not"):
            return self.comparison()
        word = self.take()
        inner = self.condition(self.negation())
        return _Span(Not(inner.node), word.start, inner.end)

    def comparison(self) -> _Span:
        left = self.sum()
        token = self.peek()
        if token.kind == "symbol" and token.text in COMPARISONS:
            self.value(left)
            self.take()
            right = self.value(self.sum())
            return _Span(Compare(token.text, left.node, right.node), left.start, right.end)
        if self.at("crosses"):
            self.value(left)
            self.take()
            direction = self.peek()
            if not (direction.kind == "name" and direction.text in ("above", "below")):
                self.fail(direction, "expected 'above' or 'below' after 'crosses'")
            self.take()
            right = self.value(self.sum())
            return _Span(Cross(direction.text, left.node, right.node),
                         left.start, right.end)
        return left

    # --- values

    def sum(self) -> _Span:
        return self.chain("+-", self.product)

    def product(self) -> _Span:
        return self.chain("*/", self.unary)

    def chain(self, ops: str, part: Callable[[], _Span]) -> _Span:
        left = part()
        while self.peek().kind == "symbol" and self.peek().text in ops:
            self.value(left)
            op = self.take().text
            right = self.value(part())
            left = _Span(Arith(op, left.node, right.node), left.start, right.end)
        return left

    def unary(self) -> _Span:
        if not self.at("-"):
            return self.primary()
        sign = self.take()
        operand = self.value(self.unary())
        return _Span(Neg(operand.node), sign.start, operand.end)

    def primary(self) -> _Span:
        token = self.peek()
        if token.kind == "number":
            self.take()
            return _Span(Number(Decimal(token.text)), token.start, token.end)
        if self.at("("):
            self.take()
            inner = self.disjunction()
            if not self.at(")"):
                self.fail(self.peek(), f"expected ')' to close the '(' of column {token.start + 1}")
            close = self.take()
            return _Span(inner.node, token.start, close.end)
        if token.kind == "name" and token.text not in KEYWORDS:
            return self.lookback(self.series())
        self.fail(token, "expected a number, a price field or an indicator")

    def series(self) -> _Span:
        token = self.take()
        name = token.text
        if name in FIELDS:
            if self.at("("):
                self.fail(self.peek(), f"{name} is a price field and takes no parameters")
            return _Span(Field(name), token.start, token.end)
        spec = _SPECS.get(name)
        if spec is None:
            known = ", ".join(_SPECS)
            if self.at("("):
                self.fail(token, f"unknown indicator '{name}'; known indicators: {known}")
            self.fail(token, f"unknown name '{name}'; expected a price field ({', '.join(FIELDS)}), "
                             f"an indicator ({known}) or a number")
        params, end = self.params(token, spec)
        output = None
        if spec.outputs:
            lines = [f"{name}.{o}" for o in spec.outputs]
            if not self.at("."):
                self.fail(self.peek(), f"{name} has several lines: use {', '.join(lines[:-1])} or {lines[-1]}")
            self.take()
            line = self.peek()
            if line.kind != "name" or line.text not in spec.outputs:
                self.fail(line, f"{name} has no line '{line.text}': use {', '.join(lines[:-1])} or {lines[-1]}")
            output, end = self.take().text, line.end
        elif self.at("."):
            self.fail(self.peek(), f"{name} has a single line: nothing may follow it after '.'")
        return _Span(Indicator(name, params, output), token.start, end)

    def params(self, name: _Token, spec: _Spec) -> tuple[tuple[int | Decimal, ...], int]:
        """The indicator's parameters, defaults filled in, and where its text ends."""
        given: list[_Token] = []
        end = name.end
        if self.at("("):
            self.take()
            while True:
                number = self.peek()
                if number.kind != "number":
                    self.fail(number, f"expected a number as a parameter of {name.text}")
                given.append(self.take())
                if not self.at(","):
                    break
                self.take()
            if not self.at(")"):
                self.fail(self.peek(), f"expected ',' or ')' in the parameters of {name.text}")
            end = self.take().end
        if len(given) > len(spec.params):
            count = len(spec.params)
            self.fail(given[count], f"{_signature(name.text)} takes {count} parameter{'s' if count > 1 else ''}, "
                                    f"got {len(given)}")
        values: list[int | Decimal] = []
        for i, param in enumerate(spec.params):
            if i >= len(given):
                if param.default is None:
                    self.fail(name, f"{name.text} needs its {param.name} parameter, as in {_signature(name.text)}")
                values.append(param.default)
                continue
            number = Decimal(given[i].text)
            if not param.low <= number <= param.high or (param.whole and number != number.to_integral_value()):
                self.fail(given[i], f"{name.text}'s {param.name} must be {param.allowed()}, got {given[i].text}")
            values.append(int(number) if param.whole else number)
        if name.text == "macd" and values[0] >= values[1]:
            self.fail(name, f"macd's fast period ({values[0]}) must be shorter than its slow period ({values[1]})")
        return tuple(values), end

    def lookback(self, span: _Span) -> _Span:
        if not self.at("["):
            return span
        self.take()
        count = self.peek()
        if count.kind != "number" or "." in count.text or not 1 <= int(count.text) <= MAX_LOOKBACK:
            self.fail(count, f"expected a whole number of bars from 1 to {MAX_LOOKBACK} inside '[...]'")
        self.take()
        if not self.at("]"):
            self.fail(self.peek(), "expected ']' after the number of bars")
        close = self.take()
        return _Span(Lookback(span.node, int(count.text)), span.start, close.end)


def parse_rule(text: str) -> Rule:
    """Parse a rule; a `RuleSyntaxError` points at the column of the first problem."""
    return _Parser(text).rule()


# ---------------------------------------------------------------------------------------------------- evaluation


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
                spec = _SPECS[node.name]
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
        for leaf in _leaves(test):
            absent = self.value(leaf).isna()
            if isinstance(test, Cross):
                absent |= absent.shift(1, fill_value=True)
            out[leaf.describe()] = absent
        return out


def _steps_of(condition: Condition) -> Iterator[Term | Compare | Cross]:
    """What a condition computes, in the order a log shows it: for each comparison its operands' leaves, its
    composite operands, then the comparison itself."""
    for test in _tests(condition):
        for operand in (test.left, test.right):
            yield from _leaves(operand)
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
    for _, condition in rule.clauses():
        for node in _steps_of(condition):
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
    if buy and sell:
        return "conflict: both the buy and the sell conditions hold, so the rule holds"
    if buy or sell:
        side = "buy" if buy else "sell"
        condition = rule.buy if buy else rule.sell
        assert condition is not None
        return f"the {side} condition holds: {condition.describe()}"
    sides = [side for side, _ in rule.clauses()]
    base = "neither condition holds" if len(sides) == 2 else f"the {sides[0]} condition does not hold"
    if not missing:
        return base
    return f"warming up: {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no value yet; {base}"


# ---------------------------------------------------------------------------------------------------- explanation


def _number(value: Any) -> float | None:
    """A JSON-ready value: a float, or None for a missing one."""
    return None if pd.isna(value) else float(value)


def _shown(value: float | None) -> str:
    return "no value" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _truth_text(value: Any) -> str:
    return "unknown" if pd.isna(value) else str(bool(value)).lower()


def _tool(node: Term) -> dict[str, Any]:
    """The step's action: which tool computed the term, with its parameters."""
    if isinstance(node, Lookback):
        inner = _tool(node.term)
        return {"name": inner["name"], "params": {**inner["params"], "bars_ago": node.bars}}
    if isinstance(node, Field):
        return {"name": "price", "params": {"field": node.name}}
    if isinstance(node, Indicator):
        names = [p.name for p in _SPECS[node.name].params]
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
        for node in _steps_of(condition):
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
                add(f"{text} on {when_text} = {_shown(value)}", _tool(node), {text: value})
        holds = bool(now[f"{side}_condition"])
        add(f"{side} when {condition.describe()} → {str(holds).lower()}",
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
            value += f" (previous bar {_shown(previous)})"
        shown.append(value)
    truth = now[test.describe()]
    tail = " (warming up)" if pd.isna(truth) else ""
    return f"{', '.join(shown)} → {test.describe()} {_truth_text(truth)}{tail}"
