from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.startup import build_context
from testkit.paths import REPO
from tools.settings import Settings, SettingsError, get_settings

SECRETS = {
    "TUSHARE_TOKEN": "tushare-secret-123",
    "OPENAI_API_KEY": "sk-secret-456",
    "SLACK_BOT_TOKEN": "xoxb-secret-789",
    "SLACK_APP_TOKEN": "xapp-secret-000",
    "SLACK_SIGNING_SECRET": "signing-secret-111",
    "DATABASE_URL": "postgresql://app:dbpass-222@db.internal/quant",
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in [*SECRETS, "QUANTDESK_DATA_DIR", "QUANTDESK_APPROVERS", "QUANTDESK_MODEL"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_are_embedded(clean_env: Path) -> None:
    settings = Settings(QUANTDESK_DATA_DIR=str(clean_env / "data"))
    assert settings.database_url_value == f"sqlite:///{clean_env / 'data' / 'quantdesk.db'}"
    assert settings.data_provider == "auto"
    assert not settings.llm_configured
    assert settings.tushare_api_url == "http://api.tushare.pro"


def test_reads_environment_and_splits_approvers(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_APPROVERS", "U01, U02,,U03 ")
    monkeypatch.setenv("QUANTDESK_MODEL", "deepseek-chat")
    monkeypatch.setenv("DATABASE_URL", SECRETS["DATABASE_URL"])
    settings = Settings()
    assert settings.approvers == frozenset({"U01", "U02", "U03"})
    assert settings.model == "deepseek-chat"
    assert settings.database_url_value == SECRETS["DATABASE_URL"]


def test_reads_dotenv_file(clean_env: Path) -> None:
    (clean_env / ".env").write_text("OPENAI_BASE_URL=http://127.0.0.1:8000/v1\nQUANTDESK_LIGHT_MODEL=qwen\n")
    settings = Settings()
    assert settings.openai_base_url == "http://127.0.0.1:8000/v1"
    assert settings.light_model == "qwen"
    assert settings.llm_configured


def test_secrets_never_in_repr_or_logs(clean_env: Path, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("test").info("settings: %s / %r", settings, settings)
    shown = repr(settings) + str(settings) + caplog.text + str(settings.model_dump())
    for value in SECRETS.values():
        assert value not in shown
    assert settings.tushare_token is not None
    assert settings.tushare_token.get_secret_value() == SECRETS["TUSHARE_TOKEN"]


def test_every_setting_is_documented_in_env_example() -> None:
    """.env.example names every environment variable the settings read (set, or commented out with its default)."""
    text = (REPO / ".env.example").read_text(encoding="utf-8")
    names = [field.alias or name for name, field in Settings.model_fields.items()]
    missing = [n for n in names if not re.search(rf"^#? ?{re.escape(n)}=", text, re.MULTILINE)]
    assert not missing, f"not in .env.example: {missing}"


@pytest.mark.parametrize(("typed", "language"), [("zh", "zh-CN"), (" zh_Hans ", "zh-CN"), ("中文", "zh-CN"),
                                                 ("zh-CN", "zh-CN"), ("en_GB", "en"), ("English", "en"), ("en", "en")])
def test_the_language_is_read_as_people_type_it(clean_env: Path, monkeypatch: pytest.MonkeyPatch, typed: str,
                                                language: str) -> None:
    monkeypatch.setenv("QUANTDESK_LANGUAGE", typed)
    assert Settings().language == language
    assert Settings(QUANTDESK_LANGUAGE=typed).language == language


def _refusal(monkeypatch: pytest.MonkeyPatch, **environment: str) -> str:
    """What the settings say when read with `environment` set: they must refuse it."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsError) as refused:
            get_settings()
    finally:
        get_settings.cache_clear()
    return str(refused.value)


@pytest.mark.parametrize("typed", ["zh_TW", "zh-Hant", "fr", "klingon", ""])
def test_an_unknown_language_is_one_line_naming_what_works(clean_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                           typed: str) -> None:
    (line,) = _refusal(monkeypatch, QUANTDESK_LANGUAGE=typed).splitlines()
    assert line.startswith(f"QUANTDESK_LANGUAGE: {typed!r} is not a language QuantDesk speaks; use zh-CN (")
    assert all(word in line for word in ("zh-Hans", "cn", "中文", "en-GB", "english", "英语"))


def test_a_settings_error_names_each_bad_setting_but_never_its_value(clean_env: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = _refusal(monkeypatch, QUANTDESK_FEE_RATE="lots", QUANTDESK_DATA_PROVIDER="sk-secret-456")
    assert refusal.splitlines() == [
        "QUANTDESK_DATA_PROVIDER: Input should be 'auto', 'sample', 'local' or 'tushare'",
        "QUANTDESK_FEE_RATE: Input should be a valid number, unable to parse string as a number"]


def test_a_money_budget_needs_the_price_table_that_prices_it(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _refusal(monkeypatch, QUANTDESK_MONEY_BUDGET_PERSON_DAY="5.00").splitlines() == [
        "settings: QUANTDESK_MONEY_BUDGET_PERSON_DAY and QUANTDESK_MONEY_BUDGET_CHANNEL_DAY need "
        "QUANTDESK_MODEL_PRICES (MODEL=INPUT/OUTPUT per million tokens) to price the calls"]
    assert _refusal(monkeypatch, QUANTDESK_MONEY_BUDGET_CHANNEL_DAY="-1", QUANTDESK_MODEL_PRICES="gpt-4o=2.5/10") == (
        "QUANTDESK_MONEY_BUDGET_CHANNEL_DAY: Input should be greater than 0")


def test_the_embedded_databases_lock_wait_comes_from_the_settings(clean_env: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_SQLITE_BUSY_SECONDS", "2.5")
    app = build_context(Settings(_env_file=None, QUANTDESK_DATA_DIR=str(clean_env / "data")))
    with app.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 2500
    with pytest.raises(ValidationError):
        Settings(_env_file=None, QUANTDESK_SQLITE_BUSY_SECONDS="0")
