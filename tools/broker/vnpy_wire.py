"""The wire to a VeighNa trader (vn.py 4.x) through its RPC service (vnpy_rpcservice): VeighNa's own RpcClient,
with what QuantDesk needs around it. Only tools/broker/vnpy.py imports this module, and only this module imports
VeighNa, which is optional (README "Live orders through VeighNa"); it imports no Qt and not
`vnpy.trader.utility`, which would create a `.vntrader` folder and change `sys.path`.

- VeighNa's RPC is pickle over unauthenticated ZeroMQ: an address that is not loopback is refused unless allowed.
- Its RpcClient cannot be reused after a timeout (its REQ socket waits for the lost reply): a call that times out
  closes the client, and the next call opens a new one.
- Its enums' values are translated ("多" or "Long" by the locale) and pickled by value, so the two ends must agree:
  here they are sent by member name and read back in either language (`portable_enums`)."""

from __future__ import annotations

import gettext
import importlib
import ipaddress
import logging
import signal
import socket
import threading
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any
from urllib.parse import urlparse

import zmq
from vnpy.trader import constant
from vnpy.trader.locale import localedir

log = logging.getLogger(__name__)


def _import_keeping_signals(name: str) -> Any:
    """Import a VeighNa module whose import calls `signal.signal(SIGINT, SIG_DFL)` (vnpy/rpc/common.py): that would
    drop the bot's own Ctrl-C handling, and fails outside the main thread (the registry loads brokers where it
    first needs one). The call is skipped for the import's duration."""
    original = signal.signal
    signal.signal = lambda signalnum, handler: signal.getsignal(signalnum)  # type: ignore[assignment]
    try:
        return importlib.import_module(name)
    finally:
        signal.signal = original


RpcClient = _import_keeping_signals("vnpy.rpc").RpcClient
RemoteException = importlib.import_module("vnpy.rpc.client").RemoteException

EXCHANGES = {"SH": "SSE", "SZ": "SZSE", "BJ": "BSE"}  # ts_code suffix -> VeighNa's Exchange member name
SUFFIXES = {name: suffix for suffix, name in EXCHANGES.items()}
TRANSLATED = (constant.Direction, constant.Offset, constant.Status, constant.Product, constant.OrderType,
              constant.OptionType, constant.Interval)


class Silent(ConnectionError):
    """The server did not answer in time (or cannot be reached)."""


class RemoteAddressRefused(ValueError):
    """An address that is not loopback, without QUANTDESK_VNPY_ALLOW_REMOTE."""


def loopback(address: str) -> bool:
    """Whether a ZeroMQ tcp:// address names this machine only (127.0.0.0/8, ::1, localhost)."""
    host = urlparse(address).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except OSError:
            return False


def _by_name(member: Enum, _protocol: int) -> tuple[Any, tuple[Any, str]]:
    return getattr, (type(member), member.name)


def portable_enums() -> None:
    """Send VeighNa's translated enums by member name (the server reads its own member, in its own language) and
    read them back in Chinese or English, whichever language the server runs in. Idempotent."""
    catalog: dict[str, str] = getattr(gettext.translation("vnpy", localedir=localedir, languages=["en"],
                                                          fallback=True), "_catalog", {})
    chinese = {english: msgid for msgid, english in catalog.items() if msgid}
    for kind in TRANSLATED:
        if getattr(kind, "_quantdesk_portable", False):
            continue
        names: dict[str, Enum] = {}
        for member in kind:
            value = str(member.value)
            for spelling in (value, catalog.get(value), chinese.get(value)):
                if spelling:
                    names[spelling] = member
        kind._missing_ = classmethod(lambda cls, value, names=names: names.get(value))  # type: ignore[assignment,method-assign]
        kind.__reduce_ex__ = _by_name  # type: ignore[assignment,method-assign]
        kind._quantdesk_portable = True  # type: ignore[attr-defined]


def vnpy_symbol(ts_code: str) -> tuple[str, constant.Exchange]:
    """600519.SH -> ("600519", Exchange.SSE); .SZ -> SZSE; .BJ -> BSE."""
    code, _dot, suffix = ts_code.partition(".")
    if suffix.upper() not in EXCHANGES:
        raise ValueError(f"{ts_code} is not a Shanghai, Shenzhen or Beijing stock code")
    return code, constant.Exchange[EXCHANGES[suffix.upper()]]


def ts_code(symbol: str, exchange: constant.Exchange) -> str | None:
    """("600519", Exchange.SSE) -> 600519.SH; None for an exchange QuantDesk does not trade."""
    suffix = SUFFIXES.get(exchange.name)
    return f"{symbol}.{suffix}" if suffix else None


class _Client(RpcClient):  # type: ignore[misc]
    def __init__(self, on_event: Callable[[Any], None]) -> None:
        super().__init__()
        self._on_event = on_event
        self._lapsed_at: object = object()  # the last heartbeat heard before the lapse last reported

    def start(self, req_address: str, sub_address: str) -> None:
        """RpcClient.start, with a daemon thread (a process ends without waiting out its 30 s heartbeat poll) and
        sockets that drop unsent messages on close."""
        for sock in (self._socket_req, self._socket_sub):
            sock.setsockopt(zmq.LINGER, 0)
        self._socket_req.connect(req_address)
        self._socket_sub.connect(sub_address)
        self._active = True
        self._thread = threading.Thread(target=self.run, name="vnpy-rpc", daemon=True)
        self._thread.start()

    def callback(self, topic: str, data: Any) -> None:
        self._on_event(data)

    def on_disconnected(self) -> None:
        """Said once per lapse (the client's thread calls this every 30 s the server stays silent)."""
        if self._last_received_ping != self._lapsed_at:
            self._lapsed_at = self._last_received_ping
            log.warning("the VeighNa server's heartbeat stopped")


class Wire:
    """One RPC connection to a VeighNa server, opened again after a timeout. Of the events it publishes, its
    gateways' log lines are kept (`logs`: a rejection's reason is one), and each goes to `on_event` (VeighNa's
    Event objects, from the client's thread)."""

    def __init__(self, req_address: str, sub_address: str, timeout: float,
                 on_event: Callable[[Any], None] | None = None, *, allow_remote: bool = False) -> None:
        for address in (req_address, sub_address):
            if not allow_remote and not loopback(address):
                raise RemoteAddressRefused(address)
        portable_enums()
        self.req_address, self.sub_address, self.timeout = req_address, sub_address, timeout
        self._on_event = on_event
        self.logs: deque[tuple[str, str]] = deque(maxlen=500)  # (gateway, message), oldest first
        self.logged = 0  # log lines heard since the wire opened (`logs` keeps the latest 500)
        self._client: _Client | None = None
        self._lock = threading.Lock()

    def call(self, name: str, *args: Any) -> Any:
        """A remote call; raises Silent when the server does not answer in time (the client is dropped)."""
        with self._lock:
            client = self._client
            if client is None:
                client = self._client = _Client(self._heard)
                client.subscribe_topic("")
                client.start(self.req_address, self.sub_address)
        try:
            return getattr(client, name)(*args, timeout=int(self.timeout * 1000))
        except RemoteException as exc:
            if str(exc).startswith("Timeout of"):
                self._drop(client)
                raise Silent(self.req_address) from None
            raise

    def logs_since(self, logged: int) -> list[tuple[str, str]]:
        """The log lines heard after the first `logged` (a `logged` read earlier), of those still kept."""
        return list(self.logs)[len(self.logs) - min(self.logged - logged, len(self.logs)):]

    def _heard(self, event: Any) -> None:
        data = getattr(event, "data", None)
        if str(getattr(event, "type", "")).startswith("eLog") and hasattr(data, "msg"):
            self.logs.append((str(getattr(data, "gateway_name", "")), str(data.msg)))
            self.logged += 1
        if self._on_event is not None:
            self._on_event(event)

    def _drop(self, client: _Client) -> None:
        with self._lock:
            if self._client is client:
                self._client = None
        client.stop()  # its thread closes its sockets when it ends

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.stop()  # its thread closes its sockets at its next poll
