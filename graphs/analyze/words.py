"""The desk's names as the reader says them (analysts, debates, their speakers and judges) and the texts saying
where a decision stopped. The nodes write these into the state while the thread's language is in effect, so a
stored stop reads in the language of the thread that ran it."""

from __future__ import annotations

from tools.i18n import _, pgettext


def analyst_word(name: str) -> str:
    """An analyst's name (market, news …) as the reader says it."""
    words = {"market": pgettext("analyst", "market"), "news": pgettext("analyst", "news"),
             "sentiment": pgettext("analyst", "sentiment"), "fundamentals": pgettext("analyst", "fundamentals")}
    return words.get(name, name)


def stage_word(stage: str) -> str:
    """A debate (research, risk) as the reader says it."""
    words = {"research": pgettext("debate", "research"), "risk": pgettext("debate", "risk")}
    return words.get(stage, stage)


def role_word(role: str) -> str:
    """A debater (bull, bear, risky, safe, neutral) as the reader says it."""
    words = {"bull": pgettext("debater", "bull"), "bear": pgettext("debater", "bear"),
             "risky": pgettext("debater", "aggressive"), "safe": pgettext("debater", "conservative"),
             "neutral": pgettext("debater", "neutral")}
    return words.get(role, role)


def analyst_stage(name: str) -> str:
    return _("the {analyst} analyst").format(analyst=analyst_word(name))


def debate_stage(stage: str, role: str) -> str:
    return _("the {stage} debate ({role})").format(stage=stage_word(stage), role=role_word(role))


def judge_word(stage: str) -> str:
    """The judge of a debate: the research manager or the risk manager."""
    return _("research manager") if stage == "research" else _("risk manager")


def judge_stage(stage: str) -> str:
    return _("the {judge}").format(judge=judge_word(stage))


def stopped_in(stage: str, why: str) -> str:
    return _("stopped in {stage}: {why}").format(stage=stage, why=why)


def field_word(name: str) -> str:
    """A tushare field (trade_date, close, turnover_rate …) or an indicator line (BOLL upper …) as the reader says
    it; what reads the same in both languages (MA(5), MACD DIF, KDJ K) is left as it is."""
    words = {"trade_date": pgettext("field", "trade_date"), "close": pgettext("field", "close"),
             "turnover_rate": pgettext("field", "turnover_rate"),
             "turnover_rate_f": pgettext("field", "turnover_rate_f"),
             "volume_ratio": pgettext("field", "volume_ratio"), "pe": pgettext("field", "pe"),
             "pe_ttm": pgettext("field", "pe_ttm"), "pb": pgettext("field", "pb"), "ps": pgettext("field", "ps"),
             "ps_ttm": pgettext("field", "ps_ttm"), "dv_ratio": pgettext("field", "dv_ratio"),
             "dv_ttm": pgettext("field", "dv_ttm"), "total_share": pgettext("field", "total_share"),
             "float_share": pgettext("field", "float_share"), "free_share": pgettext("field", "free_share"),
             "total_mv": pgettext("field", "total_mv"), "circ_mv": pgettext("field", "circ_mv"),
             "MACD hist": pgettext("field", "MACD hist"), "BOLL upper": pgettext("field", "BOLL upper"),
             "BOLL mid": pgettext("field", "BOLL mid"), "BOLL lower": pgettext("field", "BOLL lower")}
    return words.get(name, name)
