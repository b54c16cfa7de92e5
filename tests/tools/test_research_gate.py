"""The gate on synthetic markets with known answers: a factor with real predictive power over the whole period
passes; the best of 50 factors without any power, which alone would look significant, is refused by the Deflated
Sharpe Ratio once its 49 siblings are counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine

from tools.factors.ic import evaluate_factor
from tools.research.gate import failures, verdict
from tools.research.holdout import split_sessions
from tools.research.overfitting import moments, probabilistic_sharpe
from tools.research.trials import Trial, TrialStore, judge, universe_key

SESSIONS = 400
CODES = 80


def _market(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A signal (dates × codes, standard normal) and prices whose next-day returns load on it with IC about 0.1."""
    rng = np.random.default_rng(seed)
    dates = pd.bdate_range("2021-01-04", periods=SESSIONS)
    codes = [f"{600000 + i}.SH" for i in range(CODES)]
    signal = rng.standard_normal((SESSIONS, CODES))
    returns = np.zeros((SESSIONS, CODES))
    returns[1:] = 0.002 * signal[:-1] + 0.02 * rng.standard_normal((SESSIONS - 1, CODES))
    close = pd.DataFrame(10 * np.cumprod(1 + returns, axis=0), index=dates, columns=codes)
    return pd.DataFrame(signal, index=dates, columns=codes), close


def _evaluate(factor: pd.DataFrame, close: pd.DataFrame) -> tuple[pd.Series, float, float | None]:
    """(in-sample daily long-short returns, in-sample 1d Rank IC, holdout 1d Rank IC) over the default split."""
    split = split_sessions(list(factor.index.strftime("%Y%m%d")), 0.2)
    cut, first = pd.Timestamp(split.in_sample_end), pd.Timestamp(split.holdout_start)
    inside = evaluate_factor(factor.loc[:cut], close.loc[:cut], (1,), 5)
    held = evaluate_factor(factor.loc[first:], close.loc[first:], (1,), 5)
    return (inside.factor_returns[1], float(inside.metrics().loc[1, "rank_ic_mean"]),
            float(held.metrics().loc[1, "rank_ic_mean"]))


def _trial(thread: str, n: int, returns: pd.Series) -> Trial:
    return Trial(f"{thread}:{n}", thread, "UALICE", "factor", f"f{n}", universe_key([]), "20210104", "20220708",
                 returns)


def test_a_factor_with_real_power_passes_the_gate(engine: Engine) -> None:
    signal, close = _market(1)
    returns, ic_in, ic_out = _evaluate(signal, close)
    store, thread = TrialStore(engine), "console-real-power"
    assert store.record([_trial(thread, 1, returns)]) == 1
    assert store.record([_trial(thread, 1, returns)]) == 0  # the same trial twice is one trial
    judged = judge(returns, store.of_thread(thread), store.count_of("UALICE"))
    assert judged.trials == 1 and judged.pbo is None
    gate = verdict(ic_in, ic_out, judged.dsr, 0.95)
    assert ic_in > 0.05 and ic_out > 0.05 and judged.dsr > 0.99
    assert gate["passed"] and failures(gate) == []


def test_the_best_of_fifty_factors_without_power_is_refused_by_the_dsr(engine: Engine) -> None:
    _, close = _market(2)
    rng = np.random.default_rng(3)
    store, thread = TrialStore(engine), "console-fifty"
    tried = []
    for _n in range(50):
        noise = pd.DataFrame(rng.standard_normal(close.shape), index=close.index, columns=close.columns)
        returns, ic_in, ic_out = _evaluate(noise, close)
        tried.append((moments(returns.to_numpy()).sharpe, returns, ic_in, ic_out))
    store.record([_trial(thread, n, returns) for n, (_, returns, _, _) in enumerate(tried)])
    sharpe, best, ic_in, ic_out = max(tried, key=lambda t: t[0])
    alone = moments(best.dropna().to_numpy())
    assert probabilistic_sharpe(alone.sharpe, 0.0, alone.n, alone.skew, alone.kurtosis) > 0.95  # alone: "significant"
    judged = judge(best, store.of_thread(thread), store.count_of("UALICE"))
    assert judged.trials == 50 and judged.benchmark > judged.sharpe == pytest.approx(sharpe)
    assert judged.dsr < 0.5
    assert judged.pbo is not None and 0 <= judged.pbo <= 1  # 50 series: CSCV runs (on one data set of noise it
    # scatters widely around 0.5, so only the DSR is the known answer here)
    gate = verdict(ic_in, ic_out, judged.dsr, 0.95)
    assert not gate["passed"] and not gate["dsr"]["ok"]
    assert any(line.startswith("deflated Sharpe: probability 0.") and "below the threshold 0.95" in line
               for line in failures(gate))
