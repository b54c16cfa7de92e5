"""The Bolt app: listeners ack at once and hand the work to the front door; a decision click is acked once its
decision row is written, so an acked click is never lost."""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Callable
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from bot.registry import ThreadInfo
from bot.runner import INFRASTRUCTURE_ERRORS
from bot.slack import render
from bot.slack.frontdoor import ALREADY_HANDLED, FrontDoor, Where, channel_account, clean_text, parse_button_value
from graphs.factor.template import edit_problems
from graphs.interrupts import APPROVAL, validate_args
from graphs.registry import COMMANDS, WORKFLOWS, command_for
from graphs.workflow import CommandCall, CommandError, Subcommand
from tools.data.schema import DataError
from tools.settings import Settings

log = logging.getLogger(__name__)

def usage() -> str:
    """`/quant help`, from the workflow registry."""
    lines = ["*QuantDesk* — `/quant <subcommand>`"]
    for workflow in WORKFLOWS.values():
        lines.append(f"• `/quant {workflow.usage}` — {workflow.summary}; e.g. `/quant {workflow.example}`. "
                     + "; ".join(workflow.notes) + ".")
        lines += [f"• `/quant {sub.usage}` — {sub.summary}" for sub in workflow.subcommands.values()]
    lines += [f"• `/quant {command.usage}` — {command.summary}" for command in COMMANDS.values()]
    lines += ["• `/quant status` — your open threads and the questions waiting for you",
              "• `/quant help` — this text",
              "Or mention me in a channel (`@QuantDesk signal rsi 600519.SH 20190101 20200601`, or plain words when "
              "an LLM is configured) and reply in the thread when I ask something. A new request typed into a "
              "thread that waits on a question starts its own thread."]
    return "\n".join(lines)


NOT_IN_CHANNEL = ("I am not a member of this channel, so I cannot start a thread here. Invite me with "
                  "`/invite @QuantDesk` and run the command again.")


def make_client(settings: Settings) -> WebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(token=token, base_url=settings.slack_api_url,
                     retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2), ConnectionErrorRetryHandler()])


def build_app(settings: Settings, client: WebClient, door: FrontDoor) -> App:
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None
    app = App(client=client, signing_secret=secret, process_before_response=False)
    bot_user = client.auth_test()["user_id"]

    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        channel, ts = event["channel"], event["ts"]  # a retry or the same post as `message` has the same key
        door.submit_text(Where(body["team_id"], channel, event.get("thread_ts") or ts, event["user"]),
                         event.get("text", ""), f"msg:{channel}:{ts}")

    @app.event("message")
    def on_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        if event.get("subtype") or event.get("bot_id") or event.get("user") in (None, bot_user):
            return
        team, channel, text = body["team_id"], event["channel"], event.get("text", "")
        thread_ts = event.get("thread_ts")
        if event.get("channel_type") == "im":
            root = thread_ts or event["ts"]
        elif thread_ts and f"<@{bot_user}>" not in text and door.is_known_thread(team, channel, thread_ts):
            root = thread_ts
        else:
            return  # not for us; mentions arrive as app_mention
        door.submit_text(Where(team, channel, root, event["user"]), text, f"msg:{channel}:{event['ts']}")

    @app.command("/quant")
    def on_command(ack: Any, command: dict[str, Any], respond: Any) -> None:
        ack()
        text = clean_text(command.get("text", ""))
        sub, _, rest = text.partition(" ")
        sub = sub.lower()
        user, channel = command["user_id"], command["channel_id"]
        workflow = WORKFLOWS.get(sub)
        try:
            words = shlex.split(text)  # `rule add CODE "buy when …" every="30 14 * * 1-5"`
        except ValueError:
            words = text.split()
        found = command_for(words)
        if sub in ("", "help"):
            respond(response_type="ephemeral", text=usage())
        elif sub == "status":
            respond(response_type="ephemeral", text=door_status(door, user))
        elif found is not None:
            run_command(respond, channel, user, *found)
        elif sub in COMMANDS:  # too few words for it, e.g. `cancel` without an order
            respond(response_type="ephemeral", text=f"Usage: `/quant {COMMANDS[sub].usage}`. See `/quant help`.")
        elif workflow is not None:
            if not rest.strip():
                respond(response_type="ephemeral", text=f"Usage: `/quant {workflow.usage}`, e.g. "
                                                        f"`/quant {workflow.example}`. See `/quant help`.")
                return
            try:
                root = client.chat_postMessage(channel=channel, text=f"<@{user}> asked: `/quant {text}`")["ts"]
            except SlackApiError as exc:
                error = exc.response.get("error")
                respond(response_type="ephemeral", text=NOT_IN_CHANNEL if error in (
                    "not_in_channel", "channel_not_found") else f"I could not post here ({error}).")
                return
            door.submit_text(Where(command["team_id"], channel, root, user), f"{sub} {rest}", f"msg:{channel}:{root}")
        else:
            respond(response_type="ephemeral", text=f"Unknown subcommand `{sub}`.\n{usage()}")

    def run_command(respond: Any, channel: str, user: str, command: Subcommand, args: list[str]) -> None:
        """A command that needs no run: its view to the user alone; one with a chart goes to the channel, with
        the chart uploaded beside it."""
        try:
            view = command.run(CommandCall(door.runner.context, args, user, channel_account(channel)))
        except (CommandError, DataError, ValueError) as exc:
            respond(response_type="ephemeral", text=f":warning: {exc}")
            return
        if not view.artifacts:
            respond(response_type="ephemeral", **render.view_message(view))
            return
        try:
            ts = client.chat_postMessage(channel=channel, **render.view_message(view))["ts"]
        except SlackApiError as exc:
            respond(response_type="ephemeral", **render.view_message(view))
            log.warning("could not post a command's view: %s", exc.response.get("error"))
            return
        door.upload(Where("", channel, ts, user), view.artifacts)

    @app.action(re.compile(r"^clarify_choice_\d+$"))
    def on_choice(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        thread_id, interrupt_id, choice = parse_button_value(action["value"])
        user, channel = body["user"]["id"], body["channel"]["id"]
        message_ts = body["message"]["ts"]
        allowed, reason = door.decide(thread_id, interrupt_id, user, {"type": "respond", "message": choice}, "button")
        ack()  # after the decision row is written: an acked click is never lost, whatever happens next
        if not allowed:
            client.chat_postEphemeral(channel=channel, user=user, text=reason,
                                      thread_ts=body["message"].get("thread_ts"))
            return
        queue_decision(thread_id, interrupt_id, user, lambda where, info: door.accept_answer(
            where, info, interrupt_id, choice, {"choice": choice, "source": "button"}, message_ts))

    @app.action("review_approve")
    def on_approve(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        thread_id, interrupt_id, _ = parse_button_value(action["value"])
        user, channel = body["user"]["id"], body["channel"]["id"]
        allowed, reason = door.decide(thread_id, interrupt_id, user, {"type": "approve"}, "button")
        ack()  # after the decision row is written: an acked click is never lost, whatever happens next
        if not allowed:
            client.chat_postEphemeral(channel=channel, user=user, text=reason,
                                      thread_ts=body["message"].get("thread_ts"))
            return
        resume(thread_id, interrupt_id, user, body["message"]["ts"], {"type": "approve"})

    @app.action("run_stop")
    def on_stop(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        thread_id = json.loads(action["value"])["t"]
        user, channel = body["user"]["id"], body["channel"]["id"]
        info = door.registry.get(thread_id)
        if info is None or not door.authorised(info, user):
            text = "Only the person who started this request or a configured approver can stop it."
        elif door.queue.abort(thread_id):
            text = "Stopping after the current step."
        else:
            text = "Nothing is running in this thread any more."
        client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=body["message"].get("thread_ts"))

    @app.action("decision_retry")
    def on_retry(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        interrupt_id = json.loads(action["value"])["i"]
        user, channel = body["user"]["id"], body["channel"]["id"]
        record = door.decisions.get(interrupt_id)
        info = door.registry.get(record.thread_id) if record else None
        if info is None or not door.authorised(info, user):
            text = "Only the person who started this request or a configured approver can retry it."
        elif door.retry(interrupt_id):
            text = "Retrying the decision."
        else:
            text = ALREADY_HANDLED
        client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=body["message"].get("thread_ts"))

    @app.action(re.compile(r"^review_(edit|reject)$"))
    def on_open_form(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()  # first: the trigger_id expires 3 s after the click
        thread_id, interrupt_id, decision = parse_button_value(action["value"])
        user, channel, message = body["user"]["id"], body["channel"]["id"], body["message"]
        allowed, reason = door.may_decide(thread_id, interrupt_id, user, decision)
        value = door.pending_value(thread_id, interrupt_id) if allowed else None
        if value is None:
            client.chat_postEphemeral(channel=channel, user=user, text=reason or "Already handled.",
                                      thread_ts=message.get("thread_ts"))
            return
        name = str(value.get("title") or value.get("name") or "code")
        if decision == "reject":
            view = render.reject_modal(thread_id, interrupt_id, message["ts"], name,
                                       str(value.get("on_reject") or "The action is not taken."))
        elif value.get("type") == APPROVAL:
            view = render.approval_edit_modal(thread_id, interrupt_id, message["ts"], value)
        else:
            view = render.edit_modal(thread_id, interrupt_id, message["ts"], name, str(value.get("code") or ""))
        client.views_open(trigger_id=body["trigger_id"], view=view)

    @app.view("review_edit_modal")
    def on_edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        code = (view["state"]["values"]["code"]["code"].get("value") or "").strip("\n")
        problems = edit_problems(code)
        if problems:  # errors the sandbox's static check would raise, shown in the form before anything runs
            ack(response_action="errors", errors={"code": "; ".join(problems)[:1000]})
            return
        decided_in_form(ack, body, view, {"type": "edit",
                                          "edited_action": {"name": "code_review", "args": {"code": code}}}, "code")

    @app.view("approval_edit_modal")
    def on_approval_edit_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        thread_id, interrupt_id, _ = render.parse_metadata(view["private_metadata"])
        value = door.pending_value(thread_id, interrupt_id)
        if value is None:
            ack(response_action="errors", errors={next(iter(view["state"]["values"]), "x"): "Already handled."})
            return
        edits = {name: (block.get(name) or {}).get("value") for name, block in view["state"]["values"].items()}
        args, problems = validate_args(value.get("args_schema") or {}, value.get("args") or {}, edits)
        if problems:  # shown in the form, against the first field; nothing is decided
            ack(response_action="errors", errors={next(iter(edits)): "; ".join(problems)[:1000]})
            return
        decided_in_form(ack, body, view, {"type": "edit", "edited_action": {"name": value.get("action"),
                                                                            "args": args}}, next(iter(edits)))

    @app.view("review_reject_modal")
    def on_reject_submitted(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        reason = (view["state"]["values"]["reason"]["reason"].get("value") or "").strip()
        decided_in_form(ack, body, view, {"type": "reject", "message": reason}, "reason")

    def decided_in_form(ack: Any, body: dict[str, Any], view: dict[str, Any], decision: dict[str, Any],
                        block: str) -> None:
        thread_id, interrupt_id, message_ts = render.parse_metadata(view["private_metadata"])
        allowed, reason = door.decide(thread_id, interrupt_id, body["user"]["id"], decision, "modal")
        if not allowed:
            ack(response_action="errors", errors={block: reason})
            return
        ack()
        resume(thread_id, interrupt_id, body["user"]["id"], message_ts, decision)

    def resume(thread_id: str, interrupt_id: str, user: str, message_ts: str, decision: dict[str, Any]) -> None:
        """A decision `door.decide()` accepted: audit it, update its message, resume the run."""
        queue_decision(thread_id, interrupt_id, user, lambda where, info: door.accept_decision(
            where, info, interrupt_id, decision, message_ts))

    def queue_decision(thread_id: str, interrupt_id: str, user: str,
                       show: Callable[[Where, ThreadInfo], None]) -> None:
        """After `door.decide()` wrote the decision's row: `show` it in the thread (audit, update its message), then
        queue its application. If the database fails here, the reconciler queues it (nothing is lost)."""
        try:
            info = door.registry.get(thread_id)
            if info is None:  # decide() found it a moment ago; it cannot vanish, but never resume blindly
                return
            where = Where(info.team_id, info.channel_id, info.thread_ts, user)
            show(where, info)
            door.submit_decision(interrupt_id, where)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("decision %s recorded, not queued yet (%s): the reconciler will queue it", interrupt_id,
                        type(exc).__name__)

    return app


def door_status(door: FrontDoor, user: str) -> str:
    """The user's open threads, and anything stuck in them with the reason: decisions not applied yet and
    questions or results that have not reached Slack."""
    threads = door.registry.threads_of(user, ("running", "waiting", "failed"))
    if not threads:
        return "You have no open QuantDesk threads."
    mine = {t.thread_id for t in threads}
    lines = ["Your open threads:"] + [
        f"• <#{t.channel_id}> thread {t.thread_ts}: {t.status}"
        + (f", {len(t.pending)} question(s) waiting for you" if t.pending else "") for t in threads]
    stuck = [f"• decision by <@{d.decided_by}> ({d.source}) "
             + ("failed: " if d.outcome == "failed" else f"not applied yet (attempt {d.attempts}): ")
             + (d.last_error or "waiting for its turn") for d in door.decisions.stuck() if d.thread_id in mine]
    stuck += [f"• a {p.kind} not posted yet ({p.attempts} attempt(s)): {p.last_error or 'waiting for its turn'}"
              for p in door.posts.unposted() if p.thread_id in mine]
    return "\n".join(lines + (["Stuck:", *stuck] if stuck else []))
