"""A real VeighNa RPC server for the tests, in a process of its own (testkit/children/vnpy_server.py: a MainEngine,
vnpy_rpcservice's RPC engine, and a test gateway), on loopback ports of its own; the test commands its gateway over
a second RPC address. Its `.vntrader` folder is made in a folder of the server's own, never in a test's home."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testkit.wait import wait_until
from tools.broker.vnpy import close_wires
from tools.broker.vnpy_wire import Wire

ROOT = Path(__file__).resolve().parents[1]


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{probe.getsockname()[1]}"


class VnpyServer:
    """The server process: start, kill and start again on the same addresses; `call` commands its gateway."""

    def __init__(self, folder: Path, language: str = "en") -> None:
        self.folder, self.language = folder, language
        self.req, self.pub, self.control, self.control_pub = (free_address() for _ in range(4))
        self.process: subprocess.Popen[bytes] | None = None
        self._control: Wire | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        home = self.folder / f"server{self.starts}"
        (home / ".vntrader").mkdir(parents=True)
        log = home / "server.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "LANGUAGE": self.language}
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "testkit.children.vnpy_server", self.req, self.pub, self.control,
                 self.control_pub], cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT)
        process = self.process
        wait_until(lambda: b"ready" in log.read_bytes(), "the VeighNa server to start", 60,
                   gone=lambda: None if process.poll() is None else f"it exited: {log.read_text()}")
        self._control = Wire(self.control, self.control_pub, 10)

    def call(self, name: str, *args: Any) -> Any:
        assert self._control is not None
        return self._control.call(name, *args)

    def received(self) -> list[dict[str, Any]]:
        return list(self.call("received"))

    def kill(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@contextmanager
def vnpy_server(folder: Path, language: str = "en") -> Iterator[VnpyServer]:
    server = VnpyServer(folder, language)
    server.start()
    try:
        yield server
    finally:
        close_wires()  # the process's connection to this server goes with it
        server.kill()
