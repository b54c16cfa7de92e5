"""How much of a backtest's result is selection: the Deflated Sharpe Ratio and the probability of backtest overfitting.

- Deflated Sharpe Ratio (Bailey and López de Prado, "The Deflated Sharpe Ratio", Journal of Portfolio Management
  40(5), 2014): the Probabilistic Sharpe Ratio of the chosen trial against the Sharpe ratio the best of N trials
  without skill is expected to reach, SR0 = sqrt(V[SR_n]) * ((1 - γ) Z⁻¹[1 - 1/N] + γ Z⁻¹[1 - 1/(N e)]) with γ the
  Euler–Mascheroni constant; PSR(SR0) = Z[(SR - SR0) sqrt(T - 1) / sqrt(1 - γ3 SR + (γ4 - 1)/4 SR²)], γ3 the
  skewness and γ4 the (non-excess) kurtosis of the chosen trial's returns. Sharpe ratios are per observation
  (not annualised) throughout.
- Probability of backtest overfitting by combinatorially symmetric cross-validation (Bailey, Borwein, López de
  Prado and Zhu, Journal of Computational Finance 20(4), 2017): the T×N matrix of the trials' returns is cut into
  S even blocks of rows; for every choice of S/2 blocks as in-sample (the rest out-of-sample) the trial best
  in-sample is ranked out-of-sample, ω = rank / (N + 1), λ = ln(ω / (1 - ω)); the PBO is the share of choices
  with λ ≤ 0 (the in-sample winner at or below the out-of-sample median).

Only the standard library's normal distribution is used (no scipy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist

import numpy as np

EULER_MASCHERONI = 0.5772156649015329
_NORMAL = NormalDist()
PBO_MIN_TRIALS = 8  # fewer trials make the overfitting probability too coarse to show
PBO_BLOCKS = 16


@dataclass(frozen=True)
class Moments:
    """A return series' per-observation Sharpe ratio, skewness and kurtosis (non-excess), and its length."""

    sharpe: float
    skew: float
    kurtosis: float
    n: int


@dataclass(frozen=True)
class Deflated:
    """The DSR of a chosen trial: the probability that its true Sharpe ratio beats the best of `trials` by luck."""

    probability: float
    sharpe: float  # the chosen trial's, per observation
    benchmark: float  # SR0: the expected maximum Sharpe of `trials` trials without skill
    trials: int


def moments(returns: np.ndarray) -> Moments:
    """Sharpe ratio (mean / std, ddof 0 as the paper's moments), skewness and kurtosis of the finite values."""
    r = np.asarray(returns, dtype=float)
    r = r[np.isfinite(r)]
    if len(r) < 2:
        raise ValueError("a Sharpe ratio needs at least two returns")
    centred = r - r.mean()
    var = float(np.mean(centred ** 2))
    if var == 0.0:
        return Moments(0.0, 0.0, 3.0, len(r))
    sd = math.sqrt(var)
    return Moments(float(r.mean()) / sd, float(np.mean(centred ** 3)) / sd ** 3,
                   float(np.mean(centred ** 4)) / var ** 2, len(r))


def expected_max_sharpe(trials: int, variance: float) -> float:
    """SR0: the expected maximum of `trials` Sharpe ratios with zero mean and the trials' variance."""
    if trials < 2 or variance <= 0:
        return 0.0
    quantile = ((1 - EULER_MASCHERONI) * _NORMAL.inv_cdf(1 - 1 / trials)
                + EULER_MASCHERONI * _NORMAL.inv_cdf(1 - 1 / (trials * math.e)))
    return math.sqrt(variance) * quantile


def probabilistic_sharpe(sharpe: float, benchmark: float, n: int, skew: float, kurtosis: float) -> float:
    """PSR: the probability that the true Sharpe ratio exceeds `benchmark`, from `n` observations."""
    spread = 1 - skew * sharpe + (kurtosis - 1) / 4 * sharpe ** 2
    if n < 2 or spread <= 0:
        return float("nan")
    return _NORMAL.cdf((sharpe - benchmark) * math.sqrt(n - 1) / math.sqrt(spread))


def deflated_sharpe(chosen: Moments, trials: int, variance: float) -> Deflated:
    """The DSR of `chosen` among `trials` trials whose Sharpe ratios have variance `variance`."""
    benchmark = expected_max_sharpe(trials, variance)
    return Deflated(probabilistic_sharpe(chosen.sharpe, benchmark, chosen.n, chosen.skew, chosen.kurtosis),
                    chosen.sharpe, benchmark, trials)


def pbo(returns: np.ndarray, blocks: int = PBO_BLOCKS) -> float:
    """The probability of backtest overfitting of the trials in the columns of `returns` (T×N) by CSCV with
    `blocks` even blocks of rows (the last T mod blocks rows are left out), each trial scored by its Sharpe ratio
    (ddof 0; 0 without spread) over the blocks chosen. A tie out-of-sample ranks the in-sample winner lowest."""
    matrix = np.asarray(returns, dtype=float)
    rows, trials = matrix.shape
    if blocks < 2 or blocks % 2 or rows < blocks or trials < 2:
        raise ValueError("CSCV needs an even number of blocks, a row per block and two trials")
    size = rows // blocks
    cut = matrix[:size * blocks].reshape(blocks, size, trials)
    sums, squares = cut.sum(axis=1), (cut ** 2).sum(axis=1)  # blocks × trials
    every = sums.sum(axis=0), squares.sum(axis=0)
    half = size * blocks // 2
    below = total = 0
    for chosen in combinations(range(blocks), blocks // 2):
        picked = list(chosen)
        inside_sum, inside_sq = sums[picked].sum(axis=0), squares[picked].sum(axis=0)
        inside = _sharpe(inside_sum, inside_sq, half)
        outside = _sharpe(every[0] - inside_sum, every[1] - inside_sq, half)
        best = int(np.argmax(inside))
        omega = (1 + int(np.sum(outside < outside[best]))) / (trials + 1)
        below += math.log(omega / (1 - omega)) <= 0
        total += 1
    return below / total


def _sharpe(total: np.ndarray, squares: np.ndarray, n: int) -> np.ndarray:
    mean = total / n
    variance = squares / n - mean ** 2
    spread = variance > 1e-12 * squares / n  # below it, rounding of a column without spread
    return np.divide(mean, np.sqrt(np.where(spread, variance, 1.0)), out=np.zeros_like(mean), where=spread)
