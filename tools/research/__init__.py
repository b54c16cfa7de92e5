"""Research code: backtests and their figures, indicators (TA-Lib conventions), the look-ahead check, charts."""
