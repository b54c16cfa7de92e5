"""Console sessions several tests type: every workflow driven in Chinese with no LLM (the English twin is in
tests/bot/console/test_console_chinese.py, which compares their numbers), and the rule they add."""

from __future__ import annotations

RULE = "buy when close > ma(30); sell when close < ma(30)"

CHINESE = """lang zh
信号 均线交叉 贵州茅台 2019年1月2日 2019年12月31日
fast＝10 slow＝30
因子 动量 2019年3月1日 2020年6月1日 window＝20
批准
因子 反转 2019年3月1日 2020年6月1日
编辑
return -(close / close.shift(10) - 1)
.
批准
因子 波动率 2019年3月1日 2020年6月1日
拒绝 不需要
分析 600519.SH
规则 添加 600519.SH “buy when close > ma(30); sell when close < ma(30)” size=100
规则 回测 1 2020年1月2日 2020年6月30日
规则 运行 1
批准
下单 平安银行 买入 1000股
批准
账户
"""
