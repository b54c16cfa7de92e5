"""Run-time dependencies of the workflow graphs, handed in per run (never checkpointed).

`WorkflowContext` is the one object the adapters build (graphs/dependencies.py). A workflow never names it: each
declares what it reads as a `Protocol` in its own `deps.py`, built from the small protocols here, and its nodes
are typed `Runtime[<Workflow>Deps]` (tests/graphs/test_workflow_deps.py holds every workflow to its declaration)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar, Protocol, TypeVar, cast, overload

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from sqlalchemy import Engine

from graphs.model_roles import DEEP, LIGHT
from tools.access.roles import RoleSet
from tools.broker.config import TradingConfig
from tools.broker.protocol import Broker
from tools.data.fundamentals import FundamentalsSource
from tools.data.klines import KlineProvider
from tools.data.news import NewsSource
from tools.data.provider import MarketDataProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.workspace import Workspace


@dataclass
class WorkflowContext:
    provider: MarketDataProvider
    engine: Engine
    sandbox: Sandbox
    artifacts: ArtifactStore  # charts and files of runs, in the database (no host paths)
    llm: BaseChatModel | None = None  # the main model
    light_llm: BaseChatModel | None = None  # the light model (None: the main one)
    deep_llm: BaseChatModel | None = None  # the deep model for judges (None: the main one)
    fee_rate: float = 0.0005
    long_only: bool = True
    holdout_fraction: float = 0.2  # the share of a research period's last sessions held out (tools/research/holdout)
    dsr_threshold: float = 0.95  # the deflated Sharpe probability the team library asks of a factor
    research_channel: str = ""  # where the decay monitor posts state changes ("" : nowhere)
    paper: TradingConfig | None = None  # the accounts' rates, limits and clock settings (None: no trading here)
    # the account registry's opener (tools/broker/accounts.py): (account name, opened by) -> the broker serving it
    broker: Callable[[str, str | None], Broker] | None = None
    # the database's roles, read at each check (tools/access); None: the fixed roles below (a context in memory)
    stored_roles: Callable[[], RoleSet] | None = None
    traders: frozenset[str] = field(default_factory=frozenset)  # who may approve or edit orders (the default)
    admins: frozenset[str] = field(default_factory=frozenset)  # who administers accounts (the default)
    account_traders: dict[str, frozenset[str]] = field(default_factory=dict)  # an account's own, instead
    account_admins: dict[str, frozenset[str]] = field(default_factory=dict)
    stale_move: Decimal = Decimal("0.02")  # an approval on a price basis moved more than this re-checks the card
    second_approval_above: Decimal | None = None  # orders above this notional need two traders (None: off)
    console_operator: str | None = None  # the console's identity: with no trader configured anywhere, it trades
    rules: RuleStore | None = None  # saved execution rules and their step logs
    klines: Callable[[str], KlineProvider] | None = None  # symbol -> the kline source that serves it
    fundamentals: FundamentalsSource | None = None  # the decision desk's sources (None: not configured)
    news: NewsSource | None = None
    posts: NewsSource | None = None
    decision_token_budget: int = 200_000  # tokens one desk decision may use, all agents together
    replay_token_budget: int = 2_000_000  # tokens one replay of the desk may use over all its dates
    max_answer_tokens: int = 8_192  # the most answer tokens one desk call asks for (the model's output limit)
    desk_namespace: str = "live"  # the decision desk's memory and decision log (a replay has its own)
    stop_requested: Callable[[], bool] = lambda: False  # the adapter's "stop this run" (checked inside long nodes)
    stop_honoured: Callable[[], None] = lambda: None  # a long node stopped early for it: let the run finish its report
    now: Callable[[], datetime] = lambda: datetime.now(UTC)  # the wall clock (the desk's pre-open sessions)
    timezone: str = "Asia/Shanghai"  # the day of budgets and usage (QUANTDESK_TIMEZONE)
    token_budget_person_day: int | None = None  # tokens one person may use in a day (None: no limit)
    token_budget_channel_day: int | None = None  # tokens one channel (a team) may use in a day
    token_budget_run: int | None = None  # tokens one run may use
    money_budget_person_day: Decimal | None = None  # money (model_prices' currency) one person may spend in a day
    money_budget_channel_day: Decimal | None = None  # and one channel
    model_prices: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)  # per million tokens in, out


class Context(Protocol):
    """What every declaration extends: the run's context is a dataclass (`WorkflowContext`), and LangGraph takes
    only a dataclass, a TypedDict or a pydantic model as a graph's context type (`Runtime[...]`, `context_schema`)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]


StateT = TypeVar("StateT", contravariant=True)
DepsT = TypeVar("DepsT", bound=Context)


class RuntimeNode(Protocol[StateT, DepsT]):
    """A node as LangGraph's types know one that reads its runtime: what `node` hands `add_node`."""

    def __call__(self, state: StateT, *, runtime: Runtime[DepsT]) -> Any: ...


@overload
def node(action: Callable[[StateT, RunnableConfig, Runtime[DepsT]], Any]) -> RuntimeNode[StateT, DepsT]: ...


@overload
def node(action: Callable[[StateT, Runtime[DepsT], RunnableConfig], Any]) -> RuntimeNode[StateT, DepsT]: ...


def node(action: Callable[..., Any]) -> RuntimeNode[Any, Any]:
    """A node that takes its config and its runtime, for `add_node`, unchanged."""
    # LangGraph hands a node its config and its runtime both, by parameter name (Runtime's own docs: "add a
    # `config: RunnableConfig` parameter"), but its StateNode types have no signature with both: the overloads
    # above check the node's state and context types, and the cast only names the node as the runtime-only kind.
    return cast(RuntimeNode[Any, Any], action)


class Models(Context, Protocol):
    """The chat models by role (None: not configured)."""

    llm: BaseChatModel | None
    light_llm: BaseChatModel | None
    deep_llm: BaseChatModel | None


class Storage(Context, Protocol):
    """The database and the run's stored files."""

    engine: Engine
    artifacts: ArtifactStore


class Market(Context, Protocol):
    """The market data provider."""

    provider: MarketDataProvider


class Roles(Context, Protocol):
    """Who may do what on which paper account: each account's own traders and admins, else the global ones."""

    stored_roles: Callable[[], RoleSet] | None
    traders: frozenset[str]
    admins: frozenset[str]
    account_traders: dict[str, frozenset[str]]
    account_admins: dict[str, frozenset[str]]
    console_operator: str | None


def role_set(roles: Roles) -> RoleSet:
    """The roles as they are now: the database's, else the context's fixed ones."""
    if roles.stored_roles is not None:
        return roles.stored_roles()
    return RoleSet(traders=roles.traders, admins=roles.admins, account_traders=roles.account_traders,
                   account_admins=roles.account_admins)


def traders_of(roles: Roles, account: str) -> frozenset[str]:
    """Who may approve or edit `account`'s orders: its own traders, else the global ones; on a desk with no trader
    configured anywhere, the console's operator (a one-person desk on its own machine)."""
    now = role_set(roles)
    if roles.console_operator and not now.traders and not any(now.account_traders.values()):
        return frozenset({roles.console_operator})
    return now.account_traders.get(account, now.traders)


def admins_of(roles: Roles, account: str) -> frozenset[str]:
    """`account`'s own admins, else the global ones (account "": the global ones)."""
    now = role_set(roles)
    return now.account_admins.get(account, now.admins)


def has_role(roles: Roles, user: str | None, account: str) -> bool:
    """Whether `user` trades or administers `account` (naming an account needs this)."""
    return user is not None and (user in traders_of(roles, account) or user in admins_of(roles, account))


def all_traders(roles: Roles) -> frozenset[str]:
    """Every trader of some account."""
    return traders_of(roles, "").union(*role_set(roles).account_traders.values())


def trades_anywhere(roles: Roles, user: str | None) -> bool:
    """Whether `user` is a trader of some account (global actions: the switch, the simulated clock)."""
    return user is not None and user in all_traders(roles)




def model_for(context: Models, role: str) -> BaseChatModel | None:
    """The model of a role: the light and deep ones fall back to the main model when not set apart."""
    if role == LIGHT:
        return context.light_llm or context.llm
    if role == DEEP:
        return context.deep_llm or context.llm
    return context.llm


def model_required(context: Models, role: str) -> BaseChatModel:
    """The model of a role where the workflow has already made sure one is configured (its route, or its path
    without a model, ran first): none here is a bug, and says so."""
    model = model_for(context, role)
    if model is None:
        raise LookupError(f"no {role} model is configured")
    return model


def thread_id(config: RunnableConfig) -> str:
    return str(config["configurable"]["thread_id"])


def workspace(context: Storage, config: RunnableConfig) -> Workspace:
    return Workspace(context.engine, thread_id(config))


AUTH_USER = "langgraph_auth_user_id"  # what LangGraph Agent Server puts in configurable: the authenticated caller


def decider(config: RunnableConfig) -> str | None:
    """Who made the decision this run resumes with: the adapter puts it in `configurable.user` (Slack user,
    console user), never inside the decision itself. Under LangGraph Agent Server (Studio, the SDK) only the
    server's authenticated identity counts (the Slack user id `langgraph.json`'s auth handler maps the caller's
    token to), never a name the caller typed; a server without an auth handler authenticates nobody, so there
    nobody is anyone and order approvals are refused."""
    configurable = config.get("configurable", {})
    if AUTH_USER in configurable:
        return configurable[AUTH_USER] or None
    return configurable.get("user")


def decided_at(config: RunnableConfig) -> datetime | None:
    """When the decision this run resumes with was made (the adapter's durable record), if it says. Under LangGraph
    Agent Server the caller writes `configurable`, so a time it names is ignored (None: the node's own clock, the
    server's): a caller must not approve an expired card by dating its approval back."""
    configurable = config.get("configurable", {})
    value = None if AUTH_USER in configurable else configurable.get("decided_at")
    return datetime.fromisoformat(value) if value else None


def default_account(config: RunnableConfig) -> str:
    """The thread's default paper account: the adapter names it (one per Slack channel, `console`)."""
    return str(config.get("configurable", {}).get("account") or "default")
