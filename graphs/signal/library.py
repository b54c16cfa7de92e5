"""Built-in signal strategies: code that needs no LLM. Each body reads wide frames named after their fields
(close, high, low, pe, pb, ...) and leaves `signal`: 1 buy, -1 sell, 0 hold, NaN no data."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphs.grammar import did_you_mean
from graphs.signal.groups import Group
from tools.i18n import N_, _


@dataclass(frozen=True)
class Param:
    default: float
    low: float
    high: float
    integer: bool = True
    help: str = ""


@dataclass(frozen=True)
class Strategy:
    name: str
    title: str  # message ids (N_): shown translated
    description: str
    fields: tuple[str, ...]
    params: dict[str, Param]
    template: str
    min_codes: int = 1
    aliases: tuple[str, ...] = field(default=())
    groups: tuple[Group, ...] = ()  # a cross-sectional strategy's ends of the ranking (graphs/signal/groups.py)

    def resolve(self, given: dict[str, str]) -> dict[str, float | int]:
        """Parameters with defaults filled in; unknown names and out-of-range values are errors."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            named = ", ".join(name + did_you_mean(f"{name}={given[name]}", self.params) for name in unknown)
            raise ValueError(_("{strategy} has no parameter {named}; its parameters: {params}").format(
                strategy=self.name, named=named, params=self.param_help()))
        values: dict[str, float | int] = {}
        for name, spec in self.params.items():
            raw = given.get(name)
            try:
                value = spec.default if raw is None else float(raw)
            except ValueError:
                raise ValueError(_("{name}={value} is not a number").format(name=name, value=raw)) from None
            if spec.integer:
                if value != int(value):
                    raise ValueError(_("{name} must be a whole number, got {value}").format(name=name, value=raw))
                value = int(value)
            if not spec.low <= value <= spec.high:
                raise ValueError(_("{name} must be between {low} and {high}, got {value}").format(
                    name=name, low=f"{spec.low:g}", high=f"{spec.high:g}", value=f"{value:g}"))
            values[name] = value
        self.check(values)
        return values

    def check(self, values: dict[str, float | int]) -> None:
        if self.name == "ma_cross" and values["fast"] >= values["slow"]:
            raise ValueError(_("fast ({fast}) must be shorter than slow ({slow})").format(fast=values["fast"],
                                                                                          slow=values["slow"]))
        if self.name == "rsi" and values["lower"] >= values["upper"]:
            raise ValueError(_("lower ({lower}) must be below upper ({upper})").format(lower=values["lower"],
                                                                                       upper=values["upper"]))

    def code(self, values: dict[str, float | int]) -> str:
        return self.template.format(**values).strip() + "\n"

    def param_help(self) -> str:
        return ", ".join(f"{n}={p.default:g}" for n, p in self.params.items()) or _("none")


STRATEGIES: dict[str, Strategy] = {}


def _add(strategy: Strategy) -> None:
    STRATEGIES[strategy.name] = strategy


_add(Strategy(
    "ma_cross", N_("Moving-average cross"),
    N_("long while the fast moving average of close is above the slow one, sell when it is below"),
    ("close",),
    {"fast": Param(5, 1, 250), "slow": Param(20, 2, 500)},
    """
fast_ma = close.rolling({fast}).mean()
slow_ma = close.rolling({slow}).mean()
signal = (fast_ma > slow_ma).astype(float) - (fast_ma < slow_ma).astype(float)
signal = signal.where(slow_ma.notna() & fast_ma.notna())
""",
    aliases=("sma_cross", "golden_cross"),
))

_add(Strategy(
    "momentum", N_("Cross-sectional momentum"),
    N_("rank codes each day by their N-day return: buy the top share, sell the bottom share"),
    ("close",),
    {"window": Param(20, 1, 500), "top": Param(0.2, 0.01, 0.5, integer=False),
     "bottom": Param(0.2, 0.01, 0.5, integer=False)},
    """
ret = close.pct_change({window}, fill_method=None)
rank = ret.rank(axis=1, pct=True)
signal = (rank > 1 - {top}).astype(float) - (rank <= {bottom}).astype(float)
signal = signal.where(ret.notna())
""",
    min_codes=3,
    groups=(Group("top", "buy", low=False), Group("bottom", "sell", low=True)),
))

_add(Strategy(
    "mean_reversion", N_("Mean reversion (z-score)"),
    N_("buy when close is more than `entry` standard deviations below its moving average, sell when above"),
    ("close",),
    {"window": Param(20, 2, 500), "entry": Param(1.5, 0.1, 5, integer=False)},
    """
mean = close.rolling({window}).mean()
std = close.rolling({window}).std()
z = (close - mean) / std
signal = (z < -{entry}).astype(float) - (z > {entry}).astype(float)
signal = signal.where(z.notna())
""",
    aliases=("reversion", "zscore"),
))

_add(Strategy(
    "rsi", N_("RSI thresholds"),
    N_("buy when Wilder's RSI falls below `lower`, sell when it rises above `upper` (a flat price is RSI 50)"),
    ("close",),
    {"window": Param(14, 2, 250), "lower": Param(30, 1, 99), "upper": Param(70, 1, 99)},
    """
delta = close - close.ffill().shift(1)
gain = delta.clip(lower=0).ewm(alpha=1 / {window}, adjust=False, min_periods={window}, ignore_na=True).mean()
loss = (-delta.clip(upper=0)).ewm(alpha=1 / {window}, adjust=False, min_periods={window}, ignore_na=True).mean()
rsi = (100 * gain / (gain + loss)).where(gain + loss > 0, 50.0)
signal = (rsi < {lower}).astype(float) - (rsi > {upper}).astype(float)
signal = signal.where(gain.notna() & close.notna())
""",
))

_add(Strategy(
    "bollinger", N_("Bollinger band breakout"),
    N_("buy when close breaks above the upper band (mean + k std), sell when it breaks below the lower band"),
    ("close",),
    {"window": Param(20, 2, 500), "k": Param(2.0, 0.1, 5, integer=False)},
    """
mid = close.rolling({window}).mean()
width = close.rolling({window}).std() * {k}
signal = (close > mid + width).astype(float) - (close < mid - width).astype(float)
signal = signal.where(mid.notna())
""",
    aliases=("boll", "bbands"),
))

_add(Strategy(
    "channel", N_("Channel (Donchian) breakout"),
    N_("buy when close exceeds the highest high of the previous N bars, sell below the lowest low"),
    ("close", "high", "low"),
    {"window": Param(20, 2, 500)},
    """
upper = high.rolling({window}).max().shift(1)
lower = low.rolling({window}).min().shift(1)
signal = (close > upper).astype(float) - (close < lower).astype(float)
signal = signal.where(upper.notna() & lower.notna() & close.notna())
""",
    aliases=("donchian",),
))

_add(Strategy(
    "valuation", N_("Valuation (PE and PB rank)"),
    N_("rank codes each day by PE and PB (positive values only): buy the cheapest share, sell the dearest"),
    ("close", "pe", "pb"),
    {"cheap": Param(0.3, 0.01, 0.5, integer=False), "dear": Param(0.3, 0.01, 0.5, integer=False)},
    """
pe_rank = pe.where(pe > 0).rank(axis=1, pct=True)
pb_rank = pb.where(pb > 0).rank(axis=1, pct=True)
score = (pe_rank + pb_rank) / 2
signal = (score <= {cheap}).astype(float) - (score > 1 - {dear}).astype(float)
signal = signal.where(score.notna())
""",
    min_codes=3,
    aliases=("pe_pb",),
    groups=(Group("cheap", "buy", low=True), Group("dear", "sell", low=False)),
))


def find_strategy(name: str) -> Strategy | None:
    key = name.strip().lower().replace("-", "_")
    if key in STRATEGIES:
        return STRATEGIES[key]
    for strategy in STRATEGIES.values():
        if key in strategy.aliases:
            return strategy
    return None


def library_help() -> str:
    """Every built-in strategy with its parameters and what it does, in the language in effect."""
    return "\n".join(f"- `{s.name}` ({s.param_help()}): {_(s.description)}" for s in STRATEGIES.values())
