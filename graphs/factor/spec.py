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

_CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$", re.IGNORECASE)
_DATE = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2})$")
_PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


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

    def merge(self, other: FactorRequest) -> FactorRequest:
        return replace(self, kind=other.kind or self.kind, expression=other.expression or self.expression,
                       codes=other.codes or self.codes, start=other.start or self.start, end=other.end or self.end,
                       params={**self.params, **other.params})

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "expression": self.expression, "codes": list(self.codes), "start": self.start,
                "end": self.end, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FactorRequest:
        return cls(data.get("kind"), data.get("expression"), tuple(data.get("codes") or ()), data.get("start"),
                   data.get("end"), dict(data.get("params") or {}))


def _tokens(text: str) -> list[str]:
    tokens = [t for t in re.split(r"[\s,，]+", text.strip()) if t]
    if tokens and tokens[0].lower() in ("factor", "/factor"):
        tokens = tokens[1:]
    return tokens


def parse(text: str) -> FactorRequest:
    """Whatever pieces of the grammar `text` holds."""
    kind, codes, dates, params, rest = None, [], [], {}, []
    for token in _tokens(text):
        if _CODE.match(token):
            if token.upper() not in codes:
                codes.append(token.upper())
        elif _DATE.match(token):
            dates.append(token.replace("-", ""))
        elif match := _PARAM.match(token):
            params[match.group(1).lower()] = match.group(2)
        elif kind is None and token.lower() in ("combo", "combination"):
            kind = "combo"
        elif kind is None and find_factor(token) is not None:
            kind = find_factor(token).name  # type: ignore[union-attr]
        else:
            rest.append(token)
    expression = " ".join(rest) if kind == "combo" and rest else None
    return FactorRequest(kind, expression, tuple(codes), dates[0] if dates else None,
                         dates[1] if len(dates) > 1 else None, params)


def looks_structured(text: str) -> bool:
    """The grammar rather than prose: starts with a library factor or `combo`, or is only codes/dates/params."""
    tokens = _tokens(text)
    if tokens and (tokens[0].lower() in ("combo", "combination") or find_factor(tokens[0]) is not None):
        return True
    request = parse(text)
    known = len(request.codes) + (request.start is not None) + (request.end is not None) + len(request.params)
    leftovers = [t for t in tokens if not (_CODE.match(t) or _DATE.match(t) or _PARAM.match(t))]
    return known >= 1 and len(leftovers) <= 1


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
        raise SpecError(f"unknown parameter {', '.join(sorted(params))}; factors take window=N and name=NAME")
    try:
        window_days = int(window) if window is not None else None
    except ValueError:
        raise SpecError(f"window={window} is not a whole number of days") from None
    if window_days is not None and not 1 <= window_days <= 500:
        raise SpecError("window must be between 1 and 500 trading days")
    if request.start and request.end and request.start > request.end:
        raise SpecError(f"the start date {request.start} is after the end date {request.end}")
    if request.kind == "combo":
        if not request.expression:
            raise SpecError("say which factors to combine, e.g. `factor combo 0.5*momentum(20) - volatility(20) ...`")
        try:
            terms = combination_parts(request.expression)
        except CombinationError as exc:
            raise SpecError(str(exc)) from None
        fields, lookback, body = combination_fields(terms), combination_lookback(terms), combination_body(terms)
        description = f"z-scored combination: {request.expression}"
        default_name = "combo_" + "_".join(f"{f.name}{w or f.window or ''}" for _, f, w in terms)
    else:
        factor = FACTORS[request.kind or ""]
        fields, lookback, body = factor.fields, factor.lookback(window_days), factor.body(window_days)
        description = factor.description.format(w=window_days or factor.window)
        default_name = factor.name + (f"_{window_days or factor.window}" if factor.window else "")
    name = (name or default_name).lower()[:64]
    if not _NAME.match(name):
        raise SpecError(f"factor name {name!r}: use lower-case letters, digits and _ (starting with a letter)")
    return {"name": name, "description": description, "fields": list(fields), "lookback": lookback,
            "frequency": "daily", "codes": list(request.codes), "start": request.start, "end": request.end,
            "library": request.kind, "body": body}


def library_names() -> list[str]:
    return [*FACTORS, "combo"]
