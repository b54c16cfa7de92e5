"""The rule language's tokenizer and recursive-descent parser (the grammar is in syntax.py's docstring): text
in, a syntax tree out, or a RuleSyntaxError that points at the offending place. Nothing is ever handed to Python."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, NoReturn

from tools.i18n import N_, _, ngettext
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
# a Chinese input method's full-width forms (＞＝（），０-９, ideographic space) read as their ASCII ones, one
# character for one, so a refusal's column still points into the rule as typed
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_HINTS = {"=": N_(" (compare with '==')"), "&": N_(" (use 'and')"), "|": N_(" (use 'or')"), "!": N_(" (use 'not')")}


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
        self.tokens = _tokens(text.translate(_FULL_WIDTH))
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
            hint = _(_HINTS[where.text]) if where.text in _HINTS else ""
            problem = _("unexpected character {character}{hint}").format(character=repr(where.text), hint=hint)
        raise RuleSyntaxError(self.text, where.start if isinstance(where, _Token) else where, problem)

    def source(self, span: _Span) -> str:
        return self.text[span.start:span.end]

    # --- rule and conditions

    def rule(self) -> Rule:
        clauses: dict[str, Condition] = {}
        while True:
            head = self.peek()
            if not (head.kind == "name" and head.text in ("buy", "sell")):
                self.fail(head, _("expected 'buy when' or 'sell when'"))
            if head.text in clauses:
                self.fail(head, _("a rule has at most one {word} clause").format(word=head.text))
            self.take()
            if not self.at("when"):
                self.fail(self.peek(), _("expected 'when' after '{word}'").format(word=head.text))
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
                self.fail(self.peek(), _("expected 'and', 'or', ';' or the end of the rule after '{text}'").format(
                    text=self.source(body)))
        return Rule(clauses.get("buy"), clauses.get("sell"))

    def condition(self, span: _Span) -> _Span:
        """`span`, which must be a condition: a value there lacks its comparison, refused at the next token."""
        if not isinstance(span.node, CONDITIONS):
            self.fail(self.peek(), _("expected a comparison operator after '{text}'").format(text=self.source(span)))
        return span

    def value(self, span: _Span) -> _Span:
        """`span`, which must be a value (compared or computed with), not a condition."""
        if not isinstance(span.node, TERMS):
            self.fail(span.start, _("expected a value, not the condition '{text}'").format(text=self.source(span)))
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
                self.fail(direction, _("expected 'above' or 'below' after 'crosses'"))
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
                self.fail(self.peek(), _("expected ')' to close the '(' of column {column}").format(
                    column=token.start + 1))
            close = self.take()
            return _Span(inner.node, token.start, close.end)
        if token.kind == "name" and token.text not in KEYWORDS:
            return self.lookback(self.series())
        self.fail(token, _("expected a number, a price field or an indicator"))

    def series(self) -> _Span:
        token = self.take()
        name = token.text
        if name in FIELDS:
            if self.at("("):
                self.fail(self.peek(), _("{name} is a price field and takes no parameters").format(name=name))
            return _Span(Field(name), token.start, token.end)
        spec = INDICATORS.get(name)
        if spec is None:
            known = ", ".join(INDICATORS)
            if self.at("("):
                self.fail(token, _("unknown indicator '{name}'; known indicators: {known}").format(
                    name=name, known=known))
            self.fail(token, _("unknown name '{name}'; expected a price field ({fields}), an indicator ({known}) or a "
                               "number").format(name=name, fields=", ".join(FIELDS), known=known))
        params, end = self.params(token, spec)
        output = None
        if spec.outputs:
            lines = [f"{name}.{o}" for o in spec.outputs]
            if not self.at("."):
                self.fail(self.peek(), _("{name} has several lines: use {lines} or {last}").format(
                    name=name, lines=", ".join(lines[:-1]), last=lines[-1]))
            self.take()
            line = self.peek()
            if line.kind != "name" or line.text not in spec.outputs:
                self.fail(line, _("{name} has no line '{line}': use {lines} or {last}").format(
                    name=name, line=line.text, lines=", ".join(lines[:-1]), last=lines[-1]))
            output, end = self.take().text, line.end
        elif self.at("."):
            self.fail(self.peek(), _("{name} has a single line: nothing may follow it after '.'").format(name=name))
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
                    self.fail(number, _("expected a number as a parameter of {name}").format(name=name.text))
                given.append(self.take())
                if not self.at(","):
                    break
                self.take()
            if not self.at(")"):
                self.fail(self.peek(), _("expected ',' or ')' in the parameters of {name}").format(name=name.text))
            end = self.take().end
        if len(given) > len(spec.params):
            count = len(spec.params)
            self.fail(given[count], ngettext("{signature} takes {count} parameter, got {given}",
                                             "{signature} takes {count} parameters, got {given}", count).format(
                signature=signature(name.text), count=count, given=len(given)))
        values: list[int | Decimal] = []
        for i, param in enumerate(spec.params):
            if i >= len(given):
                if param.default is None:
                    self.fail(name, _("{name} needs its {param} parameter, as in {signature}").format(
                        name=name.text, param=param.name, signature=signature(name.text)))
                values.append(param.default)
                continue
            number = Decimal(given[i].text)
            if not param.low <= number <= param.high or (param.whole and number != number.to_integral_value()):
                self.fail(given[i], _("{name}'s {param} must be {allowed}, got {given}").format(
                    name=name.text, param=param.name, allowed=param.allowed(), given=given[i].text))
            values.append(int(number) if param.whole else number)
        if name.text == "macd" and values[0] >= values[1]:
            self.fail(name, _("macd's fast period ({fast}) must be shorter than its slow period ({slow})").format(
                fast=values[0], slow=values[1]))
        return tuple(values), end

    def lookback(self, span: _Span) -> _Span:
        if not self.at("["):
            return span
        self.take()
        count = self.peek()
        if count.kind != "number" or "." in count.text or not 1 <= int(count.text) <= MAX_LOOKBACK:
            self.fail(count, _("expected a whole number of bars from 1 to {most} inside '[...]'").format(
                most=MAX_LOOKBACK))
        self.take()
        if not self.at("]"):
            self.fail(self.peek(), _("expected ']' after the number of bars"))
        close = self.take()
        return _Span(Lookback(span.node, int(count.text)), span.start, close.end)


def parse_rule(text: str) -> Rule:
    """Parse a rule; a `RuleSyntaxError` points at the column of the first problem."""
    return _Parser(text).rule()
