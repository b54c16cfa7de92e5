"""The Deflated Sharpe Ratio against the numerical example of Bailey and López de Prado (2014), the probability of
backtest overfitting on a matrix worked by hand, and both against a straightforward computation written here."""

from __future__ import annotations

import math
from itertools import combinations
from statistics import NormalDist

import numpy as np
import pytest

from tools.research.overfitting import (
    Moments,
    deflated_sharpe,
    expected_max_sharpe,
    moments,
    pbo,
    probabilistic_sharpe,
)


def test_dsr_reproduces_the_papers_numerical_example() -> None:
    """The paper's example: an annualised Sharpe ratio of 2.5 from five years of daily returns (T = 1250, 250 a
    year), chosen among N = 100 trials whose annualised Sharpe ratios have variance 1/2, returns with skewness -3
    and kurtosis 10. The paper prints SR0 ≈ 0.1132 (per day) and DSR ≈ 0.9004."""
    per_day_variance = 0.5 / 250
    chosen = Moments(sharpe=2.5 / math.sqrt(250), skew=-3.0, kurtosis=10.0, n=1250)
    result = deflated_sharpe(chosen, trials=100, variance=per_day_variance)
    assert round(result.benchmark, 4) == 0.1132
    assert round(result.probability, 4) == 0.9004
    assert result.trials == 100


def _straightforward_dsr(sr: float, t: int, n: int, var: float, skew: float, kurt: float) -> float:
    """The two formulas of the paper, typed out again from its text."""
    z = NormalDist()
    gamma = 0.5772156649015329
    sr0 = math.sqrt(var) * ((1 - gamma) * z.inv_cdf(1 - 1 / n) + gamma * z.inv_cdf(1 - 1 / (n * math.e)))
    return z.cdf((sr - sr0) * math.sqrt(t - 1) / math.sqrt(1 - skew * sr + (kurt - 1) / 4 * sr * sr))


@pytest.mark.parametrize("sr,t,n,var,skew,kurt", [(0.08, 500, 20, 0.001, 0.3, 4.0), (0.05, 2000, 8, 0.0004, -1, 6),
                                                  (0.2, 250, 300, 0.01, 0.0, 3.0)])
def test_dsr_agrees_with_a_straightforward_computation(sr: float, t: int, n: int, var: float, skew: float,
                                                       kurt: float) -> None:
    got = deflated_sharpe(Moments(sr, skew, kurt, t), n, var).probability
    assert got == pytest.approx(_straightforward_dsr(sr, t, n, var, skew, kurt), abs=1e-12)


def test_moments_of_a_series_and_the_dsr_of_trials() -> None:
    rng = np.random.default_rng(7)
    returns = rng.standard_t(5, size=1500) * 0.01 + 0.001
    m = moments(returns)
    centred = returns - returns.mean()
    sd = math.sqrt(sum(c * c for c in centred) / len(centred))
    assert m.sharpe == pytest.approx(returns.mean() / sd)
    assert m.skew == pytest.approx(sum(c ** 3 for c in centred) / len(centred) / sd ** 3)
    assert m.kurtosis == pytest.approx(sum(c ** 4 for c in centred) / len(centred) / sd ** 4)
    trial_sharpes = [m.sharpe, 0.01, -0.02, 0.03, 0.0]
    got = deflated_sharpe(m, len(trial_sharpes), float(np.var(trial_sharpes, ddof=1)))
    expected = _straightforward_dsr(m.sharpe, 1500, 5, float(np.var(trial_sharpes, ddof=1)), m.skew, m.kurtosis)
    assert got.probability == pytest.approx(expected, abs=1e-12)
    assert got.trials == 5


def test_one_trial_is_judged_against_zero() -> None:
    assert expected_max_sharpe(1, 0.5) == 0.0
    assert probabilistic_sharpe(0.0, 0.0, 100, 0.0, 3.0) == pytest.approx(0.5)


# Three trials, four blocks of two rows each. Each block of a trial holds m + 1 and m - 1 (in units of 0.01), so
# over two blocks with means m1, m2 the mean is (m1 + m2) / 2 and the variance 1 + ((m1 - m2) / 2)².
BLOCK_MEANS = {"A": [3, 3, -1, -1], "B": [1, 1, 1, 1], "C": [-1, 2, 2, -1]}
# Worked by hand (IS blocks | Sharpe IS A, B, C | winner | Sharpe OOS A, B, C | winner's rank of 3 | ω | λ ≤ 0?):
#   1,2 | 3, 1, 0.277      | A | -1, 1, 0.277     | 1 | 1/4 | yes
#   1,3 | 0.447, 1, 0.277  | B | 0.447, 1, 0.277  | 3 | 3/4 | no
#   1,4 | 0.447, 1, -1     | B | 0.447, 1, 2      | 2 | 2/4 | yes (λ = 0)
#   2,3 | 0.447, 1, 2      | C | 0.447, 1, -1     | 1 | 1/4 | yes
#   2,4 | 0.447, 1, 0.277  | B | 0.447, 1, 0.277  | 3 | 3/4 | no
#   3,4 | -1, 1, 0.277     | B | 3, 1, 0.277      | 2 | 2/4 | yes (λ = 0)
# PBO = 4 / 6.
HAND_PBO = 4 / 6


def _hand_matrix() -> np.ndarray:
    columns = [[v for m in means for v in (m + 1, m - 1)] for means in BLOCK_MEANS.values()]
    return np.array(columns, dtype=float).T * 0.01


def test_pbo_of_the_hand_worked_matrix() -> None:
    assert pbo(_hand_matrix(), blocks=4) == pytest.approx(HAND_PBO)


def _straightforward_pbo(matrix: list[list[float]], blocks: int) -> float:
    """CSCV as the paper describes it, with lists and loops: concatenate the chosen blocks, Sharpe per trial."""
    size = len(matrix) // blocks
    parts = [matrix[i * size:(i + 1) * size] for i in range(blocks)]

    def sharpe(rows: list[list[float]], j: int) -> float:
        values = [row[j] for row in rows]
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return mean / sd if sd > 1e-12 else 0.0

    trials = len(matrix[0])
    logits = []
    for chosen in combinations(range(blocks), blocks // 2):
        inside = [row for i in chosen for row in parts[i]]
        outside = [row for i in range(blocks) if i not in chosen for row in parts[i]]
        scores_in = [sharpe(inside, j) for j in range(trials)]
        scores_out = [sharpe(outside, j) for j in range(trials)]
        best = scores_in.index(max(scores_in))
        rank = 1 + sum(1 for s in scores_out if s < scores_out[best])
        omega = rank / (trials + 1)
        logits.append(math.log(omega / (1 - omega)))
    return sum(1 for lam in logits if lam <= 0) / len(logits)


def test_pbo_agrees_with_a_straightforward_computation() -> None:
    assert _straightforward_pbo(_hand_matrix().tolist(), 4) == pytest.approx(HAND_PBO)
    rng = np.random.default_rng(11)
    noise = rng.normal(0.0, 0.01, size=(240, 10))
    skilled = noise.copy()
    skilled[:, 9] += 0.01  # one trial with real skill (a per-day Sharpe ratio near 1) wins in and out of sample
    for matrix in (noise, skilled):
        assert pbo(matrix, blocks=8) == pytest.approx(_straightforward_pbo(matrix.tolist(), 8))
    assert pbo(skilled, blocks=8) < 0.1 < pbo(noise, blocks=8)


def test_pbo_refuses_odd_blocks_and_single_trials() -> None:
    with pytest.raises(ValueError):
        pbo(np.zeros((10, 3)), blocks=3)
    with pytest.raises(ValueError):
        pbo(np.zeros((10, 1)), blocks=4)
