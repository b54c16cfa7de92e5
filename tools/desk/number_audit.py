"""The number audit: every figure an analyst or judge writes must come from that agent's tool outputs. It extracts
the figures in a text, finds the numbers in the tool outputs, and flags each figure no tool number matches. The
model never does arithmetic on prices, so a derived figure (a difference, a ratio) that no tool returned is flagged.

What is a figure. Numbers are read after full-width forms are folded to ASCII (`１２．５％` is `12.5%`; the Chinese
comma `，` stays a separator, never a thousands mark): `1,234.56`, signed `-3.2%` / `+0.8%`, with a unit `%`,
`万` `亿` `万亿` `百万` `千万`, `million` `billion` `trillion`, a multiple `2.5x` / `2.5倍`; `元` and other words after
a number are not part of it (`12.5 元` is 12.5). A number glued to a Latin letter is part of a name (`MA20`,
`Q3`, `H1`, `SH600519`) and is no figure. These are never audited:

- stock codes: `600519.SH`, `00700.HK`, any bare six-digit integer, integers written with a leading zero;
- dates and times: `2022-12-20`, `2022/12/20`, `20221220`, `2022年12月20日`, `12月20日`, `Dec 20`, `14:57`, and a
  bare integer from 1900 to 2099 read as a year (`2022`, `Q3 2022`, `2022Q3`) unless a currency sign comes
  before it or `元` / `yuan` / `RMB` / `CNY` after it;
- indicator parameters and windows: `MA(20)`, `EMA 12`, `RSI(14)`, `MACD(12,26,9)`, `BOLL(20, 2)`, `KDJ(9,3,3)`,
  `20-day`, `20日均线`, `5日`, `past 30 days`, `last 3 rounds`, `15min`. An integer after an indicator name and a
  space is read as its period, so `RSI 48` is not audited (`RSI 48.27` and `RSI为48` are);
- list markers and ordinals: `1.` / `2)` / `(3)` opening a line, `第3`, `#2`, `3rd`;
- counts: a bare integer from 0 to 10 (no sign, unit or decimals);
- a figure without a unit equal to one of `declared` (the caller's parameters: depth, rounds, limits, periods).

How a figure matches a tool number b. Let v be the figure as written (signed) and c the tool number in the
figure's unit. They match when |v - c| <= rel_tol * |c|, or when c rounded to the decimals v is written with
equals v (`1715`, `1715.0` and `1,715.00` all match 1715.004; `31.2` matches 31.2456). The candidates c are:

- `%` figures: b (tushare rates are already in percent) and b * 100 (a fraction): `12.5%` matches 12.5 and 0.125;
- figures with a magnitude unit: b in yuan or shares, in 千 (tushare `amount` is in 千元), in 万 (tushare
  `total_mv` / `circ_mv` are in 万元) and in 亿, each converted to the figure's unit: `3.4万` matches 34000 and
  3.4 (in 万), `1.2亿` matches 120000000 and 12000 (in 万), `2.15万亿` matches 215432567.8 (in 万);
- any other figure (no unit, or a multiple): b as it is.

Sign: `-3.2%` matches -3.2 or -0.032 and never 3.2. A figure written without a sign next to a falling word
(fell, dropped, declined, down, lower, 跌, 下降, 回落, 下滑, 减少, 亏损, ... in its clause) matches the negated
tool number too, so `fell 3.2%` and `下跌3.2%` match -3.2; `rose 3.2%` does not.

Tool numbers: JSON-ish structures are walked (mapping values, sequence items, numbers; booleans, None and NaN
skipped) and text is read with the same figure reader without the skips above; magnitude units are applied
(`3.4万` is 34000) and percentages kept as written (`1.23%` is 1.23).
"""

from __future__ import annotations

import math
import numbers
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal

from tools.i18n import _, ngettext

# full-width ASCII forms, the ideographic space and the minus sign, folded one character to one (spans survive);
# the Chinese comma U+FF0C is left alone so it never reads as a thousands separator
_FOLD = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F) if code != 0xFF0C} | {0x3000: 0x20, 0x2212: 0x2D}

_NUMBER = re.compile(
    r"(?:(?<![A-Za-z0-9_.)\]])(?P<sign>[+-]))?(?<![A-Za-z0-9_.])"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
    r"(?P<unit>\s*(?:万亿|千万|百万|亿|万|%|倍|percent\b|pct\b)|[x×](?![A-Za-z])|\s+(?:trillion|billion|million|tn|bn|mn)\b)?",
    re.IGNORECASE,
)
_UNITS = {"percent": "%", "pct": "%", "倍": "x", "×": "x", "tn": "trillion", "bn": "billion", "mn": "million"}
SCALES = {"万": 1e4, "亿": 1e8, "万亿": 1e12, "百万": 1e6, "千万": 1e7, "million": 1e6, "billion": 1e9,
          "trillion": 1e12}
SOURCE_SCALES = (1.0, 1e3, 1e4, 1e8)  # a tool number in yuan/shares, 千, 万 or 亿

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![A-Za-z])\.?")
_INDICATOR = r"(?:MA|EMA|SMA|WMA|RSI|KDJ|BOLL|MACD|ATR|CCI|ROC|MOM|ADX|DMI|WR|BIAS|TRIX|SAR|DMA)"
_PARAM = r"\d+(?:\.\d+)?"
# an unbracketed number after an indicator name is its period only when it is a usual one: `MA 20`, `RSI 14`;
# `MA 1800` or `RSI 72` are readings and are audited
_PERIOD = r"(?:3|5|6|9|10|12|14|20|24|26|30|60|120|250)"
_SKIPPED = re.compile("|".join((
    r"(?<![\d.])(?:19|20)\d{2}([-/.])\d{1,2}\1\d{1,2}(?![\d.])",  # 2022-12-20, 2022/12/20, 2022.12.20
    r"(?<![\d.])(?:19|20)\d{2}[-/]\d{1,2}(?![\d.])",  # 2022-12
    rf"(?<![A-Za-z]){_MONTH}\s*\d{{1,2}}(?:st|nd|rd|th)?(?![\d.])",  # Dec 20, December 20th
    rf"(?<![\d.])\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}",  # 20 Dec
    r"(?<![A-Za-z0-9_.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d.])",  # 14:57, 09:30:00
    r"(?<![\d.])\d{5,6}\.(?:SH|SZ|BJ|HK|SS)(?![A-Za-z])",  # 600519.SH
    rf"(?<![A-Za-z]){_INDICATOR}\s*(?:\(\s*{_PARAM}(?:\s*[,，/]\s*{_PARAM})*\s*\)|{_PERIOD}(?:[,/]\d{{1,3}})*"
    r"(?![\d.%万亿倍]))",
    r"(?<![\d.])\d+\s*个?(?:交易日|日|号|天|周|星期|月|年|分钟|小时|根|轮|期)",  # 2022年12月20日, 20日均线, 3个月
    r"(?<![\d.])\d+(?:\s*-\s*|\s+)(?:trading[\s-]+)?(?:days?|weeks?|months?|years?|bars?|candles?|sessions?|periods?|"
    r"rounds?|minutes?|mins?|hours?|quarters?)(?![A-Za-z])",  # 20-day, past 30 days, last 3 rounds
    r"(?<![\d.])\d+(?:d|w|m|h|y|min)(?![A-Za-z])",  # 20d, 15min
    r"^[ \t]*(?:[-*+>][ \t]*)?(?:\*\*)?(?:\(\d{1,3}\)|\d{1,3}[.)、](?!\d))",  # list markers opening a line
    r"第\s*\d+|#\d+|(?<![\d.])\d+(?:st|nd|rd|th)(?![A-Za-z])",  # ordinals
)), re.IGNORECASE | re.MULTILINE)
_CURRENCY_BEFORE = re.compile(r"[¥$￥]\s*$")
_CURRENCY_AFTER = re.compile(r"\s*(?:元|块|yuan|rmb|cny)", re.IGNORECASE)
_FALLING = re.compile(r"(?<![A-Za-z])(?:fell|falls?|falling|drop(?:s|ped|ping)?|declin(?:e|es|ed|ing)|down|lower|"
                      r"lost|loss|slid|slump(?:s|ed)?)(?![A-Za-z])|跌|下降|回落|下滑|减少|降低|亏损", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;，。；！？!?\n]")
_CONTEXT = 16  # characters read either side of a figure for a falling word

ToolOutput = str | Mapping[object, object] | Iterable[object] | float | None


@dataclass(frozen=True)
class Figure:
    """A number as written in a text: `text` is its span `text[start:end]` (sign and unit included), `value` the
    signed number in its own `unit` ("" | "%" | "x" | "万" | "亿" | "万亿" | "million" | ...), `decimals` the
    places it is written to, `falls` whether it is unsigned next to a falling word (fell, 下跌, ...)."""

    text: str
    value: float
    unit: str
    decimals: int
    start: int
    end: int
    falls: bool = False


@dataclass(frozen=True)
class AuditResult:
    """The figures a text was checked for, those no tool number matched, and the tolerance as a sentence."""

    checked: list[Figure]
    flagged: list[Figure]
    tolerance: str

    @property
    def ok(self) -> bool:
        """Whether every checked figure matched a tool number."""
        return not self.flagged


def _read(text: str) -> Iterator[tuple[re.Match[str], Figure]]:
    """Every number in `text` (folded) with the figure it makes, skips not applied."""
    folded = text.translate(_FOLD)
    matches = list(_NUMBER.finditer(folded))
    for i, match in enumerate(matches):
        num, sign, unit = match["num"].replace(",", ""), match["sign"] or "", (match["unit"] or "").strip().lower()
        value = float(sign + num)
        falls = False
        if not sign:
            before = folded[max(matches[i - 1].end() if i else 0, match.start() - _CONTEXT):match.start()]
            after = folded[match.end():min(matches[i + 1].start() if i + 1 < len(matches) else len(folded),
                                           match.end() + _CONTEXT)]
            clause = _CLAUSE_END.split(before)[-1] + " " + _CLAUSE_END.split(after)[0]
            falls = _FALLING.search(clause) is not None
        yield match, Figure(text=text[match.start():match.end()], value=value, unit=_UNITS.get(unit, unit),
                            decimals=max(0, -int(Decimal(num).as_tuple().exponent)), start=match.start(),
                            end=match.end(), falls=falls)


def _is_plain_skip(match: re.Match[str], figure: Figure, declared: tuple[float, ...]) -> bool:
    """Whether a figure is a code, a date, a year, a count or a declared parameter by its own digits."""
    if figure.unit == "" and any(math.isclose(figure.value, d, rel_tol=1e-9, abs_tol=1e-12) for d in declared):
        return True
    if match["sign"] or match["unit"] or not match["num"].isdigit():
        return False
    digits, folded = match["num"], match.string
    if len(digits) == 6 or (len(digits) > 1 and digits[0] == "0") or int(digits) <= 10:
        return True
    if len(digits) == 8:
        year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
        return 1900 <= year <= 2099 and 1 <= month <= 12 and 1 <= day <= 31
    return (len(digits) == 4 and 1900 <= int(digits) <= 2099
            and not _CURRENCY_BEFORE.search(folded[:match.start()])
            and not _CURRENCY_AFTER.match(folded, match.end()))


def extract_figures(text: str, *, declared: Iterable[float] = ()) -> list[Figure]:
    """The figures in `text` to audit, in order: codes, dates, parameters, markers, counts and the `declared`
    numbers skipped (see the module docstring)."""
    params = tuple(float(d) for d in declared)
    masked = [False] * len(text)
    for span in _SKIPPED.finditer(text.translate(_FOLD)):
        masked[span.start():span.end()] = [True] * (span.end() - span.start())
    return [figure for match, figure in _read(text)
            if not any(masked[match.start("num"):match.end("num")]) and not _is_plain_skip(match, figure, params)]


def _numbers(output: object) -> Iterator[float]:
    if output is None or isinstance(output, bool):
        return
    if isinstance(output, str):
        for _, figure in _read(output):
            yield figure.value * SCALES.get(figure.unit, 1.0)
    elif isinstance(output, numbers.Real):
        if math.isfinite(output):
            yield float(output)
    elif isinstance(output, Mapping):
        for value in output.values():
            yield from _numbers(value)
    elif isinstance(output, Iterable) and not isinstance(output, bytes | bytearray):
        for item in output:
            yield from _numbers(item)
    else:
        yield from _numbers(str(output))


def tool_numbers(outputs: ToolOutput) -> list[float]:
    """Every number in tool outputs: mappings and sequences walked, text read without skips, other objects read as
    their `str()`."""
    return list(_numbers(outputs))


def _window(figure: Figure, rel_tol: float) -> tuple[float, float]:
    """The values c (in the figure's unit) that `figure` matches: within rel_tol of c, or c rounds to it."""
    v = figure.value
    half = 0.5 * 10.0 ** -figure.decimals + 1e-9 * abs(v)
    lo, hi = v - half, v + half
    if v > 0:
        return min(lo, v / (1 + rel_tol)), max(hi, v / (1 - rel_tol))
    if v < 0:
        return min(lo, v / (1 - rel_tol)), max(hi, v / (1 + rel_tol))
    return lo, hi


def _factors(unit: str) -> tuple[float, ...]:
    """The factors f turning a tool number b into the figure's unit, c = b * f."""
    if unit == "%":
        return 1.0, 100.0
    if unit in SCALES:
        return tuple(scale / SCALES[unit] for scale in SOURCE_SCALES)
    return (1.0,)


def _matches(figure: Figure, ordered: list[float], rel_tol: float) -> bool:
    lo, hi = _window(figure, rel_tol)
    for factor in _factors(figure.unit):
        for f in (factor, -factor) if figure.falls else (factor,):
            low, high = sorted((lo / f, hi / f))
            i = bisect_left(ordered, low)
            if i < len(ordered) and ordered[i] <= high:
                return True
    return False


def audit(text: str, tool_outputs: ToolOutput, *, rel_tol: float = 0.005,
          declared: Iterable[float] = ()) -> AuditResult:
    """Check every figure in `text` against the numbers in `tool_outputs` (rules in the module docstring)."""
    if not 0 <= rel_tol < 1:
        raise ValueError(f"rel_tol must be from 0 to below 1, not {rel_tol}")
    checked = extract_figures(text, declared=declared)
    ordered = sorted(tool_numbers(tool_outputs))
    flagged = [figure for figure in checked if not _matches(figure, ordered, rel_tol)]
    tolerance = (f"a figure matches a tool output within {rel_tol * 100:g}% relative, "
                 "or to the precision it is written at")
    return AuditResult(checked=checked, flagged=flagged, tolerance=tolerance)


def flag_text(result: AuditResult) -> str:
    """One line for a report or card: the figures not found, or that all were."""
    if result.ok:
        return _("all figures found in tool outputs ({n} checked)").format(n=len(result.checked))
    count = len(result.flagged)
    return ngettext("{n} figure not found in tool outputs: {figures}",
                    "{n} figures not found in tool outputs: {figures}", count).format(
                        n=count, figures="; ".join(figure.text for figure in result.flagged))
