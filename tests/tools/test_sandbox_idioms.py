"""Everyday numpy and pandas idioms give the same result in the sandbox as in-process.

Each idiom runs once in the shared sandbox (static policy, runtime guards and OS isolation all on) and once
with a plain `exec` on copies of the same inputs; the results must be equal. The inputs are real wide frames
(trade dates x ts_code) from the shared CSI 300 data, with the gaps of suspended days left in.
"""

from __future__ import annotations

import datetime
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tools.sandbox import Sandbox

RTOL, ATOL = 1e-9, 1e-12  # the sandbox's BLAS is single-threaded; summation order may differ in the last bits

NDARRAY = {
    "arange sum (issue 11)": "result = float(np.arange(3.0).sum())",
    "ndarray.sum": "x = full.to_numpy()\nresult = float(x.sum())",
    "ndarray.mean": "x = full.to_numpy()\nresult = float(x.mean())",
    "ndarray.max min argmax": "x = full.to_numpy()\nresult = [float(x.max()), float(x.min()), int(x.argmax())]",
    "ndarray.std var": "x = full.to_numpy()\nresult = [float(x.std()), float(x.var(ddof=1))]",
    "ndarray.argsort": "x = full.to_numpy()\nresult = x[-1].argsort().tolist()",
    "ndarray.cumsum": "r = np.diff(np.log(full.to_numpy()), axis=0)\n"
                      "result = pd.DataFrame(r.cumsum(axis=0), index=full.index[1:], columns=full.columns)",
    "ndarray.prod round clip": "r = full.pct_change().to_numpy()[1:]\n"
                               "result = [float((1 + r).prod()), float(r.round(3).clip(-0.02, 0.02).sum())]",
    "ndarray.any all nonzero": "x = full.to_numpy()\nup = x[1:] > x[:-1]\n"
                               "result = [bool(up.any()), bool(up.all()), int(np.count_nonzero(up))]",
    "keepdims z-score": "x = full.to_numpy()\n"
                        "z = (x - x.mean(axis=0, keepdims=True)) / x.std(axis=0, ddof=1, keepdims=True)\n"
                        "result = pd.DataFrame(z, index=full.index, columns=full.columns)",
    "matmul and transpose": "x = full.pct_change().to_numpy()[1:]\nresult = pd.DataFrame(x.T @ x / len(x))",
    "nan reductions": "x = close.to_numpy()\nresult = [float(np.nanmean(x)), float(np.nanstd(x)), "
                      "float(np.nanmedian(x)), float(np.nanpercentile(x, 90)), int(np.nanargmax(x[:, 0]))]",
    "sort unique searchsorted": "v = np.sort(full.iloc[-1].to_numpy())\n"
                                "result = [np.unique(v.round(0)).size, int(np.searchsorted(v, np.median(v)))]",
    "str of an array": "result = str(np.round(full.to_numpy()[:2, :3], 2))",
    "repr of a frame": "result = repr(close.iloc[:3, :3])",
    "runtime warning": "v = np.log(np.array([0.0, 1.0, 2.0]))\nresult = [float(a) for a in v]",
    "errstate": "with np.errstate(divide='ignore', invalid='ignore'):\n"
                "    v = np.array([1.0, 0.0, -1.0]) / np.array([0.0, 0.0, 2.0])\nresult = [float(a) for a in v]",
    "percentile histogram polyfit": "r = full.iloc[:, 0].pct_change().dropna().to_numpy()\n"
                                    "counts, edges = np.histogram(r, bins=10)\n"
                                    "slope, icpt = np.polyfit(np.arange(len(r)), np.cumsum(r), 1)\n"
                                    "result = [*counts.tolist(), float(edges[0]), float(slope), float(icpt), "
                                    "float(np.percentile(r, 5))]",
}

LINALG = {
    "inv": "c = np.cov(full.pct_change().to_numpy()[1:], rowvar=False)\n"
           "result = pd.DataFrame(np.linalg.inv(c + np.eye(len(c)) * 1e-4))",
    "eigvalsh": "result = np.linalg.eigvalsh(np.corrcoef(full.pct_change().to_numpy()[1:], rowvar=False)).tolist()",
    "solve": "x = full.pct_change().to_numpy()[1:]\na = x.T @ x + np.eye(x.shape[1]) * 1e-3\n"
             "result = np.linalg.solve(a, x.T @ x[:, 0]).tolist()",
    "lstsq beta": "r = np.diff(np.log(full.to_numpy()), axis=0)\nm = r.mean(axis=1)\n"
                  "a = np.column_stack([np.ones_like(m), m])\n"
                  "coef, _res, _rank, _sv = np.linalg.lstsq(a, r, rcond=None)\n"
                  "result = pd.DataFrame(coef.T, index=full.columns, columns=['alpha', 'beta'])",
    "norm": "x = full.to_numpy()\n"
            "result = [float(np.linalg.norm(x)), float(np.linalg.norm(x, ord=1)), float(np.linalg.norm(x[0] - x[1]))]",
    "slogdet cholesky": "c = np.cov(full.pct_change().to_numpy()[1:], rowvar=False) + np.eye(full.shape[1]) * 1e-4\n"
                        "sign, logdet = np.linalg.slogdet(c)\n"
                        "result = [float(sign), float(logdet), float(np.linalg.cholesky(c).trace())]",
    "svd pinv qr": "x = full.pct_change().to_numpy()[1:]\ns = np.linalg.svd(x, compute_uv=False)\n"
                   "q, r = np.linalg.qr(x)\n"
                   "result = [*s.tolist(), float(np.abs(np.linalg.pinv(x)).sum()), float(np.abs(np.diag(r)).sum())]",
    "numpy.linalg import": "import numpy.linalg\nfrom numpy.linalg import det\n"
                           "result = [float(numpy.linalg.det(np.eye(3) * 2)), float(det(np.eye(2) * 3))]",
}

RANDOM = {
    "default_rng normal": "rng = np.random.default_rng(42)\n"
                          "result = pd.DataFrame(rng.normal(size=(5, 3)), columns=['a', 'b', 'c'])",
    "default_rng choice": "rng = np.random.default_rng(7)\n"
                          "result = rng.choice(full.columns.to_numpy(), size=5, replace=False).tolist()",
    "bootstrap": "rng = np.random.default_rng(3)\nr = full.iloc[:, 0].pct_change().dropna().to_numpy()\n"
                 "idx = rng.integers(0, len(r), size=(200, len(r)))\nresult = float(r[idx].mean(axis=1).std())",
    "legacy seed": "np.random.seed(1)\nresult = np.random.rand(3).tolist() + [int(np.random.randint(0, 100))]",
    "numpy.random import": "from numpy.random import default_rng\nresult = default_rng(5).permutation(10).tolist()",
}

PANDAS = {
    "rolling mean": "result = close.rolling(20).mean()",
    "rolling std min_periods": "result = close.pct_change(fill_method=None).rolling(20, min_periods=10).std()",
    "rolling corr with market": "r = close.pct_change(fill_method=None)\n"
                                "result = r.rolling(60).corr(r.mean(axis=1))",
    "rolling apply raw": "result = close.rolling(10).apply(lambda a: a[-1] / a[0] - 1, raw=True)",
    "rolling rank": "result = close.rolling(20).rank(pct=True)",
    "expanding drawdown": "result = close / close.expanding().max() - 1",
    "cummax drawdown min": "dd = close / close.cummax() - 1\nresult = dd.min()",
    "ewm mean": "result = close.ewm(span=12, adjust=False).mean() - close.ewm(span=26, adjust=False).mean()",
    "ewm std": "result = close.pct_change(fill_method=None).ewm(halflife=10).std()",
    "groupby month apply": "r = close.pct_change(fill_method=None)\n"
                           "result = r.groupby(r.index.month).apply(lambda g: (1 + g).prod() - 1)",
    "groupby transform z-score": "r = close.pct_change(fill_method=None)\n"
                                 "g = r.groupby(r.index.to_period('M'))\n"
                                 "result = (r - g.transform('mean')) / g.transform('std')",
    "groupby agg on long": "long = close.stack().rename('close').reset_index()\n"
                           "result = long.groupby('ts_code')['close'].agg(['mean', 'std', 'count'])",
    "corr cov": "r = full.pct_change()\nresult = r.corr().values.mean() + r.cov().values.mean()",
    "corr spearman": "result = close.pct_change(fill_method=None).corr(method='spearman')",
    "rank IC (corrwith axis=1)": "f = close.pct_change(20, fill_method=None)\n"
                                 "fwd = close.pct_change(5, fill_method=None).shift(-5)\n"
                                 "result = f.rank(axis=1).corrwith(fwd.rank(axis=1), axis=1)",
    "quantile": "r = close.pct_change(fill_method=None)\n"
                "q = r.quantile([0.1, 0.5, 0.9], axis=1).T.rename(columns=lambda p: f'q{round(p * 100)}')\n"
                "result = q.assign(spread=q['q90'] - q['q10'], first_q25=float(r.iloc[:, 0].quantile(0.25)))",
    "rank pct": "result = close.pct_change(5, fill_method=None).rank(axis=1, pct=True)",
    "rank first descending": "result = close.rank(axis=1, method='first', ascending=False)",
    "clip where mask": "r = close.pct_change(fill_method=None)\n"
                       "result = r.clip(-0.05, 0.05).where(r.abs() > 0.01).mask(r > 0.04, 0.0)",
    "cumprod": "result = (1 + close.pct_change(fill_method=None).fillna(0)).cumprod()",
    "diff shift pct_change": "result = close.diff() / close.shift(1) - close.pct_change(fill_method=None)",
    "log returns": "result = np.log(close / close.shift())",
    "resample weekly": "result = close.resample('W-FRI').last().pct_change(fill_method=None)",
    "resample monthly ohlc": "result = close.iloc[:, 0].resample('ME').ohlc()",
    "merge long frames": "a = close.stack().rename('close').reset_index()\n"
                         "b = high.stack().rename('high').reset_index()\n"
                         "result = a.merge(b, on=['trade_date', 'ts_code'], how='inner').head(500)",
    "pivot round trip": "long = close.stack().rename('close').reset_index()\n"
                        "result = long.pivot(index='trade_date', columns='ts_code', values='close')",
    "pivot_table monthly": "long = close.stack().rename('close').reset_index()\n"
                           "long['month'] = long['trade_date'].dt.month\n"
                           "result = long.pivot_table(index='month', columns='ts_code', values='close', "
                           "aggfunc='mean')",
    "melt": "result = close.iloc[:5, :4].reset_index().melt(id_vars='trade_date', value_name='px')",
    "str methods": "codes = pd.Series(close.columns)\n"
                   "result = pd.DataFrame({'num': codes.str.split('.').str[0].astype(str), "
                   "'sh': codes.str.endswith('.SH'), 'prefix': codes.str.slice(0, 3), "
                   "'plain': codes.str.replace('.', '_', regex=False)})",
    "str on columns": "result = close.loc[:, close.columns.str.endswith('.SH')].mean(axis=1)",
    "dt accessors": "d = close.index.to_series()\n"
                    "result = pd.DataFrame({'dow': d.dt.day_of_week, 'month': d.dt.month, 'q': d.dt.quarter, "
                    "'ym': d.dt.strftime('%Y%m'), 'month_end': d.dt.is_month_end})",
    "to_datetime format": "result = pd.Series(pd.to_datetime(['20210104', '20210105'], format='%Y%m%d'))",
    "qcut portfolios": "f = close.pct_change(20, fill_method=None)\n"
                       "fwd = close.pct_change(fill_method=None).shift(-1)\n"
                       "q = f.apply(lambda row: pd.qcut(row, 5, labels=False, duplicates='drop'), axis=1)\n"
                       "result = fwd.stack().groupby(q.stack()).mean()",
    "cut": "r = full.iloc[:, 0].pct_change()\n"
           "result = pd.cut(r, [-1, -0.02, 0, 0.02, 1], labels=False).value_counts().sort_index()",
    "value_counts nlargest idxmax": "r = close.pct_change(fill_method=None)\n"
                                    "result = [r.dropna(how='all').idxmax(axis=1).value_counts().index[0], "
                                    "*r.iloc[-1].nlargest(3).index.tolist()]",
    "describe": "result = close.iloc[:, :5].describe()",
    "ffill fillna dropna": "result = close.ffill().fillna(0).dropna(axis=1, how='all')",
    "reindex align concat": "w = close.resample('W-FRI').last()\na, b = close.align(w, join='left')\n"
                            "result = pd.concat([a.iloc[:, :2], b.iloc[:, :2].ffill()], axis=1, keys=['d', 'w'])",
    "interpolate": "result = close.interpolate(limit=3)",
    "stack unstack": "result = close.stack().unstack()",
    "sort_values drop_duplicates": "last = close.iloc[-1].rename('px').reset_index()\n"
                                   "result = last.sort_values('px', ascending=False).drop_duplicates('px').head(10)",
    "apply row-wise function": "def zscore(row):\n    return (row - row.mean()) / row.std()\n"
                               "result = close.pct_change(fill_method=None).apply(zscore, axis=1)",
    "map isin between": "last = close.iloc[-1]\n"
                        "result = pd.DataFrame({'big': last.map(lambda v: v > 20), "
                        "'sh': last.index.isin(close.columns[:10]), 'mid': last.between(10, 50)})",
    "np.where np.sign on frames": "r = close.pct_change(fill_method=None)\n"
                                  "result = pd.DataFrame(np.where(r > 0, 1.0, np.sign(r)), "
                                  "index=r.index, columns=r.columns)",
    "ufuncs on frames": "result = np.log1p(close.pct_change(fill_method=None)).abs() ** 0.5",
    "agg by name": "result = close.agg(['mean', 'max']).T",
    "high low range": "result = ((high - low) / close).rolling(14).mean()",
    "astype round": "result = (close.round(1) * 10).fillna(-1).astype('int64')",
    "combine_first": "result = close.iloc[:, :3].combine_first(high.iloc[:, :3])",
}

STDLIB = {
    "math statistics": "import math\nimport statistics\nv = full.iloc[-1].tolist()\n"
                       "result = [math.sqrt(v[0]), statistics.median(v), math.log(v[1])]",
    "datetime strptime timedelta": "import datetime\n"
                                   "d = datetime.datetime.strptime('20210104', '%Y%m%d') + datetime.timedelta(days=3)\n"
                                   "result = [d, close.index[0] + datetime.timedelta(days=1)]",
    "Timestamp strftime isoformat": "result = [close.index[-1].strftime('%Y-%m-%d'), close.index[0].isoformat(), "
                                    "close.index[5].day_name()]",
    "functools itertools": "import functools\nimport itertools\n"
                           "pairs = list(itertools.combinations(full.columns[:4], 2))\n"
                           "result = [functools.reduce(lambda a, b: a + b, range(10)), len(pairs), pairs[0][1]]",
    "collections Counter": "from collections import Counter\n"
                           "result = pd.Series(Counter(c.split('.')[1] for c in close.columns)).sort_index()",
    "decimal fractions operator": "from decimal import Decimal\nfrom fractions import Fraction\nimport operator\n"
                                  "result = [float(Decimal('1.1') * 3), float(Fraction(1, 3) * 3), "
                                  "operator.itemgetter(1)(list(close.columns))]",
    "print captured": "print(close.shape)\nresult = len(close)",
}

IDIOMS = {**NDARRAY, **LINALG, **RANDOM, **PANDAS, **STDLIB}


def _wide(frame: pd.DataFrame, field: str) -> pd.DataFrame:
    wide = frame.pivot(index="trade_date", columns="ts_code", values=field).iloc[:, :40]
    wide.index = pd.DatetimeIndex(pd.to_datetime(wide.index, format="%Y%m%d"), name="trade_date")
    return wide


@pytest.fixture(scope="module")
def inputs(shared_data: Path) -> dict[str, pd.DataFrame]:
    """One year of 40 CSI 300 names: close, high, low with their gaps, and `full` (names with no gap)."""
    frame = pd.read_parquet(shared_data / "cn_csi300_tushare" / "daily.parquet")
    frame = frame[(frame.trade_date >= "20210101") & (frame.trade_date <= "20211231")]
    close = _wide(frame, "close")
    assert close.isna().any().any(), "the inputs should keep the gaps of suspended days"
    return {"close": close, "high": _wide(frame, "high"), "low": _wide(frame, "low"),
            "full": close.dropna(axis=1)}


def _in_process(code: str, inputs: dict[str, pd.DataFrame]) -> Any:
    namespace: dict[str, Any] = {"pd": pd, "np": np, **{k: v.copy() for k, v in inputs.items()}}
    exec(code, namespace)  # noqa: S102 - trusted test code, the in-process reference
    return namespace["result"]


def assert_same(got: Any, want: Any) -> None:
    """Equal up to the last bits of floating point; lists element by element."""
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_freq=False, rtol=RTOL, atol=ATOL)
    elif isinstance(want, pd.Series):
        pd.testing.assert_series_equal(got, want, check_freq=False, rtol=RTOL, atol=ATOL)
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, list) and len(got) == len(want), (got, want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    elif isinstance(want, datetime.datetime):  # the codec hands every date back as a Timestamp
        assert isinstance(got, pd.Timestamp) and got == pd.Timestamp(want), (got, want)
    elif isinstance(want, (float, np.floating)):
        assert isinstance(got, float) and (math.isnan(got) if math.isnan(want) else got == pytest.approx(
            float(want), rel=RTOL, abs=ATOL)), (got, want)
    else:
        assert type(got) is type(want.item() if isinstance(want, np.generic) else want), (got, want)
        assert got == want


def test_the_battery_is_broad() -> None:
    assert len(IDIOMS) >= 50
    assert len(IDIOMS) == len(NDARRAY) + len(LINALG) + len(RANDOM) + len(PANDAS) + len(STDLIB)  # no name clash


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # the in-process run of "runtime warning"
@pytest.mark.parametrize("name", list(IDIOMS))
def test_idiom_matches_in_process(sandbox: Sandbox, inputs: dict[str, pd.DataFrame], name: str) -> None:
    code = textwrap.dedent(IDIOMS[name])
    want = _in_process(code, inputs)
    res = sandbox.run(code, inputs)
    assert res.ok, res.error
    assert_same(res.outputs["result"], want)


def test_captured_print_matches(sandbox: Sandbox, inputs: dict[str, pd.DataFrame]) -> None:
    res = sandbox.run(STDLIB["print captured"], inputs)
    assert res.stdout == f"{inputs['close'].shape}\n"
