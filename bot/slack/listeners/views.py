"""Decision forms submitted: an edited code body, an edited approval, a rejection's reason. Problems are shown in
the form before anything is decided; an accepted submission is recorded, then applied like any decision."""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from bot.cards import ApprovalCard, Decision, Edit, Malformed, Reject, code_edit
from bot.core import ALREADY_HANDLED, Core
from bot.slack.render import Malformed as NotMine
from bot.slack.render import parse_metadata
from graphs.factor.spec import SpecError, check_name
from graphs.factor.template import edit_problems
from graphs.interrupts import validate_args
from tools.i18n import N_, _, using

NOT_MY_FORM = N_("This form is not one I opened; nothing was decided.")


def register(app: App, core: Core) -> None:
    @app.view("review_edit_modal")
    def on_edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        with using(core.language_of(body["user"]["id"])):  # what the form says is the submitter's
            edit_submitted(ack, body, view)

    def edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = view["state"]["values"]
        code = (values["code"]["code"].get("value") or "").strip("\n")
        name = ((values.get("name") or {}).get("name") or {}).get("value") or ""
        problems = edit_problems(code)
        if problems:  # errors the sandbox's static check would raise, shown in the form before anything runs
            ack(response_action="errors", errors={"code": "; ".join(problems)[:1000]})
            return
        try:
            if name.strip():
                check_name(name.strip())
        except SpecError as exc:  # a name the library cannot hold, said in the form
            ack(response_action="errors", errors={"name": str(exc)[:1000]})
            return
        decided_in_form(ack, body, view, code_edit(code, name.strip() or None), "code")

    @app.view("approval_edit_modal")
    def on_approval_edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        with using(core.language_of(body["user"]["id"])):
            approval_edit_submitted(ack, body, view)

    def approval_edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        first = next(iter(view["state"]["values"]), "x")
        try:
            thread_id, interrupt_id, _message_ts = parse_metadata(view["private_metadata"])
        except NotMine:
            ack(response_action="errors", errors={first: _(NOT_MY_FORM)})
            return
        try:
            card = core.decider.pending_value(thread_id, interrupt_id)
        except Malformed as exc:  # fail closed: nothing is decided on what cannot be read
            ack(response_action="errors", errors={first: str(exc)[:1000]})
            return
        if not isinstance(card, ApprovalCard):
            ack(response_action="errors", errors={first: _(ALREADY_HANDLED)})
            return
        edits = {name: (block.get(name) or {}).get("value") for name, block in view["state"]["values"].items()}
        args, problems = validate_args(dict(card.args_schema), dict(card.args), edits)
        if problems:  # shown in the form, against the first field; nothing is decided
            ack(response_action="errors", errors={next(iter(edits)): "; ".join(problems)[:1000]})
            return
        decided_in_form(ack, body, view, Edit(card.action, args), next(iter(edits)))

    @app.view("review_reject_modal")
    def on_reject_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        reason = (view["state"]["values"]["reason"]["reason"].get("value") or "").strip()
        with using(core.language_of(body["user"]["id"])):
            decided_in_form(ack, body, view, Reject(reason), "reason")

    def decided_in_form(ack: Any, body: dict[str, Any], view: dict[str, Any], decision: Decision,
                        block: str) -> None:
        try:
            thread_id, interrupt_id, message_ts = parse_metadata(view["private_metadata"])
        except NotMine:
            ack(response_action="errors", errors={block: _(NOT_MY_FORM)})
            return
        user = body["user"]["id"]
        verdict = core.decider.decide(thread_id, interrupt_id, user, decision, "modal")
        if not verdict.allowed:
            ack(response_action="errors", errors={block: verdict.reason})
            return
        ack()
        core.decider.confirm(verdict, interrupt_id, user, decision, message_ts)
