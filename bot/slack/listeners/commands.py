"""`/quant`: help, status, commands answered at once (account, orders, factor list …) and new requests, which
get a thread of their own."""

from __future__ import annotations

import logging
import shlex
from typing import Any

from slack_bolt import App
from slack_sdk.errors import SlackApiError

from bot.core import Core, Place, channel_account, clean_text
from bot.slack import render
from graphs.grammar import english, normalize, unquote_marks
from graphs.registry import COMMANDS, WORKFLOWS, command_for
from graphs.views import View
from graphs.workflow import CommandError, Subcommand
from tools.data.schema import DataError
from tools.i18n import N_, _, ngettext, using

log = logging.getLogger(__name__)

STATUS_WORDS = {"running": N_("running"), "waiting": N_("waiting"), "done": N_("done"), "failed": N_("failed")}

NOT_IN_CHANNEL = N_("I am not a member of this channel, so I cannot start a thread here. Invite me with "
                    "`/invite @QuantDesk` and run the command again.")


def usage() -> str:
    """`/quant help`, from the workflow registry."""
    lines = ["*QuantDesk* — `/quant <subcommand>`"]
    for workflow in WORKFLOWS.values():
        lines.append(_("• `/quant {usage}` — {summary}; e.g. `/quant {example}`. ").format(
            usage=workflow.usage, summary=_(workflow.summary), example=workflow.example)
            + "; ".join(workflow.help_notes()) + ".")
        lines += [f"• `/quant {sub.usage}` — {_(sub.summary)}" for sub in workflow.subcommands.values()]
    lines += [f"• `/quant {command.usage}` — {_(command.summary)}" for command in COMMANDS.values()]
    lines += [_("• `/quant status` — your open threads and the questions waiting for you"),
              _("• `/quant lang zh|en` — answer me in Chinese or English (中文 / English)"),
              _("• `/quant help` — this text"),
              _("Or mention me in a channel (`@QuantDesk signal rsi 600519.SH 20190101 20200601`, or plain words "
                "when an LLM is configured) and reply in the thread when I ask something. A new request typed into "
                "a thread that waits on a question starts its own thread.")]
    return "\n".join(lines)


def status_text(core: Core, user: str) -> str:
    """`/quant status`: the user's open threads, and anything stuck in them with the reason: decisions not applied
    yet and questions or results that have not reached Slack."""
    threads = core.threads.threads_of(user, ("running", "waiting", "failed"))
    if not threads:
        return _("You have no open QuantDesk threads.")
    mine = {t.thread_id for t in threads}
    waiting = _("waiting for its turn")
    lines = [_("Your open threads:")] + [
        _("• <#{channel}> thread {ts}: {status}").format(channel=t.channel_id, ts=t.thread_ts,
                                                         status=_(STATUS_WORDS.get(t.status, t.status)))
        + (ngettext(", {n} question waiting for you", ", {n} questions waiting for you", len(t.pending)).format(
            n=len(t.pending)) if t.pending else "") for t in threads]
    stuck = [_("• decision by <@{user}> ({source}) ").format(user=d.decided_by, source=d.source)
             + (_("failed: ") if d.outcome == "failed" else _("not applied yet (attempt {n}): ").format(n=d.attempts))
             + (d.last_error or waiting) for d in core.decisions.stuck() if d.thread_id in mine]
    stuck += [_("• a {kind} not posted yet ({n} attempt(s)): {error}").format(kind=p.kind, n=p.attempts,
                                                                              error=p.last_error or waiting)
              for p in core.posts.unposted() if p.thread_id in mine]
    return "\n".join(lines + ([_("Stuck:"), *stuck] if stuck else []))


def command_reply(core: Core, user: str, channel: str, text: str) -> View | str | None:
    """What a command typed as a message is answered with (a command's view, `status`, or what went wrong); None
    when the text is not a command (a request, an answer)."""
    text = unquote_marks(clean_text(text))
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if [english(normalize(w).strip()).lower() for w in words] == ["status"]:
        return status_text(core, user)
    found = command_for(words)
    if found is None:
        return None
    command, args = found
    try:
        return command.run(core.command_call(args, user, channel_account(channel)))
    except (CommandError, DataError, ValueError) as exc:
        return f":warning: {exc}"


def register(app: App, core: Core) -> None:
    client = app.client

    @app.command("/quant")
    def on_command(ack: Any, command: dict[str, Any], respond: Any) -> None:
        ack()
        with using(core.language_of(command["user_id"])):  # what the person alone sees is in their language
            quant(command, respond)

    def quant(command: dict[str, Any], respond: Any) -> None:
        text = clean_text(command.get("text", ""))
        sub, _space, rest = unquote_marks(text).partition(" ")
        sub = english(normalize(sub).strip()).lower()  # `/quant 账户` is `/quant account`
        user, channel = command["user_id"], command["channel_id"]
        workflow = WORKFLOWS.get(sub)
        try:
            words = shlex.split(unquote_marks(text))  # `rule add CODE “buy when …” every="30 14 * * 1-5"`
        except ValueError:
            words = unquote_marks(text).split()
        found = command_for(words)
        if sub in ("", "help"):
            respond(response_type="ephemeral", text=usage())
        elif sub == "status":
            respond(response_type="ephemeral", text=status_text(core, user))
        elif sub == "lang":
            respond(response_type="ephemeral", text=core.choose_language(user, rest))
        elif found is not None:
            run_command(respond, command["team_id"], channel, user, *found)
        elif sub in COMMANDS:  # too few words for it, e.g. `cancel` without an order
            respond(response_type="ephemeral", text=_("Usage: `/quant {usage}`. See `/quant help`.").format(
                usage=COMMANDS[sub].usage))
        elif workflow is not None:
            if not rest.strip():
                respond(response_type="ephemeral", text=_("Usage: `/quant {usage}`, e.g. `/quant {example}`. See "
                                                          "`/quant help`.").format(usage=workflow.usage,
                                                                                   example=workflow.example))
                return
            try:
                root = client.chat_postMessage(channel=channel, text=_("<@{user}> asked: `/quant {text}`").format(
                    user=user, text=text))["ts"]
            except SlackApiError as exc:
                error = exc.response.get("error")
                respond(response_type="ephemeral", text=_(NOT_IN_CHANNEL) if error in (
                    "not_in_channel", "channel_not_found") else _("I could not post here ({error}).").format(
                    error=error))
                return
            core.submit_text(Place(command["team_id"], channel, root, user), f"{sub} {rest}", f"msg:{channel}:{root}")
        else:
            respond(response_type="ephemeral", text=_("Unknown subcommand `{sub}`.").format(sub=sub) + "\n" + usage())

    def run_command(respond: Any, team: str, channel: str, user: str, command: Subcommand, args: list[str]) -> None:
        """A command that needs no run: its view to the user alone; one with a chart goes to the channel, with
        the chart uploaded beside it."""
        try:
            view = command.run(core.command_call(args, user, channel_account(channel)))
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
        core.outbox.upload(Place(team, channel, ts, user), view.artifacts)
