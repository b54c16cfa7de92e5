"""Built-in factors: code bodies that need no LLM. Each body reads wide frames (dates x codes) named after
their fields and returns one dates x codes frame; a combination z-scores its parts per date and adds them."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tools.i18n import N_, _
from tools.sandbox.policy import parse_untrusted


@dataclass(frozen=True)
class LibraryFactor:
    name: str
    description: str  # a message id (N_), `{w}` = the window: the spec stores it in the requester's language
    fields: tuple[str, ...]
    window: int | None  # default look-back in trading days; None when the factor has none
    expression: str  # a pandas expression over the fields, `{w}` = the window

    def body(self, window: int | None) -> str:
        return f"return {self.expression.format(w=window or self.window)}\n"

    def lookback(self, window: int | None) -> int:
        return int(window or self.window or 0)


FACTORS: dict[str, LibraryFactor] = {f.name: f for f in (
    LibraryFactor("momentum", N_("return over the last {w} trading days"), ("close",), 20,
                  "close / close.shift({w}) - 1"),
    LibraryFactor("reversal", N_("minus the return over the last {w} trading days (short-term reversal)"),
                  ("close",), 5, "-(close / close.shift({w}) - 1)"),
    LibraryFactor("volatility", N_("standard deviation of daily returns over {w} trading days"), ("close",), 20,
                  "close.pct_change(fill_method=None).rolling({w}).std()"),
    LibraryFactor("turnover", N_("mean turnover rate (%) over {w} trading days"), ("turnover_rate",), 20,
                  "turnover_rate.rolling({w}).mean()"),
    LibraryFactor("volume_price_corr", N_("correlation of daily returns and volume changes over {w} trading days"),
                  ("close", "vol"), 20,
                  "close.pct_change(fill_method=None).rolling({w}).corr(vol.pct_change(fill_method=None))"),
    LibraryFactor("value", N_("earnings yield 1 / PE (TTM); loss-makers (PE <= 0) are missing"), ("pe_ttm",), None,
                  "(1.0 / pe_ttm).where(pe_ttm > 0)"),
    LibraryFactor("book_to_price", N_("book-to-price 1 / PB; negative book values are missing"), ("pb",), None,
                  "(1.0 / pb).where(pb > 0)"),
    LibraryFactor("size", N_("minus the log of total market value (small caps score high)"), ("total_mv",), None,
                  "-np.log(total_mv.where(total_mv > 0))"),
)}
ALIASES = {"mom": "momentum", "rev": "reversal", "vol": "volatility", "turn": "turnover", "vpc": "volume_price_corr",
           "ep": "value", "bp": "book_to_price", "mv": "size"}


class CombinationError(ValueError):
    """A combination expression that is not a weighted sum of library factors."""


def find_factor(word: str) -> LibraryFactor | None:
    word = word.lower()
    return FACTORS.get(ALIASES.get(word, word))


def combination_parts(expression: str) -> list[tuple[float, LibraryFactor, int | None]]:
    """Parse `0.5*momentum(20) - volatility(20) + reversal` into (weight, factor, window) terms."""
    try:
        tree = parse_untrusted(expression, mode="eval").body
    except SyntaxError:
        raise CombinationError(_("cannot read the combination {expression}").format(expression=repr(expression))
                               ) from None
    terms: list[tuple[float, LibraryFactor, int | None]] = []

    def term(node: ast.AST, sign: float) -> None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            term(node.left, sign)
            term(node.right, sign if isinstance(node.op, ast.Add) else -sign)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            term(node.operand, -sign)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, int | float):
            term(node.right, sign * float(node.left.value))
        else:
            terms.append((sign, *_factor_call(node)))

    try:
        term(tree, 1.0)
    except RecursionError:
        raise CombinationError(_("the combination {expression} is nested too deeply").format(
            expression=repr(expression[:40]))) from None
    if len(terms) < 2:
        raise CombinationError(_("a combination needs at least two library factors, e.g. momentum(20) - "
                                 "volatility(20)"))
    return terms


def _factor_call(node: ast.AST) -> tuple[LibraryFactor, int | None]:
    name, window = None, None
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) <= 1 and not node.keywords:
        name = node.func.id
        if node.args:
            arg = node.args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, int) and 1 <= arg.value <= 500):
                raise CombinationError(_("the window of {name} must be a whole number of days between 1 and "
                                         "500").format(name=name))
            window = arg.value
    factor = find_factor(name) if name else None
    if factor is None:
        raise CombinationError(_("{term!r} is not a library factor; known: {known}").format(
            term=ast.unparse(node), known=", ".join(FACTORS)))
    return factor, window


def combination_body(terms: list[tuple[float, LibraryFactor, int | None]]) -> str:
    """A body that z-scores each part across codes per date and adds them with their weights."""
    lines = ["def zscore(frame):",
             "    return frame.sub(frame.mean(axis=1), axis=0).div(frame.std(axis=1), axis=0)",
             ""]
    parts = []
    for i, (weight, factor, window) in enumerate(terms):
        lines.append(f"part{i} = zscore({factor.expression.format(w=window or factor.window)})")
        parts.append(f"{weight:g} * part{i}")
    lines.append("return " + " + ".join(parts).replace("+ -", "- "))
    return "\n".join(lines) + "\n"


def combination_fields(terms: list[tuple[float, LibraryFactor, int | None]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for _, factor, _ in terms for f in factor.fields))


def combination_lookback(terms: list[tuple[float, LibraryFactor, int | None]]) -> int:
    return max(factor.lookback(window) for _, factor, window in terms)
