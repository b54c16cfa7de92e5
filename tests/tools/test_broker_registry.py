"""The account registry: which broker serves which account, from the settings (QUANTDESK_BROKER, and an account's
own in QUANTDESK_BROKER_ACCOUNTS), the brokers loaded on first use, and the one line a live server that does not
answer gets at start."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine

from testkit.paper import CONFIG
from testkit.vnpy import free_address
from tools.broker.accounts import BrokerEnv, brokers_from_settings, start_problems
from tools.broker.vnpy_wire import RemoteAddressRefused
from tools.data.local import SampleProvider
from tools.settings import Settings


def _settings(tmp_path: Path, **env: str) -> Settings:
    return Settings(_env_file=None, DATABASE_URL=f"sqlite:///{tmp_path / 'q.db'}",  # type: ignore[call-arg]
                    QUANTDESK_DATA_DIR=str(tmp_path / "home"), **env)


def test_each_account_gets_the_broker_the_settings_name(sqlite_engine: Engine, tmp_path: Path) -> None:
    silent = free_address()
    settings = _settings(tmp_path, QUANTDESK_BROKER_ACCOUNTS="desk2=vnpy", QUANTDESK_VNPY_REQ_ADDRESS=silent,
                         QUANTDESK_VNPY_SUB_ADDRESS=free_address(), QUANTDESK_VNPY_TIMEOUT="0.5")
    env = BrokerEnv(sqlite_engine, SampleProvider(), CONFIG, settings)
    open_broker = brokers_from_settings(env)
    assert (open_broker("default", None).kind, open_broker("desk2", None).kind) == ("paper", "vnpy")
    assert start_problems(env) == [f"the VeighNa server at {silent} does not answer"]
    assert start_problems(BrokerEnv(sqlite_engine, SampleProvider(), CONFIG, _settings(tmp_path))) == []


def test_a_remote_veighna_address_is_refused_unless_allowed(sqlite_engine: Engine, tmp_path: Path) -> None:
    remote = {"QUANTDESK_BROKER": "vnpy", "QUANTDESK_VNPY_REQ_ADDRESS": "tcp://10.20.30.40:2014",
              "QUANTDESK_VNPY_SUB_ADDRESS": "tcp://10.20.30.40:4102"}
    open_broker = brokers_from_settings(BrokerEnv(sqlite_engine, SampleProvider(), CONFIG,
                                                  _settings(tmp_path, **remote)))
    with pytest.raises(RemoteAddressRefused):
        open_broker("default", None)
    allowed = _settings(tmp_path, QUANTDESK_VNPY_ALLOW_REMOTE="true", **remote)
    assert brokers_from_settings(BrokerEnv(sqlite_engine, SampleProvider(), CONFIG, allowed))(
        "default", None).kind == "vnpy"


def test_an_unknown_broker_kind_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="is not ACCOUNT=paper or ACCOUNT=vnpy"):
        _settings(tmp_path, QUANTDESK_BROKER_ACCOUNTS="desk2=ib")
    with pytest.raises(ValidationError):
        _settings(tmp_path, QUANTDESK_BROKER="ib")
