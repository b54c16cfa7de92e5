"""A private PostgreSQL cluster for one test: initdb into a temporary folder with the installed server binaries
(/usr/lib/postgresql/*/bin), on a port of its own, run as `postgres` when the tests run as root. A test that
restarts PostgreSQL restarts this one, never the shared server other tests (and other pytest-xdist workers) use."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

SERVER_BINARIES = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
ADMIN = "postgres"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateCluster:
    """`start()`, `restart()` (a fast shutdown: sessions are cut, as `pg_ctlcluster … restart` does) and `stop()`;
    `url(name)` for a database on it."""

    def __init__(self) -> None:
        if not SERVER_BINARIES:
            pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.bin = SERVER_BINARIES[-1]
        self.root = Path(tempfile.mkdtemp(prefix="quantdesk-pg-"))  # not under pytest's folder: root's alone
        self.data, self.log = self.root / "data", self.root / "server.log"
        self.port = _free_port()
        self._as = ["runuser", "-u", ADMIN, "--"] if os.geteuid() == 0 else []  # initdb refuses to run as root
        if self._as:
            shutil.chown(self.root, ADMIN)

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}{log[-2000:]}")

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", *args)

    def start(self) -> PrivateCluster:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", ADMIN, "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        self._ctl("start")
        return self

    def restart(self) -> None:
        self._ctl("-m", "fast", "restart")

    def down(self) -> None:
        """Stop the server (a fast shutdown), keeping its data for `up`."""
        self._ctl("-m", "fast", "stop")

    def up(self) -> None:
        self._ctl("start")

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        try:
            self._ctl("-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, name: str = ADMIN) -> str:
        return f"postgresql://{ADMIN}@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
