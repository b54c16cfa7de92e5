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
