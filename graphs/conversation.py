"""What a person typed, read once for every surface (the console, `/quant`, a Slack message, the assistant pane),
in one order: help, status, language, pending, leave, cancel, a surface's own command, a command, a new request,
the answer to the question the thread waits on, else free text for the router. Surfaces never read text
themselves: the core's dispatcher (bot/core/intake.py) calls `read` and acts on what it returns."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from graphs.grammar import Word, english, normalize, read_words, unquote_marks, vocabulary
from graphs.interrupts import CLARIFY
from graphs.registry import COMMANDS, WORKFLOWS, workflow_for
from graphs.syntax import Parsed, arguments, parse
from graphs.workflow import Subcommand
from tools.data.provider import MarketDataProvider
from tools.i18n import N_, _


@dataclass(frozen=True)
class Empty:
    """Nothing but spaces."""


@dataclass(frozen=True)
class Help:
    """`help`, 帮助."""


@dataclass(frozen=True)
class Status:
    """`status`: my open threads and what waits for me."""


@dataclass(frozen=True)
class Language:
    word: str  # what follows `lang` (`zh`, `中文`), possibly empty


@dataclass(frozen=True)
class Pending:
    args: tuple[str, ...]  # `pending N`


@dataclass(frozen=True)
class Leave:
    """`quit`, 退出: ends a console session."""


@dataclass(frozen=True)
class Cancel:
    """`cancel` alone: stops what runs or waits in the thread."""


@dataclass(frozen=True)
class LocalCommand:
    """One of the surface's own commands (the console's data commands)."""

    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    command: Subcommand
    args: tuple[str, ...]


@dataclass(frozen=True)
class Usage:
    """A command named with too few words (`cancel ORDER` needs the order): its usage."""

    usage: str


@dataclass(frozen=True)
class Request:
    workflow: str
    text: str  # as typed


@dataclass(frozen=True)
class Answer:
    text: str  # a decision word in English (`批准` is `approve`), the rest as typed


@dataclass(frozen=True)
class FreeText:
    text: str


Intent = (Empty | Help | Status | Language | Pending | Leave | Cancel | LocalCommand | Command | Usage | Request
          | Answer | FreeText)

CONTROLS: dict[str, Intent] = {"help": Help(), "status": Status(), "quit": Leave(), "exit": Leave(), "cancel": Cancel()}


def read(text: str, waiting: str | None = None, local: Collection[str] = ()) -> Intent:
    """What `text` is. `waiting`: the kind of the question the thread waits on (clarify, code_review, approval),
    None when nothing waits; `local`: the surface's own command words. The command grammar (graphs/syntax.py) reads
    the controls, `lang`, `pending`, the surface's commands and every command; a workflow's `starts_request` a new
    request."""
    words = read_words(text)
    if not words:
        return Empty()
    parsed = parse(words, local)
    if parsed is not None:
        return _intent(parsed)
    workflow = workflow_for(text)
    if workflow is not None:
        return Request(workflow.name, text)
    if waiting is not None:
        return Answer(text if waiting == CLARIFY else decision_line(text))
    return FreeText(text)


def _intent(parsed: Parsed) -> Intent:
    """The intent of a line the command grammar read."""
    word = parsed.named[0].read.lower().lstrip("/")
    if parsed.form == "control":
        return CONTROLS[word]
    if parsed.form == "lang":
        return Language(" ".join(word.part for word in _parts(parsed.args)))
    if parsed.form == "pending":
        return Pending(tuple(word.read for word in parsed.args))
    if parsed.form == "local":
        return LocalCommand(word, tuple(word.part for word in _parts(parsed.args)))
    command = parsed.command
    assert command is not None
    if len(parsed.args) < command.min_args:
        return Usage(command.usage)
    return Command(command, tuple(arguments(command, parsed.named, parsed.args)))


def _parts(words: Iterable[Word]) -> list[Word]:
    """One word for each part typed (its whole text in `part`)."""
    return list({word.at: word for word in words}.values())


def decision_line(text: str) -> str:
    """A typed decision with its word in English (`批准` approve, `拒绝 …` reject, `编辑 数量=200` edit
    quantity=200); a reason stays as typed."""
    word, space, rest = unquote_marks(text).strip().partition(" ")
    decision = english(normalize(word).strip()).lower()
    return decision + space + (" ".join(normalize(rest).split()) if decision == "edit" else rest)


@dataclass(frozen=True)
class HelpEntry:
    usage: str
    summary: str
    heading: bool = False  # a workflow's request form: its usage on a line of its own

@dataclass(frozen=True)
class HelpSection:
    title: str
    entries: tuple[HelpEntry, ...]


# (usage, summary): both message ids, so a Chinese reader sees the words they type (帮助, 批准 …)
CONTROL_HELP = (
    (N_("help"), N_("this text")),
    (N_("status"), N_("your open threads and the questions waiting for you")),
    (N_("lang zh|en"), N_("answer me in Chinese or English (中文 / English)")),
    (N_("pending [N]"), N_("the open questions, reviews and order cards; `pending N` makes one current (the "
                           "console)")),
    (N_("cancel"), N_("stop the request running or waiting in this thread")),
)
DECISION_HELP = (
    (N_("approve"), N_("accept the code or the action as shown")),
    (N_("edit name=value …"), N_("change an approval's values (e.g. edit quantity=200); on code review, `edit` then "
                                 "the new body")),
    (N_("reject REASON"), N_("stop; the rejection and its reason are recorded (a reason is required)")),
)


def _said(text: str, keyword: str) -> str:
    """`text` followed by the Chinese words read as `keyword` (`signal · 信号`), so either language's reader
    learns the other's word."""
    chinese = [word for word, english_word in vocabulary().words.items() if english_word == keyword]
    return f"{text} · {' / '.join(chinese)}" if chinese else text


def help_sections(provider: MarketDataProvider, local: Collection[tuple[str, str]] = ()) -> list[HelpSection]:
    """The one help, from the registry and the conversation's own words; what needs data says whether `provider`
    has it; `local`: the surface's own commands (usage, summary message id). In the language in effect; each surface
    renders it."""
    sections = []
    for workflow in WORKFLOWS.values():
        entries = [HelpEntry(workflow.usage, _(workflow.summary), heading=True),
                   HelpEntry("", _("e.g. {example}").format(example=workflow.example)),
                   *(HelpEntry("", note) for note in workflow.help_notes(provider)),
                   *(HelpEntry(sub.usage, _(sub.summary)) for sub in workflow.subcommands.values())]
        sections.append(HelpSection(_said(workflow.name, workflow.name), tuple(entries)))
    sections.append(HelpSection(_("paper account and desk commands"),
                                tuple(HelpEntry(c.usage, _said(_(c.summary), name)) for name, c in COMMANDS.items())))
    sections.append(HelpSection(_("while a review or an approval waits: the buttons on its card, or typed in the "
                                  "console (a question is answered by replying in its thread)"),
                                tuple(HelpEntry(_(usage), _(summary)) for usage, summary in DECISION_HELP)))
    if local:
        sections.append(HelpSection(_("data commands"), tuple(HelpEntry(u, _(s)) for u, s in local)))
    sections.append(HelpSection(_("conversation"), tuple(HelpEntry(_(u), _(s)) for u, s in CONTROL_HELP)))
    sections.append(HelpSection(_("anything else"), (HelpEntry("", _(
        "Plain words, in Chinese or English, go to the LLM router (OPENAI_API_KEY / OPENAI_BASE_URL); commands and "
        "requests above need none. Chinese works as typed: 因子 反转 20190301 20200601 窗口=10, 删除规则 2, "
        "买入 平安银行 2手 限价 12.5.")),)))
    return sections
