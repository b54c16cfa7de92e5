"""A `quantdesk chat` session against a real VeighNa RPC server (QUANTDESK_BROKER=vnpy; testkit/vnpy.py): the order
card's first check is the server's answer, the approved order is sent to the gateway once, the gateway's fill
reaches the session unasked as the gateway reports it (its trade event runs the console's settle pass), and
`account` shows the broker's position and cash. The README's console session is this one."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from testkit.console import cli_env
from testkit.vnpy import vnpy_server
from testkit.wait import wait_until


def test_a_console_order_goes_to_the_gateway_and_its_fill_comes_back(tmp_path: Path) -> None:
    # the locales crossed the other way from tests/tools/test_vnpy_broker.py: VeighNa's enums are Chinese in the
    # bot's process (its locale) and English in the server's, and VeighNa pickles them by value
    with vnpy_server(tmp_path / "trader", "en") as server:
        env = cli_env(tmp_path, QUANTDESK_BROKER="vnpy", QUANTDESK_VNPY_REQ_ADDRESS=server.req,
                      QUANTDESK_VNPY_SUB_ADDRESS=server.pub, QUANTDESK_DATA_PROVIDER="sample", LANGUAGE="zh_CN",
                      LC_ALL="C.UTF-8")
        chat = subprocess.Popen([sys.executable, "-m", "bot.cli", "chat"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        assert chat.stdin is not None and chat.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(chat.stdout or ()), daemon=True)
        reader.start()

        def said(text: str) -> bool:
            return any(text in line for line in list(lines))

        def say(text: str) -> None:
            assert chat.stdin is not None
            chat.stdin.write(text + "\n")
            chat.stdin.flush()

        try:
            say("order 600519.SH buy 100 limit=1700")
            wait_until(lambda: said("--- approve | edit"), "the order card", 120, seen=lambda: "".join(lines))
            assert said("PASS broker: sent to XTP")
            say("approve")
            wait_until(lambda: said("Order 1 submitted"), "the approval's outcome", 120, seen=lambda: "".join(lines))
            (sent,) = server.received()
            assert (sent["symbol"], sent["direction"], sent["volume"], sent["price"]) == ("600519", "LONG", 100.0,
                                                                                          1700.0)
            server.call("fill", sent["orderid"], 100.0, 1700.0)
            # the gateway's trade event runs the settle pass at once (the settle job's own interval is 60 s)
            wait_until(lambda: said("Order 1 filled: BUY 100 600519.SH at 1700.00"), "the fill, unasked", 45,
                       seen=lambda: "".join(lines))
            say("account")
            wait_until(lambda: said("positions and cash are the VeighNa server's (XTP)"), "the account", 120,
                       seen=lambda: "".join(lines))
        finally:
            chat.stdin.close()
            chat.wait(60)
        printed = "".join(lines)
        assert "filled 100 @ 1700.00 by XTP (trade 1)" in printed
        assert "Account console (XTP through VeighNa)" in printed and "cash 830,000.00" in printed
        assert len(server.received()) == 1
        print(printed)
