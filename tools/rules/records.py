"""Execution rules (seed 002): saved rules, their step-by-step execution logs, the schedule ticks that workers
claim so each tick runs once, and the schedules set over the gate with a reason. Migration 0008 creates them (0010
added a proposal claim that 0012 moved to proposal_claims; 0027 the gate's verdict and the overrides); keep the two
in step."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow

_id = BigInteger().with_variant(Integer, "sqlite")


class SavedRule(Base):
    """A trading rule a user saved: in words for the model (source "llm") or in the rule language ("language"),
    with its order size, confidence threshold, paper account, schedule and runtime (position) state."""

    __tablename__ = "saved_rules"

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    symbol: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))  # llm, language
    requirements: Mapped[str] = mapped_column(Text)
    owner: Mapped[str] = mapped_column(String(64), index=True)  # Slack user id
    channel: Mapped[str] = mapped_column(String(64), index=True)
    runtime_status: Mapped[dict] = mapped_column(JSON, default=dict)  # {"position": 0, "last_action": ...}
    schedule: Mapped[str | None] = mapped_column(String(120))  # five-field cron, or None: on demand only
    timezone: Mapped[str] = mapped_column(String(64), default="Asia/Shanghai")
    scheduled_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # no tick before it runs
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    size: Mapped[int | None] = mapped_column(BigInteger)  # shares per order
    value_fen: Mapped[int | None] = mapped_column(BigInteger)  # or the order value, in fen
    threshold: Mapped[float] = mapped_column(Double, default=0.6)  # confidence an LLM decision needs to propose
    account: Mapped[str | None] = mapped_column(String(64))  # paper account; None: the channel's default
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    paused_reason: Mapped[str | None] = mapped_column(Text)
    # the gate's verdict on the latest backtest (graphs/rule/honesty.py): None until the rule is backtested
    verdict: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class ExecutionLog(Base):
    """One step of one execution, exactly the seed's table; (execution_id, step) is unique, so a node that
    re-runs on resume writes nothing twice."""

    __tablename__ = "execution_logs"
    __table_args__ = (UniqueConstraint("execution_id", "step", name="uq_execution_logs_execution_step"),)

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    rule_id: Mapped[int] = mapped_column(_id, ForeignKey("saved_rules.id", ondelete="CASCADE"), index=True)
    symbol: Mapped[str] = mapped_column(String(32))
    execution_id: Mapped[str] = mapped_column(String(64))
    step: Mapped[int] = mapped_column(Integer)
    action_type: Mapped[str] = mapped_column(String(32))  # tool_call, calculation, decision, observation, ...
    action_data: Mapped[dict] = mapped_column(JSON)
    result_data: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))
    timestamp: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow,
                                                server_default=text("CURRENT_TIMESTAMP"))


class RuleTick(Base):
    """A scheduled minute (UTC) of a rule, claimed by the one worker that enqueues its run (status "enqueued"),
    "failed" while a later pass must start it again, or recorded as "skipped" when it was missed and the
    catch-up policy did not run it."""

    __tablename__ = "rule_ticks"

    rule_id: Mapped[int] = mapped_column(_id, ForeignKey("saved_rules.id", ondelete="CASCADE"), primary_key=True)
    tick: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    claimed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_by: Mapped[str] = mapped_column(String(64))
    execution_id: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))  # claimed, failed, enqueued, skipped


class RuleOverride(Base):
    """A schedule set over the gate: who, when, which schedule, why, and the verdict it overrode (None: no
    backtest). Kept while the rule lives, shown by `rule show`; the same is on the global audit chain."""

    __tablename__ = "rule_overrides"

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    rule_id: Mapped[int] = mapped_column(_id, ForeignKey("saved_rules.id", ondelete="CASCADE"), index=True)
    by: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text)
    schedule: Mapped[str] = mapped_column(String(120))
    timezone: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
