"""Phrasings typed as Chinese and English quants type them, many without spaces, each with what the one reader
(graphs/conversation.py) reads it as: tests/graphs/test_conversation.py asserts them, bench/conversation.py times
them."""

MAOTAI, PINGAN, PINGAN_INSURANCE = "600519.SH", "000001.SZ", "601318.SH"

PHRASINGS: list[tuple[str, str | None, tuple[object, ...]]] = [
    # conversation words
    ("帮助", None, ("help",)), ("help", None, ("help",)), ("状态", None, ("status",)), ("status", None, ("status",)),
    ("语言 中文", None, ("lang", "中文")), ("lang en", None, ("lang", "en")), ("待办 2", None, ("pending", "2")),
    ("退出", None, ("leave",)), ("quit", None, ("leave",)), ("取消", None, ("cancel",)), ("cancel", None, ("cancel",)),
    ("codes", None, ("localcommand",)),
    # account and desk commands
    ("账户", None, ("command", "account [NAME]", [])), ("持仓", None, ("command", "account [NAME]", [])),
    ("account", None, ("command", "account [NAME]", [])),
    ("委托 全部", None, ("command", "orders [open|today|all]", ["all"])),
    ("今日委托", None, ("command", "orders [open|today|all]", ["today"])),
    ("orders open", None, ("command", "orders [open|today|all]", ["open"])),
    ("交易开关 关 收盘前暂停，等通知", None, ("command", "trading [on|off]", ["off", "收盘前暂停，等通知"])),
    ("trading off 恢复 later", None, ("command", "trading [on|off]", ["off", "恢复", "later"])),
    ("时钟 下一日", None, ("command", "clock [next", ["next"])), ("时钟 设置 2020年6月1日", None,
                                                               ("command", "clock [next", ["set", "20200601"])),
    ("授权", None, ("command", "mandate [NAME]", [])), ("决策 600519.SH", None, ("command", "decisions [CODE]",
                                                                              ["600519.SH"])),
    ("撤单 12", None, ("command", "cancel ORDER", ["12"])), ("cancel 12", None, ("command", "cancel ORDER", ["12"])),
    ("撤单", None, ("cancel",)),  # alone: withdraw what waits (an order card), as `cancel`
    ("cancel", "approval", ("cancel",)),
    # rule and factor commands, noun first and verb first, spaced or not
    ("列出所有因子", None, ("command", "factor list", ["all"])), ("factor list", None, ("command", "factor list", [])),
    ("因子列表", None, ("command", "factor list", [])), ("规则清单", None, ("command", "rule list", [])),
    ("所有规则", None, ("command", "rule list", ["all"])), ("列出规则", None, ("command", "rule list", [])),
    ("rule list mine", None, ("command", "rule list", ["mine"])),
    ("删除规则 2", None, ("command", "rule delete", ["2"])), ("删除规则2", None, ("command", "rule delete", ["2"])),
    ("delete rule 2", None, ("command", "rule delete", ["2"])), ("恢复规则 2", None, ("command", "rule resume", ["2"])),
    ("暂停规则 2 财报前", None, ("command", "rule pause", ["2", "财报前"])),
    ("回测规则 2 20200101 20200601", None, ("command", "rule backtest", ["2", "20200101", "20200601"])),
    ("规则 回测 2 2020年1月1日至2020年6月1日", None, ("command", "rule backtest", ["2", "20200101", "20200601"])),
    ("规则 添加 600519.SH “收盘价上穿30日均线买入” size=100", None,
     ("command", "rule add", ["600519.SH", "收盘价上穿30日均线买入", "size=100"])),
    ("规则 定时 2 “30 9 * * 1-5” 强制 先用模拟盘观察 恢复", None,  # the reason as typed: 恢复 is not `resume`
     ("command", "rule schedule", ["2", "30 9 * * 1-5", "强制", "先用模拟盘观察", "恢复"])),
    # requests: signal
    ("信号 均线交叉 600519.SH 20190102 20191231 快线=10 慢线＝30", None,
     ("request", "signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {"fast": "10", "slow": "30"}, ())),
    ("帮我生成一个均线金叉信号 贵州茅台 2018年3月1日至2019年6月1日", None,
     ("request", "signal", "ma_cross", (MAOTAI,), "20180301", "20190601", {}, ())),
    ("唐奇安通道 贵州茅台 20190102-20191231 窗口=20", None,
     ("request", "signal", "channel", (MAOTAI,), "20190102", "20191231", {"window": "20"}, ())),
    ("信号，布林带，平安银行，从2019年1月2日到2019年12月31日。", None,
     ("request", "signal", "bollinger", (PINGAN,), "20190102", "20191231", {}, ())),
    ("回测一下均线交叉策略 茅台 20190102 20191231", None,
     ("request", "signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {}, ())),
    ("信号 均线交叉 贵州茅台 20190102 20191231 香蕉", None,
     ("request", "signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {}, ("香蕉",))),
    ("signal ma_cross 600519.SH 20190102 20191231 fast=10", None,
     ("request", "signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {"fast": "10"}, ())),
    # requests: factor
    ("因子 反转 20180102 20191231 窗口＝10", None,
     ("request", "factor", "reversal", (), "20180102", "20191231", {"window": "10"}, ())),
    ("帮我算一个换手率因子 2019.3.1 2020.6.1 周期=20", None,
     ("request", "factor", "turnover", (), "20190301", "20200601", {"window": "20"}, ())),
    ("factor momentum 20190301 20200601 window=20", None,
     ("request", "factor", "momentum", (), "20190301", "20200601", {"window": "20"}, ())),
    # requests: orders, bare sides, units
    ("买入 000001.SZ 200股 限价 12.5", None, ("request", "order", PINGAN, "buy", 200, "12.50")),
    ("卖出 601318.SH 300股", None, ("request", "order", PINGAN_INSURANCE, "sell", 300, None)),
    ("买 平安银行 1000股", None, ("request", "order", PINGAN, "buy", 1000, None)),
    ("买平安银行2手", None, ("request", "order", PINGAN, "buy", 200, None)),
    ("下单 贵州茅台 买入 1手 限价=1700", None, ("request", "order", MAOTAI, "buy", 100, "1700.00")),
    ("buy 000001.SZ 200 limit=12.5", None, ("request", "order", PINGAN, "buy", 200, "12.50")),
    ("买入 600519 1手", None, ("request", "order", "600519 is not a ts_code (like 600519.SH or 000001.SZ)")),
    ("order 600519.SH sell 100", None, ("request", "order", MAOTAI, "sell", 100, None)),
    # requests: analyze and rule runs
    ("分析 贵州茅台 2020年6月30日 深度=2", None, ("request", "analyze", MAOTAI, "20200630", 2)),
    ("请分析一下贵州茅台", None, ("request", "analyze", MAOTAI, None, 1)),
    ("analyze 600519.SH depth=2", None, ("request", "analyze", MAOTAI, None, 2)),
    ("运行规则 1", None, ("request", "rule")), ("rule run 1", None, ("request", "rule")),
    # answers to the question a thread waits on
    ("是", "clarify", ("answer", "是")), ("对", "clarify", ("answer", "对")), ("1", "clarify", ("answer", "1")),
    ("20180102-20181228", "clarify", ("answer", "20180102-20181228")),
    ("批准", "approval", ("answer", "approve")), ("同意", "code_review", ("answer", "approve")),
    ("编辑 数量=200", "approval", ("answer", "edit quantity=200")),
    ("修改 限价：12.8", "approval", ("answer", "edit limit=12.8")),
    ("拒绝 价格太高，等回调", "approval", ("answer", "reject 价格太高，等回调")),
    ("卖出 601318.SH 300股", "approval", ("request", "order", PINGAN_INSURANCE, "sell", 300, None)),
    ("账户", "approval", ("command", "account [NAME]", [])),
    # free text for the router
    ("帮我看看茅台最近怎么样", None, ("freetext",)), ("what should I buy today", None, ("freetext",)),
]
