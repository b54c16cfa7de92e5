"""The rule language's tokenizer and recursive-descent parser (the grammar is in syntax.py's docstring): text
in, a syntax tree out, or a RuleSyntaxError that points at the offending place. Nothing is ever handed to Python."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, NoReturn

from tools.rules.syntax import (
    COMPARISONS,
    CONDITIONS,
    FIELDS,
    INDICATORS,
    KEYWORDS,
    MAX_LOOKBACK,
    TERMS,
    And,
    Arith,
    Compare,
    Condition,
    Cross,
    Field,
    Indicator,
    Lookback,
    Neg,
    Node,
    Not,
    Number,
    Or,
    Rule,
    RuleSyntaxError,
    Spec,
    signature,
)


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
        if not isinstance(span.node, CONDITIONS):
            self.fail(self.peek(), f"expected a comparison operator after '{self.source(span)}'")
        return span

    def value(self, span: _Span) -> _Span:
        """`span`, which must be a value (compared or computed with), not a condition."""
        if not isinstance(span.node, TERMS):
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
        spec = INDICATORS.get(name)
        if spec is None:
            known = ", ".join(INDICATORS)
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

    def params(self, name: _Token, spec: Spec) -> tuple[tuple[int | Decimal, ...], int]:
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
            self.fail(given[count], f"{signature(name.text)} takes {count} parameter{'s' if count > 1 else ''}, "
                                    f"got {len(given)}")
        values: list[int | Decimal] = []
        for i, param in enumerate(spec.params):
            if i >= len(given):
                if param.default is None:
                    self.fail(name, f"{name.text} needs its {param.name} parameter, as in {signature(name.text)}")
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
