"""Each person's home, rebuilt from the database whenever it is shown (it is never a source of truth): the questions
waiting for them, with the same decisions as in their thread, then the workflows' panels (the registry's HOME).

A change that concerns people (a card waiting, a decision, a result, a fill, a rule's run) bumps their home's
version and publishes it at once; the background service publishes what is still due (a refused publish)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator

from bot.cards import ApprovalCard, Card, ClarifyCard, Pending
from bot.core.outbox import place_of
from bot.core.policy import Policy
from bot.core.surface import ASKED, DECIDE, OTHERS, Home, HomeCard, HomeSurface, Question, Refused
from bot.runner import Runner
from bot.stores.decisions import DecisionStore
from bot.stores.homes import HomeStore
from bot.stores.threads import ThreadInfo, ThreadRegistry
from graphs.home import HomeAction, HomePanel
from graphs.registry import HOME
from tools.i18n import using

log = logging.getLogger(__name__)

OpenQuestions = Callable[[], Iterator[tuple[ThreadInfo, Pending]]]  # (thread, open pause) oldest first
PUBLISH_ROUNDS = 3  # a change that lands during a publish is shown by the next round (else the next pass)


def primary_decision(card: Card) -> str:
    """The decision a card is for: approve (a review, an approval) or respond (a question)."""
    return "approve" if "approve" in card.allowed else "respond"


def ordered(cards: list[HomeCard]) -> list[HomeCard]:
    """Cards (oldest first) in the order a person must act on them: the decisions waiting for them, soonest expiry
    first (those without one after, oldest first); then their own questions, then those they may answer for
    others, newest first."""
    decide = sorted((c for c in cards if c.group == DECIDE), key=_expiry)  # stable: the untimed stay oldest first
    newest = cards[::-1]
    return [*decide, *(c for c in newest if c.group == ASKED), *(c for c in newest if c.group == OTHERS)]


def _expiry(card: HomeCard) -> float:
    expires = card.question.card.expires if isinstance(card.question.card, ApprovalCard) else None
    return expires.timestamp() if expires else math.inf


class Homes:
    def __init__(self, runner: Runner, questions: OpenQuestions, decisions: DecisionStore, policy: Policy,
                 surface: HomeSurface, store: HomeStore, threads: ThreadRegistry, owner: str,
                 language_of: Callable[[str], str]) -> None:
        """`questions()`: the open questions of this surface's threads (the core's); `language_of(user)`: the
        language a person's home speaks."""
        self.runner, self.questions, self.decisions, self.policy = runner, questions, decisions, policy
        self.surface, self.store, self.threads, self.owner = surface, store, threads, owner
        self.language_of = language_of

    # --- what a home shows -------------------------------------------------------------------------------------

    def build(self, user: str, notice: str = "") -> Home:
        panels = self.panels(user)
        thread_ids = {row.thread_id for panel in panels for row in panel.rows if row.thread_id}
        places = {}
        for thread_id in thread_ids:
            info = self.threads.get(thread_id)
            if info is not None:
                places[thread_id] = place_of(info)
        return Home(user, tuple(self.cards(user)), tuple(panels), places, notice)

    def cards(self, user: str) -> list[HomeCard]:
        """The open questions of this surface's threads that `user` asked or may decide, in the order they must act
        on them (`ordered`); those they may not decide are shown read-only."""
        found = []
        for info, pending in self.questions():
            if self.decisions.get(pending.id) is not None:  # decided, not applied yet
                continue
            card = pending.card
            primary = primary_decision(card)
            refusal = self.policy.refusal(info, card, user, primary)
            # a trader the policy keeps from approving (maker-checker) may still edit or reject: only Approve goes
            withheld = ((primary,) if refusal and primary == "approve" and "edit" in card.allowed
                        and self.policy.refusal(info, card, user, "edit") is None else ())
            if refusal is None or withheld or user == info.user_id:
                decides = not isinstance(card, ClarifyCard) and (refusal is None or bool(withheld))
                group = DECIDE if decides else ASKED if user == info.user_id else OTHERS
                question = Question(info.thread_id, pending.id, card, info.user_id)
                found.append(HomeCard(question, place_of(info, user), refusal or "", withheld, group))
        return ordered(found)

    def panels(self, user: str) -> list[HomePanel]:
        """The workflows' panels for `user`; a section that fails is left out (and logged), the others shown."""
        found: list[HomePanel] = []
        for name, section in HOME.items():
            try:
                found += section(self.runner.context, user)
            except Exception:  # noqa: BLE001 - one section's store failing must not take the whole home down
                log.exception("the %s section of a home could not be built", name)
        return found

    def panel(self, user: str, name: str) -> HomePanel | None:
        return next((p for p in self.panels(user) if p.name == name), None)

    def offered(self, user: str, panel: str, action: HomeAction) -> HomeAction | None:
        """The panel's own action matching a click's `action`, if it is on the person's panel as it is now (a click
        is honoured only then)."""
        found = self.panel(user, panel)
        return next((a for a in found.actions() if (a.words, a.channel) == (action.words, action.channel)), None) \
            if found is not None else None

    # --- publishing -------------------------------------------------------------------------------------------

    def concerned(self, info: ThreadInfo | None, *users: str | None) -> list[str]:
        """Who a thread's change concerns: its requester, the people named, and whoever may decide its cards."""
        people = {u for u in users if u}
        if info is not None and info.user_id:
            people.add(info.user_id)
        return sorted(people | set(self.policy.approvers) | set(self.policy.all_traders()))

    def changed(self, users: Iterable[str]) -> None:
        """A change concerns `users`: publish the homes of those who have one (never raises: the background
        service publishes what failed)."""
        try:
            due = self.store.changed(users)
        except Exception:  # noqa: BLE001 - a home is never worth failing the work that changed it
            log.warning("could not mark homes due", exc_info=True)
            return
        for user in due:
            self.publish(user)

    def opened(self, user: str, notice: str = "") -> None:
        """The person opened their home, or clicked on it (`notice`: what is said about the click): publish it now
        (the notice is kept until a publish shows it, even one by another process)."""
        self.store.opened(user, notice)
        self.publish(user)

    def publish(self, user: str) -> None:
        """Publish the person's latest home, unless another process is publishing it (that one publishes again
        if a change came meanwhile); a refused publish stays due for the background service."""
        for _ in range(PUBLISH_ROUNDS):
            if not self.store.claim(user, self.owner):
                return
            state = self.store.get(user)
            if state is None:
                return
            try:
                with using(self.language_of(user)):
                    self.surface.publish_home(user, self.build(user, state.notice or ""))
            except Refused as exc:
                log.warning("a home was not published: %s", exc.reason)
                self.store.refused(user, exc.reason)
                return
            except Exception as exc:  # noqa: BLE001 - the database failed mid-build: due for the next pass
                log.warning("a home could not be built", exc_info=True)
                self.store.refused(user, type(exc).__name__)
                return
            if self.store.published(user, state.version):
                return

    def publish_due(self) -> None:
        """The background service's part: every home still showing less than its latest version."""
        for user in self.store.due():
            self.publish(user)
