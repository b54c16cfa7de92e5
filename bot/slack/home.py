"""The App Home as Block Kit (every text of the Home is here): what waits for the person, with the same buttons as
in the thread (read-only when they may not decide), then the workflows' panels, within Slack's limits (100 blocks
a view, 3,000 characters a section): a long list shows its first rows and a "More" button that opens a modal."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bot.core.surface import ASKED, DECIDE, OTHERS, Home, HomeCard, Place
from bot.slack.names import Names, dressed
from bot.slack.render import BUTTON_TEXT_MAX, SECTION_TEXT_MAX, _clip, _section, question_message
from graphs.home import HomeAction, HomePanel, HomeRow
from tools.i18n import N_, _, ngettext

VIEW_BLOCKS_MAX = 100
MODAL_TITLE_MAX = 24
HOME_CARDS = 5  # cards shown on the Home, in the order the person must act on them; the rest in the "More" modal
PANEL_ROWS = 10  # rows of a panel shown on the Home
ACTION_ROWS = 6  # rows with buttons shown on the Home (each is two blocks)
ROW_TEXT_MAX = 600
WAITING = "waiting"  # the "More" of the waiting cards (panel names come from the registry)
TYPED = "typed"  # the action id of the text input beside a button that asks for text
TYPED_MAX = 300
INPUT_LABEL_MAX = 2000
CONFIRM_TITLE_MAX = 100
CONFIRM_TEXT_MAX = 300
CONFIRM_BUTTON_MAX = 30

TITLE = "QuantDesk"
WAITING_TITLE = N_("Waiting for you")
NOTHING = N_("Nothing waits for you, and there is nothing to show yet. Start with `/quant help`.")
READ_ONLY = N_("Read-only here: {reason}")
WITHHELD = N_("Approve is not offered to you: {reason}")
MORE = N_("More")
OPEN_THREAD = N_("thread")
NOT_SHOWN = N_("…and {n} more; `/quant` shows everything.")
MORE_CARDS = N_("{n} more waiting for you")
HIDDEN_CARDS = N_("{n} more not shown here: {kinds}.")
MORE_ROWS = N_("{n} more")
CLOSE = N_("Close")
CANCEL = N_("Cancel")
NOT_MINE = N_("That button's value is not one I wrote, so nothing was done.")

Link = Callable[[Place], str | None]  # a thread's permalink, when the surface knows it


def home_view(home: Home, link: Link, names: Names | None = None) -> dict[str, Any]:
    """The Home tab's view (`link`: a thread's permalink; `names`: plain names of people and channels), in the
    language in effect."""
    blocks: list[dict[str, Any]] = [_header(TITLE)]
    if home.notice:
        blocks.append(_section(f":information_source: {home.notice}"))
    sections: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    if home.cards:
        sections.append((_waiting(home.cards, link), _compact(_(WAITING_TITLE), _(MORE_CARDS).format(
            n=len(home.cards)), WAITING)))
    for panel in home.panels:
        sections.append((_panel(panel, home.places, link), _compact(panel.title, panel.summary, panel.name)))
    for index, (full, compact) in enumerate(sections):
        later = 2 * (len(sections) - index - 1)  # room kept for each later section's divider and "more"
        room = VIEW_BLOCKS_MAX - len(blocks) - 1  # and a last line saying what did not fit
        if len(full) + 1 + later <= room:
            blocks += [{"type": "divider"}, *full]
        elif len(compact) + 1 <= room:
            blocks += [{"type": "divider"}, *compact]
        else:
            blocks.append(_context(_(NOT_SHOWN).format(n=len(sections) - index)))
            break
    if len(blocks) == 1 + bool(home.notice):
        blocks.append(_section(_(NOTHING)))
    return _dressed({"type": "home", "blocks": blocks}, home.panels, home.cards, names)


def _dressed(view: dict[str, Any], panels: Sequence[HomePanel], cards: Sequence[HomeCard], names: Names | None,
             ) -> dict[str, Any]:
    """The view with the people and accounts its panels and cards name shown Slack's way (`dressed`)."""
    shown = [c.question.card for c in cards]
    users = [*(u for p in panels for u in p.users), *(u for q in shown for u in q.users or ()),
             *(c.question.requester or "" for c in cards)]
    accounts = [*(a for p in panels for a in p.accounts), *(a for q in shown for a in q.accounts or ())]
    return dressed(view, users, accounts, names)


def _waiting(cards: tuple[HomeCard, ...], link: Link) -> list[dict[str, Any]]:
    blocks = [_header(_(WAITING_TITLE))]
    for card in cards[:HOME_CARDS]:
        blocks += card_blocks(card, link)
    if len(cards) > HOME_CARDS:
        blocks.append(_more_button(hidden_text(cards[HOME_CARDS:]), WAITING))
    return blocks


def hidden_text(cards: tuple[HomeCard, ...]) -> str:
    """How many cards the Home leaves to its "More", and of which kind."""
    words = {DECIDE: lambda n: ngettext("{n} decision waiting for you", "{n} decisions waiting for you", n),
             ASKED: lambda n: ngettext("{n} question of yours", "{n} questions of yours", n),
             OTHERS: lambda n: ngettext("{n} question you may answer", "{n} questions you may answer", n)}
    counts = [(group, sum(1 for c in cards if c.group == group)) for group in words]
    kinds = _(", ").join(words[group](n).format(n=n) for group, n in counts if n)
    return _(HIDDEN_CARDS).format(n=len(cards), kinds=kinds)


def card_blocks(card: HomeCard, link: Link) -> list[dict[str, Any]]:
    """A question's card as in its thread (its buttons carry the thread), without block ids (a view holds many
    cards), read-only when the person may not decide it, and a link to its thread."""
    q = card.question
    blocks = [{k: v for k, v in b.items() if k != "block_id"}
              for b in question_message(q.thread_id, q.interrupt_id, q.card, q.requester)["blocks"]]
    if not card.actionable:
        blocks = [b for b in blocks if b["type"] != "actions"]
        blocks.append(_context(_(READ_ONLY).format(reason=card.refusal)))
    elif card.withheld:
        dropped = {f"review_{decision}" for decision in card.withheld}
        blocks = [{**b, "elements": [e for e in b["elements"] if e.get("action_id") not in dropped]}
                  if b["type"] == "actions" else b for b in blocks]
        blocks.append(_context(_(WITHHELD).format(reason=card.refusal)))
    url = link(card.place)
    if url:
        blocks.append(_context(f"<{url}|{_(OPEN_THREAD)}>"))
    return blocks


def _panel(panel: HomePanel, places: dict[str, Place], link: Link) -> list[dict[str, Any]]:
    blocks = [_header(panel.title), _section(panel.summary)]
    plain = [row for row in panel.rows if not row.actions][:PANEL_ROWS]
    acting = [row for row in panel.rows if row.actions][:ACTION_ROWS]
    blocks += _row_sections(plain, places, link)
    for index, row in enumerate(acting):
        blocks += [_section(_row_text(row, places, link)), *_asks(panel.name, row.actions, index),
                   _actions(panel.name, row.actions, index)]
    shown = len(plain) + len(acting)
    if shown < len(panel.rows):
        blocks.append(_more_button(_(MORE_ROWS).format(n=len(panel.rows) - shown), panel.name))
    if panel.notes:
        blocks.append(_context("; ".join(panel.notes)))
    return blocks


def more_modal(title: str, panel: HomePanel | None, cards: list[HomeCard], link: Link, names: Names | None = None,
               ) -> dict[str, Any]:
    """The whole panel (or every waiting card) in a modal, as much as its 100 blocks hold."""
    blocks: list[dict[str, Any]] = []
    rest = 0
    if panel is not None:
        blocks.append(_section(panel.summary))
        plain = [row for row in panel.rows if not row.actions]
        acting = [row for row in panel.rows if row.actions]
        for section in _row_sections(plain, {}, link):
            if len(blocks) < VIEW_BLOCKS_MAX - 1:
                blocks.append(section)
            else:
                rest += 1
        for index, row in enumerate(acting):
            if len(blocks) + 2 <= VIEW_BLOCKS_MAX - 1:
                blocks += [_section(_row_text(row, {}, link)), _actions(panel.name, row.actions, index)]
            else:
                rest += 1
    for card in cards:
        more = card_blocks(card, link)
        if len(blocks) + len(more) <= VIEW_BLOCKS_MAX - 1:
            blocks += more
        else:
            rest += 1
    if rest:
        blocks.append(_context(_(NOT_SHOWN).format(n=rest)))
    return _dressed({"type": "modal", "callback_id": "home_more_modal",
                     "title": {"type": "plain_text", "text": _clip(title, MODAL_TITLE_MAX)},
                     "close": {"type": "plain_text", "text": _(CLOSE)}, "blocks": blocks or [_section(_(NOTHING))]},
                    [panel] if panel else [], cards, names)


def _row_text(row: HomeRow, places: dict[str, Place], link: Link) -> str:
    text = _clip(row.text, ROW_TEXT_MAX)
    place = places.get(row.thread_id or "")
    url = link(place) if place else None
    return f"• {text}" + (f" · <{url}|{_(OPEN_THREAD)}>" if url else "")


def _row_sections(rows: list[HomeRow], places: dict[str, Place], link: Link) -> list[dict[str, Any]]:
    """Rows as few sections as 3,000 characters a section allow."""
    sections: list[dict[str, Any]] = []
    lines: list[str] = []
    for row in rows:
        line = _row_text(row, places, link)
        if lines and len("\n".join([*lines, line])) > SECTION_TEXT_MAX:
            sections.append(_section("\n".join(lines)))
            lines = []
        lines.append(line)
    if lines:
        sections.append(_section("\n".join(lines)))
    return sections


def action_value(panel: str, action: HomeAction) -> str:
    return json.dumps({"p": panel, "w": list(action.words), "c": action.channel}, separators=(",", ":"))


def parse_action(value: str) -> tuple[str, HomeAction]:
    """(panel, action) of a Home button; ValueError when the value is not the bot's."""
    data = json.loads(value)
    panel, words, channel = data["p"], data["w"], data["c"]
    if not (isinstance(panel, str) and isinstance(channel, str) and isinstance(words, list)
            and words and all(isinstance(w, str) for w in words)):
        raise ValueError(value[:80])
    return panel, HomeAction("", tuple(words), channel)


def _actions(panel: str, actions: tuple[HomeAction, ...], index: int) -> dict[str, Any]:
    elements = []
    for n, action in enumerate(actions):
        button: dict[str, Any] = {"type": "button", "action_id": f"home_action_{n}",
                                  "text": {"type": "plain_text", "text": _clip(action.label, BUTTON_TEXT_MAX)},
                                  "value": action_value(panel, action)}
        if action.style:
            button["style"] = action.style
        if action.confirm:
            button["confirm"] = _confirm(action)
        elements.append(button)
    return {"type": "actions", "block_id": f"{panel}_{index}", "elements": elements}


def typed_id(actions_block: str, n: int) -> str:
    """The block id of the text input beside the n-th button of an actions block (a button that asks)."""
    return f"{actions_block}_{TYPED}_{n}"


def _asks(panel: str, actions: tuple[HomeAction, ...], index: int) -> list[dict[str, Any]]:
    """An optional one-line input for each button that asks for text (a reason): the click reads it from the
    Home's state."""
    return [{"type": "input", "block_id": typed_id(f"{panel}_{index}", n), "optional": True,
             "label": {"type": "plain_text", "text": _clip(action.asks, INPUT_LABEL_MAX)},
             "element": {"type": "plain_text_input", "action_id": TYPED, "max_length": TYPED_MAX}}
            for n, action in enumerate(actions) if action.asks]


def _confirm(action: HomeAction) -> dict[str, Any]:
    """Slack's confirmation dialog before the click counts."""
    dialog: dict[str, Any] = {"title": {"type": "plain_text", "text": _clip(action.label, CONFIRM_TITLE_MAX)},
                              "text": {"type": "plain_text", "text": _clip(action.confirm, CONFIRM_TEXT_MAX)},
                              "confirm": {"type": "plain_text", "text": _clip(action.label, CONFIRM_BUTTON_MAX)},
                              "deny": {"type": "plain_text", "text": _clip(_(CANCEL), CONFIRM_BUTTON_MAX)}}
    if action.style == "danger":
        dialog["style"] = "danger"
    return dialog


def _more_button(text: str, name: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_TEXT_MAX)},
            "accessory": {"type": "button", "action_id": "home_more", "text": {"type": "plain_text", "text": _(MORE)},
                          "value": json.dumps({"p": name}, separators=(",", ":"))}}


def _compact(title: str, summary: str, name: str) -> list[dict[str, Any]]:
    return [_more_button(f"*{_clip(title, 200)}*: {summary}", name)]


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(text, 150)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(text, SECTION_TEXT_MAX)}]}
