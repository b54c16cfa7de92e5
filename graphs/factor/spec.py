"""The factor request grammar, parsed without an LLM:

    factor KIND [CODES] START END [window=N] [name=NAME]
    factor combo 0.5*momentum(20) - volatility(20) [CODES] START END [name=NAME]

KIND is a library factor (momentum, reversal, volatility, turnover, volume_price_corr, value, book_to_price,
size). CODES default to the data provider's whole universe when it has one. Pieces may arrive one at a time
(answers to clarify questions) and are merged into what is known."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from graphs.factor.library import (
    FACTORS,
    CombinationError,
    combination_body,
    combination_fields,
    combination_lookback,
    combination_parts,
    find_factor,
)
from graphs.grammar import Words, split, tokenize
from graphs.grammar import starts_request as new_request
from tools.data.schema import DataError, check_range
from tools.i18n import _

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PARAMS = ("window", "n", "name")  # n: window's short form


class SpecError(ValueError):
    """A request that cannot become a factor spec; the message says what to change."""


@dataclass(frozen=True)
class FactorRequest:
    kind: str | None = None  # library name or "combo"
    expression: str | None = None  # combo only
    codes: tuple[str, ...] = ()
    start: str | None = None
    end: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    bad_codes: tuple[str, ...] = ()
    unknown_words: tuple[str, ...] = ()  # words the grammar did not use (a combo's words are its expression)

    def merge(self, other: FactorRequest) -> FactorRequest:
        return replace(self, kind=other.kind or self.kind, expression=other.expression or self.expression,
                       codes=other.codes or self.codes, start=other.start or self.start, end=other.end or self.end,
                       params={**self.params, **other.params}, bad_codes=other.bad_codes,
                       unknown_words=other.unknown_words)

    def unused(self) -> list[str]:
        """What the user typed that this request would not use: unknown words and parameters."""
        return [*self.unknown_words, *(f"{k}={v}" for k, v in self.params.items() if k not in PARAMS)]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "expression": self.expression, "codes": list(self.codes), "start": self.start,
                "end": self.end, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FactorRequest:
        return cls(data.get("kind"), data.get("expression"), tuple(data.get("codes") or ()), data.get("start"),
                   data.get("end"), dict(data.get("params") or {}))


# Chinese names of the library's factors and of the request's parameters
SAVE_USAGE = "factor save NAME REASON"
STATUS_USAGE = "factor status [NAME]"

WORDS = Words(
    commands={"因子": "factor", "组合": "combo", "评估": "evaluate", "检验": "evaluate", "入库": "save"},
    params={"窗口": "window", "周期": "window", "名称": "name", "名字": "name"},
    names={"动量": "momentum", "反转": "reversal", "波动率": "volatility", "换手率": "turnover",
           "量价相关": "volume_price_corr", "量价相关性": "volume_price_corr", "价值": "value", "盈利收益率": "value",
           "市盈率倒数": "value", "账面市值比": "book_to_price", "市净率倒数": "book_to_price", "市值": "size",
           "规模": "size", "小市值": "size"},
)
VERBS = ("backtest", "evaluate")  # words a factor request may say that change nothing: every factor is evaluated


def parse(text: str) -> FactorRequest:
    """Whatever pieces of the grammar `text` holds."""
    tokens = tokenize(text, "factor")
    kind, rest = None, []
    for word in tokens.words:
        if word.lower() in VERBS and kind != "combo":
            continue
        if kind is None and word.lower() in ("combo", "combination"):
            kind = "combo"
        elif kind is None and (found := find_factor(word)) is not None:
            kind = found.name
        else:
            rest.append(word)
    expression = " ".join(rest) if kind == "combo" and rest else None
    dates = tokens.dates
    return FactorRequest(kind, expression, tokens.codes, dates[0] if dates else None,
                         dates[1] if len(dates) > 1 else None, tokens.params, tokens.bad_codes,
                         () if kind == "combo" else tuple(rest))


def looks_structured(text: str) -> bool:
    """The grammar rather than prose: starts with a library factor or `combo`, or is only codes/dates/params."""
    words = split(text, "factor")
    if words and (words[0].lower() in ("combo", "combination") or find_factor(words[0]) is not None):
        return True
    tokens = tokenize(text, "factor")
    return tokens.known + len(tokens.bad_codes) >= 1 and len(tokens.words) <= 1


def missing(request: FactorRequest, has_universe: bool) -> list[str]:
    out = []
    if not request.kind:
        out.append("factor")
    if not request.start or not request.end:
        out.append("dates")
    if not request.codes and not has_universe:
        out.append("codes")
    return out


def build_spec(request: FactorRequest) -> dict[str, Any]:
    """The spec the rest of the graph works from: name, description, fields, lookback, body (library)."""
    params = dict(request.params)
    name = params.pop("name", None)
    window = params.pop("window", None) or params.pop("n", None)
    if params:
        raise SpecError(_("unknown parameter {names}; factors take window=N and name=NAME").format(
            names=", ".join(sorted(params))))
    try:
        window_days = int(window) if window is not None else None
    except ValueError:
        raise SpecError(_("window={window} is not a whole number of days").format(window=window)) from None
    if window_days is not None and not 1 <= window_days <= 500:
        raise SpecError(_("window must be between 1 and 500 trading days"))
    if request.start and request.end:
        try:
            check_range(request.start, request.end)
        except DataError as exc:
            raise SpecError(str(exc)) from None
    if request.kind == "combo":
        if not request.expression:
            raise SpecError(_("say which factors to combine, e.g. `factor combo 0.5*momentum(20) - volatility(20) "
                              "...`"))
        try:
            terms = combination_parts(request.expression)
        except CombinationError as exc:
            raise SpecError(str(exc)) from None
        fields, lookback, body = combination_fields(terms), combination_lookback(terms), combination_body(terms)
        description = _("z-scored combination: {expression}").format(expression=request.expression)
        default_name = "combo_" + "_".join(f"{f.name}{w or f.window or ''}" for _weight, f, w in terms)
    else:
        factor = FACTORS[request.kind or ""]
        fields, lookback, body = factor.fields, factor.lookback(window_days), factor.body(window_days)
        description = _(factor.description).format(w=window_days or factor.window)
        default_name = factor.name + (f"_{window_days or factor.window}" if factor.window else "")
    name = check_name((name or default_name).lower()[:64])
    return {"name": name, "description": description, "fields": list(fields), "lookback": lookback,
            "frequency": "daily", "codes": list(request.codes), "start": request.start, "end": request.end,
            "library": request.kind, "body": body}


def check_name(name: str) -> str:
    """`name` when it can name a factor in the library, else a SpecError saying how to write one."""
    if not _NAME.match(name):
        raise SpecError(_("factor name {name!r}: use lower-case letters, digits and _ (starting with a letter, at "
                          "most 64 characters)").format(name=name))
    return name


def library_names() -> list[str]:
    return [*FACTORS, "combo"]


def starts_request(text: str) -> bool:
    """A new factor request rather than a follow-up or an answer (see graphs.grammar.starts_request)."""
    return new_request(text, "factor",
                       lambda word: word.lower() in ("combo", "combination") or find_factor(word) is not None, VERBS)
