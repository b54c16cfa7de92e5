"""Rebuild the bundled sample in tools/data/sample from ../shared/data (maintainers only)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

SOURCE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cn_csi300_baostock_qfq" / "daily.parquet"
TARGET = Path(__file__).resolve().parents[1] / "tools" / "data" / "sample"
FIRST_DATE = "20190101"
BARS = ["ts_code", "trade_date", "open", "high", "low", "close", "pre_close", "pct_chg", "vol", "amount"]


def main() -> int:
    frame = pd.read_parquet(SOURCE)
    frame = frame[(frame["tradestatus"] == 1) & (frame["trade_date"] >= FIRST_DATE)]
    frame = frame.sort_values(["ts_code", "trade_date"], ignore_index=True)
    frame[BARS].to_parquet(TARGET / "daily.parquet", compression="zstd", index=False)
    frame[["ts_code", "trade_date", "turnover_rate"]].to_parquet(
        TARGET / "daily_basic.parquet", compression="zstd", index=False
    )
    print(f"{len(frame)} rows, {frame['ts_code'].nunique()} codes, "
          f"{frame['trade_date'].min()}..{frame['trade_date'].max()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
