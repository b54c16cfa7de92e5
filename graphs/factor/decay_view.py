"""What the decay monitor shows: a state change's figures (the reply in its thread) and `factor status [NAME]`."""

from __future__ import annotations

from typing import Any

from graphs.views import View
from graphs.workflow import CommandCall
from tools.factors.store import FactorStore
from tools.i18n import _, pgettext
from tools.research.charts import rolling_ic_chart
from tools.research.decay import CONFIRM, DEAD_ENTER, DEAD_T, SHORT, WEAK_ENTER, DecayStore
from tools.research.library import TeamLibrary


def state_word(state: str) -> str:
    return {"active": pgettext("decay", "active"), "weakening": pgettext("decay", "weakening"),
            "dead": pgettext("decay", "dead")}.get(state, state)


def num(value: float | None, spec: str = "+.4f") -> str:
    return _("n/a") if value is None or value != value else format(value, spec)


def figures_line(f: dict[str, Any]) -> str:
    return _("after {session}: rank IC {ic20} over 20 sessions, {ic60} over 60 (ICIR {icir}, t {t}); holdout level "
             "{reference}").format(session=f["session"], ic20=num(f["ic20"]), ic60=num(f["ic60"]),
                                   icir=num(f["icir60"], ".2f"), t=num(f["t60"], ".1f"), reference=num(f["reference"]))


def decay_lines(decay: dict[str, Any]) -> list[str]:
    """The change, the figures behind it, what the states mean and where to look again."""
    return [
        _("{name} v{version}: {was} → {to}").format(name=decay["name"], version=decay["version"],
                                                  was=state_word(decay["from"]), to=state_word(decay["to"])),
        figures_line(decay["figures"]),
        _("weakening: the {short}-session rank IC below {weak:.0%} of the holdout level; dead: the 60-session one "
          "below {dead:.0%} and its t-statistic under {t:g}; a state changes after {n} sessions in a row point to "
          "it.").format(short=SHORT, weak=WEAK_ENTER, dead=DEAD_ENTER, t=DEAD_T, n=CONFIRM),
        _("`factor status {name}` shows it at any time.").format(name=decay["name"])]


def decay_reply(decay: dict[str, Any]) -> str:
    """The figures behind a state change, and what the states mean, as one text."""
    return "\n".join(decay_lines(decay))


def decay_chart(decay: dict[str, Any]) -> bytes:
    """The rolling IC up to the change, against the holdout level and the levels the states change at."""
    reference = float(decay["figures"]["reference"])
    levels = {_("weakening at (20 sessions)"): WEAK_ENTER * reference,
              _("dead at (60 sessions)"): DEAD_ENTER * reference}
    title = _("{name} v{version}: rolling rank IC").format(name=decay["name"], version=decay["version"])
    return rolling_ic_chart(decay.get("ics") or {}, reference, levels, title)


def present_decay(result: dict[str, Any]) -> View:
    """The decay monitor's post of a state change (its chart is uploaded beside it)."""
    first, second, *rest = decay_lines(result["decay"])
    return View(first, second, lines=rest)


def factor_status(call: CommandCall) -> View:
    """The team library's factors with their monitored state (one factor's figures with NAME)."""
    engine = call.context.engine
    store, states, entries = FactorStore(engine), DecayStore(engine), TeamLibrary(engine).entries()
    infos = [info for factor_id in sorted(entries) if (info := store.get(factor_id)) is not None]
    wanted = " ".join(call.args).strip().lower()
    if wanted:
        infos = [info for info in infos if info.name == wanted]
        if not infos:
            return View(_("Factor status"), _("{name} is not in the team library. See `factor list`.").format(
                name=repr(wanted)))
    if not infos:
        return View(_("Factor status"), _("The team library is empty: a factor enters it by passing the gate, or "
                                          "with `factor save NAME REASON`."))
    lines = []
    for info in infos:
        tracker = states.load(info.id)
        if tracker is None:
            lines.append(_("{name} v{version}: not monitored yet").format(name=info.name, version=info.version))
            continue
        line = _("{name} v{version}: {state} since {since}, checked {checked}").format(
            name=info.name, version=info.version, state=state_word(tracker.state), since=tracker.since,
            checked=tracker.checked)
        lines.append(line + ("; " + figures_line(tracker.last) if tracker.last else ""))
    summary = _("{n} factor(s) in the team library, monitored after each session's close.").format(n=len(infos))
    return View(_("Factor status"), summary, lines=lines)
