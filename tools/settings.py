"""The one settings object: every configuration value, read from the environment and `.env`."""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tools.i18n.languages import DEFAULT_LANGUAGE, Language, choice_of, choices_text

DEFAULT_DATA_DIR = Path.home() / ".quantdesk"


class Settings(BaseSettings):
    """QuantDesk configuration. Secrets are `SecretStr`: they never show in reprs or logs."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # storage
    database_url: SecretStr | None = Field(default=None, alias="DATABASE_URL")
    data_dir: Path = Field(default=DEFAULT_DATA_DIR, alias="QUANTDESK_DATA_DIR")
    artifact_retention_days: int = Field(default=30, ge=0, alias="QUANTDESK_ARTIFACT_RETENTION_DAYS")  # 0: keep
    # how long a write to the embedded SQLite database waits for another writer's lock before it fails (and its
    # job or decision is retried)
    sqlite_busy_seconds: float = Field(default=30.0, gt=0, le=600, alias="QUANTDESK_SQLITE_BUSY_SECONDS")

    # market data
    data_provider: Literal["auto", "sample", "local", "tushare"] = Field(
        default="auto", alias="QUANTDESK_DATA_PROVIDER"
    )
    local_data_path: Path | None = Field(default=None, alias="QUANTDESK_LOCAL_DATA")
    local_price_basis: Literal["unadjusted", "forward-adjusted", "unknown"] = Field(
        default="unknown", alias="QUANTDESK_LOCAL_PRICE_BASIS")
    tushare_token: SecretStr | None = Field(default=None, alias="TUSHARE_TOKEN")
    tushare_api_url: str = Field(default="http://api.tushare.pro", alias="TUSHARE_API_URL")
    cache_recent_days: int = Field(default=7, ge=0, alias="QUANTDESK_CACHE_RECENT_DAYS")
    cache_recent_ttl: float = Field(default=600.0, ge=0, alias="QUANTDESK_CACHE_RECENT_TTL")

    # LLM
    openai_api_key: SecretStr | None = Field(default=None, alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    model: str = Field(default="gpt-4o", alias="QUANTDESK_MODEL")
    light_model: str = Field(default="gpt-4o-mini", alias="QUANTDESK_LIGHT_MODEL")
    deep_model: str | None = Field(default=None, alias="QUANTDESK_DEEP_MODEL")  # judges; empty: the main model
    llm_timeout_seconds: float = Field(default=60.0, gt=0, alias="QUANTDESK_LLM_TIMEOUT")
    # `quantdesk eval`'s price table: MODEL=INPUT/OUTPUT per million tokens, e.g. gpt-4o=2.50/10.00 (one currency)
    model_prices: Annotated[dict[str, tuple[Decimal, Decimal]], NoDecode] = Field(
        default_factory=dict, alias="QUANTDESK_MODEL_PRICES")

    # Slack
    slack_bot_token: SecretStr | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_URL")
    # Feishu (Lark): `quantdesk serve --surface feishu` (bot/feishu/); FEISHU_DOMAIN: feishu, lark or an origin URL
    feishu_app_id: str | None = Field(default=None, alias="FEISHU_APP_ID")
    feishu_app_secret: SecretStr | None = Field(default=None, alias="FEISHU_APP_SECRET")
    feishu_verification_token: SecretStr | None = Field(default=None, alias="FEISHU_VERIFICATION_TOKEN")
    feishu_encrypt_key: SecretStr | None = Field(default=None, alias="FEISHU_ENCRYPT_KEY")
    feishu_domain: str = Field(default="feishu", alias="FEISHU_DOMAIN")
    approvers: Annotated[frozenset[str], NoDecode] = Field(default=frozenset(), alias="QUANTDESK_APPROVERS")
    # an assistant thread's status (assistant.threads.setStatus) is set again this often: Slack drops it after ~2 min
    assistant_status_refresh_seconds: float = Field(default=90.0, gt=0, le=110,
                                                    alias="QUANTDESK_ASSISTANT_STATUS_REFRESH")
    # LangGraph Studio / Agent Server callers (bot/studio_auth.py): "SLACK_USER_ID:SHA256_HEX,..." (token hashes)
    studio_tokens: SecretStr | None = Field(default=None, alias="QUANTDESK_STUDIO_TOKENS")
    # the audit chains' heads (tools/audit/signing.py): writers sign with the Ed25519 private key in this PEM file
    # (`quantdesk audit keygen`); `audit verify` checks with the public keys, "KEY_ID:BASE64,..." (old ones kept)
    audit_signing_key: Path | None = Field(default=None, alias="QUANTDESK_AUDIT_SIGNING_KEY")
    audit_verify_keys: str = Field(default="", alias="QUANTDESK_AUDIT_VERIFY_KEYS")
    # legacy: the HMAC-SHA256 key heads were signed with before Ed25519; only `audit verify` reads it now
    audit_key: SecretStr | None = Field(default=None, alias="QUANTDESK_AUDIT_KEY")
    # witnesses of the signed heads outside the database: an append-only JSON-lines file, a Slack channel id
    audit_witness_file: Path | None = Field(default=None, alias="QUANTDESK_AUDIT_WITNESS_FILE")
    audit_channel: str = Field(default="", alias="QUANTDESK_AUDIT_CHANNEL")

    # sandbox
    sandbox_require_full: bool = Field(default=False, alias="QUANTDESK_SANDBOX_REQUIRE_FULL")
    sandbox_workers: int = Field(default=2, ge=1, le=16, alias="QUANTDESK_SANDBOX_WORKERS")

    # backtests
    fee_rate: float = Field(default=0.0005, ge=0, le=0.05, alias="QUANTDESK_FEE_RATE")
    long_only: bool = Field(default=True, alias="QUANTDESK_LONG_ONLY")
    # research honesty (tools/research/holdout.py, overfitting.py): the last part of a factor's period is held out
    holdout_fraction: float = Field(default=0.2, ge=0, lt=1, alias="QUANTDESK_HOLDOUT_FRACTION")
    dsr_threshold: float = Field(default=0.95, gt=0, lt=1, alias="QUANTDESK_DSR_THRESHOLD")
    research_channel: str = Field(default="", alias="QUANTDESK_RESEARCH_CHANNEL")  # the decay monitor's posts
    decision_claim_seconds: float = Field(default=30.0, gt=0, alias="QUANTDESK_DECISION_CLAIM_SECONDS")
    reconcile_interval_seconds: float = Field(default=5.0, gt=0, le=10, alias="QUANTDESK_RECONCILE_INTERVAL")

    # job queue (procrastinate on PostgreSQL, an in-process executor on SQLite)
    job_concurrency: int = Field(default=4, ge=1, le=64, alias="QUANTDESK_JOB_CONCURRENCY")
    job_poll_interval: float = Field(default=0.3, gt=0, le=5, alias="QUANTDESK_JOB_POLL_INTERVAL")
    job_stalled_timeout: float = Field(default=30.0, ge=1, le=3600, alias="QUANTDESK_JOB_STALLED_TIMEOUT")
    job_pool_size: int = Field(default=4, ge=2, le=100, alias="QUANTDESK_JOB_POOL_SIZE")
    checkpoint_pool_size: int = Field(default=10, ge=1, le=100, alias="QUANTDESK_CHECKPOINT_POOL_SIZE")
    job_processes: int = Field(default=2, ge=1, le=1000, alias="QUANTDESK_JOB_PROCESSES")
    in_process_worker: bool = Field(default=True, alias="QUANTDESK_IN_PROCESS_WORKER")

    # the roles (traders, admins, per account) and the console's logins only SEED a database that holds none of
    # them (tools/access): after that the database's roles hold and `roles grant|revoke|map` changes them
    # paper account (tools/broker): money in CNY, rates as fractions; a schedule is "YYYYMMDD:rate,..." (each
    # rate applies from its date; dates before the first are refused)
    traders: Annotated[frozenset[str], NoDecode] = Field(default=frozenset(), alias="QUANTDESK_TRADERS")
    # roles per paper account, "ACCOUNT=ID ID;ACCOUNT=ID": an account listed here has these instead of the global
    # QUANTDESK_TRADERS / QUANTDESK_ADMINS
    account_traders: Annotated[dict[str, frozenset[str]], NoDecode] = Field(
        default_factory=dict, alias="QUANTDESK_ACCOUNT_TRADERS")
    account_admins: Annotated[dict[str, frozenset[str]], NoDecode] = Field(
        default_factory=dict, alias="QUANTDESK_ACCOUNT_ADMINS")
    # who the console acts as: "OS_LOGIN=SLACK_USER_ID,..." (an unmapped login acts as itself); one login per identity
    console_users: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict, alias="QUANTDESK_CONSOLE_USERS")
    paper_cash: Decimal = Field(default=Decimal("1000000"), gt=0, alias="QUANTDESK_PAPER_CASH")
    # which broker serves an account (tools/broker/accounts.py): the default one, and single accounts' own,
    # "ACCOUNT=KIND,ACCOUNT=KIND"
    broker: Literal["paper", "vnpy"] = Field(default="paper", alias="QUANTDESK_BROKER")
    broker_accounts: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict,
                                                                 alias="QUANTDESK_BROKER_ACCOUNTS")
    # the VeighNa trader's RPC service (vnpy_rpcservice): its REP and PUB addresses, the gateway orders go to;
    # loopback only unless allowed (its RPC is pickle over unauthenticated ZeroMQ); dry run: send nothing
    vnpy_req_address: str = Field(default="tcp://127.0.0.1:2014", alias="QUANTDESK_VNPY_REQ_ADDRESS")
    vnpy_sub_address: str = Field(default="tcp://127.0.0.1:4102", alias="QUANTDESK_VNPY_SUB_ADDRESS")
    vnpy_gateway: str = Field(default="XTP", alias="QUANTDESK_VNPY_GATEWAY")
    vnpy_allow_remote: bool = Field(default=False, alias="QUANTDESK_VNPY_ALLOW_REMOTE")
    vnpy_dry_run: bool = Field(default=False, alias="QUANTDESK_VNPY_DRY_RUN")
    vnpy_timeout: float = Field(default=5.0, gt=0, le=120, alias="QUANTDESK_VNPY_TIMEOUT")
    # orders above this notional (CNY) need two different traders; empty: one suffices
    second_approval_above: Decimal | None = Field(default=None, gt=0, alias="QUANTDESK_SECOND_APPROVAL_ABOVE")
    # an approval re-checks the order: a price basis moved more than this fraction shows the card again instead
    stale_move: Decimal = Field(default=Decimal("0.02"), gt=0, le=1, alias="QUANTDESK_STALE_MOVE")
    order_ttl_minutes: int = Field(default=120, ge=1, le=10080, alias="QUANTDESK_ORDER_TTL_MINUTES")
    live_fill_at: Literal["open", "close"] = Field(default="open", alias="QUANTDESK_LIVE_FILL_AT")
    live_data_days: int = Field(default=7, ge=1, le=60, alias="QUANTDESK_LIVE_DATA_DAYS")
    max_order_value: Decimal = Field(default=Decimal("500000"), gt=0, alias="QUANTDESK_MAX_ORDER_VALUE")
    max_position_weight: Decimal = Field(default=Decimal("0.3"), gt=0, le=1, alias="QUANTDESK_MAX_POSITION_WEIGHT")
    daily_loss_limit: Decimal = Field(default=Decimal("0.05"), gt=0, le=1, alias="QUANTDESK_DAILY_LOSS_LIMIT")
    commission_rate: Decimal = Field(default=Decimal("0.00025"), ge=0, le=Decimal("0.003"),
                                     alias="QUANTDESK_COMMISSION_RATE")
    commission_min: Decimal = Field(default=Decimal("5"), ge=0, alias="QUANTDESK_COMMISSION_MIN")
    handling_fee_rate: Decimal = Field(default=Decimal("0"), ge=0, le=Decimal("0.001"),
                                       alias="QUANTDESK_HANDLING_FEE_RATE")
    regulator_fee_rate: Decimal = Field(default=Decimal("0"), ge=0, le=Decimal("0.001"),
                                        alias="QUANTDESK_REGULATOR_FEE_RATE")
    stamp_duty: str = Field(default="20080919:0.001,20230828:0.0005", alias="QUANTDESK_STAMP_DUTY")
    transfer_fee: str = Field(default="20150801:0.00002,20220429:0.00001", alias="QUANTDESK_TRANSFER_FEE")
    transfer_fee_bj: str = Field(default="20211115:0.000025,20220429:0.00001", alias="QUANTDESK_TRANSFER_FEE_BJ")

    # crypto klines (ccxt): the exchange (a ccxt id) and an optional base URL replacing its API hosts
    crypto_exchange: str = Field(default="binance", alias="QUANTDESK_CRYPTO_EXCHANGE")
    crypto_api_url: str | None = Field(default=None, alias="QUANTDESK_CRYPTO_API_URL")

    # execution rules: admins may change or delete anyone's rule (owners may change their own); a rule is paused
    # after this many consecutive failed runs; ticks missed while down run once at start ("once") or not ("skip")
    admins: Annotated[frozenset[str], NoDecode] = Field(default=frozenset(), alias="QUANTDESK_ADMINS")
    rule_max_failures: int = Field(default=3, ge=1, le=100, alias="QUANTDESK_RULE_MAX_FAILURES")
    rule_catch_up: Literal["once", "skip"] = Field(default="once", alias="QUANTDESK_RULE_CATCH_UP")

    # decision desk: the tokens one decision may use (all agents together; past it the desk stops and says where)
    decision_token_budget: int = Field(default=200_000, ge=1_000, le=10_000_000,
                                       alias="QUANTDESK_DECISION_TOKEN_BUDGET")
    replay_token_budget: int = Field(default=2_000_000, ge=1_000, le=100_000_000, alias="QUANTDESK_REPLAY_TOKEN_BUDGET")
    # run records and budgets (issue 41): tokens a person, and a channel (a team), may use in a day (None: no limit),
    # the day read in this time zone
    token_budget_person_day: int | None = Field(default=None, ge=1, alias="QUANTDESK_TOKEN_BUDGET_PERSON_DAY")
    token_budget_channel_day: int | None = Field(default=None, ge=1, alias="QUANTDESK_TOKEN_BUDGET_CHANNEL_DAY")
    token_budget_run: int | None = Field(default=None, ge=1, alias="QUANTDESK_TOKEN_BUDGET_RUN")  # one run, any kind
    # the same per day in money, priced by QUANTDESK_MODEL_PRICES (its currency; a model without a price stops the run)
    money_budget_person_day: Decimal | None = Field(default=None, gt=0, alias="QUANTDESK_MONEY_BUDGET_PERSON_DAY")
    money_budget_channel_day: Decimal | None = Field(default=None, gt=0, alias="QUANTDESK_MONEY_BUDGET_CHANNEL_DAY")
    timezone: str = Field(default="Asia/Shanghai", alias="QUANTDESK_TIMEZONE")
    # the most answer tokens one desk call asks for (max_completion_tokens): the model's output limit or less
    llm_max_answer_tokens: int = Field(default=8_192, ge=256, le=200_000, alias="QUANTDESK_LLM_MAX_ANSWER_TOKENS")
    # the desk's other sources: local files, and tushare's news endpoints (a separate paid permission)
    fundamentals_dir: Path | None = Field(default=None, alias="QUANTDESK_FUNDAMENTALS_DIR")
    news_dir: Path | None = Field(default=None, alias="QUANTDESK_NEWS_DIR")
    tushare_news: bool = Field(default=False, alias="QUANTDESK_TUSHARE_NEWS")
    tushare_news_src: str = Field(default="sina", alias="QUANTDESK_TUSHARE_NEWS_SRC")

    # the workspace's language, as typed (zh, zh_CN, 中文, en-US …: tools/i18n CHOICES); a person's own choice
    # (`lang zh|en`) or mapped locale wins
    language: Language = Field(default=DEFAULT_LANGUAGE, alias="QUANTDESK_LANGUAGE")

    log_level: str = Field(default="INFO", alias="QUANTDESK_LOG_LEVEL")

    @field_validator("approvers", "traders", "admins", mode="before")
    @classmethod
    def _split_approvers(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        language = choice_of(value)
        if language is None:
            raise ValueError(f"{value.strip()!r} is not a language QuantDesk speaks; use {choices_text()}")
        return language

    @field_validator("second_approval_above", "audit_signing_key", "audit_witness_file", "token_budget_person_day",
                     "token_budget_channel_day", "token_budget_run", "money_budget_person_day",
                     "money_budget_channel_day", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r} (an IANA name such as Asia/Shanghai)") from exc
        return value

    @field_validator("account_traders", "account_admins", mode="before")
    @classmethod
    def _account_roles(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        roles: dict[str, frozenset[str]] = {}
        for entry in filter(None, (part.strip() for part in value.split(";"))):
            account, sep, ids = entry.partition("=")
            if not sep or not account.strip():
                raise ValueError(f"{entry!r} is not ACCOUNT=ID ID ... (entries separated by ';')")
            roles[account.strip()] = frozenset(re.split(r"[\s,]+", ids.strip())) - {""}
        return roles

    @field_validator("broker_accounts", mode="before")
    @classmethod
    def _broker_accounts(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        kinds: dict[str, str] = {}
        for entry in filter(None, (part.strip() for part in value.split(","))):
            account, sep, kind = entry.partition("=")
            if not sep or not account.strip() or kind.strip() not in ("paper", "vnpy"):
                raise ValueError(f"{entry!r} is not ACCOUNT=paper or ACCOUNT=vnpy (entries separated by ',')")
            kinds[account.strip()] = kind.strip()
        return kinds

    @field_validator("console_users", mode="before")
    @classmethod
    def _console_users(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        users: dict[str, str] = {}
        for entry in filter(None, (part.strip() for part in value.split(","))):
            login, sep, user = entry.partition("=")
            if not sep or not login.strip() or not user.strip():
                raise ValueError(f"{entry!r} is not LOGIN=SLACK_USER_ID")
            if user.strip() in users.values():
                raise ValueError(f"{user.strip()!r} is mapped from two logins; one login per identity")
            users[login.strip()] = user.strip()
        return users

    @field_validator("model_prices", mode="before")
    @classmethod
    def _price_table(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        table: dict[str, tuple[Decimal, Decimal]] = {}
        for entry in filter(None, (part.strip() for part in value.split(","))):
            name, _, prices = entry.partition("=")
            given, _, taken = prices.partition("/")
            try:
                price_in, price_out = Decimal(given.strip()), Decimal(taken.strip())
            except ArithmeticError:
                raise ValueError(f"{entry!r} is not MODEL=INPUT/OUTPUT (prices per million tokens, e.g. "
                                 "gpt-4o=2.50/10.00)") from None
            finite = price_in.is_finite() and price_out.is_finite()
            if not name.strip() or not finite or price_in < 0 or price_out < 0:
                raise ValueError(f"{entry!r} is not MODEL=INPUT/OUTPUT with two prices of zero or more")
            table[name.strip()] = (price_in, price_out)
        return table

    @field_validator("audit_verify_keys", mode="after")
    @classmethod
    def _verify_keys(cls, value: str) -> str:
        if value.strip():
            from tools.audit.signing import parse_verify_keys  # cryptography only where audit keys are set

            parse_verify_keys(value)
        return value

    @field_validator("data_dir", "local_data_path", "fundamentals_dir", "news_dir", "audit_signing_key",
                     "audit_witness_file", mode="after")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @model_validator(mode="after")
    def _money_needs_prices(self) -> Settings:
        if (self.money_budget_person_day or self.money_budget_channel_day) and not self.model_prices:
            raise ValueError("QUANTDESK_MONEY_BUDGET_PERSON_DAY and QUANTDESK_MONEY_BUDGET_CHANNEL_DAY need "
                             "QUANTDESK_MODEL_PRICES (MODEL=INPUT/OUTPUT per million tokens) to price the calls")
        return self

    @property
    def embedded_database(self) -> Path | None:
        """The embedded default's SQLite file under the data dir, when no DATABASE_URL is set."""
        if self.database_url is not None and self.database_url.get_secret_value():
            return None
        return self.data_dir / "quantdesk.db"

    @property
    def database_url_value(self) -> str:
        """The configured URL, or the embedded default: a SQLite file under the data dir."""
        if self.embedded_database is None and self.database_url is not None:
            return self.database_url.get_secret_value()
        return f"sqlite:///{self.embedded_database}"

    @property
    def llm_configured(self) -> bool:
        return self.openai_api_key is not None or self.openai_base_url is not None


class SettingsError(ValueError):
    """A value in the environment or `.env` that QuantDesk cannot use: one line per setting, naming it and what it
    accepts, never the value given (it may be a secret)."""


def _problems(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        reason = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
        lines.append(f"{name}: {reason}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings, read once; SettingsError when a value is not usable."""
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(_problems(exc)) from None
