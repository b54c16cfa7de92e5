"""One order card at a time per automated proposer: a rule (proposer `rule:<id>`) or the decision desk (`desk`)
has at most one order proposal of a code in an account waiting for a trader. Two cards sized on the same position
would double it if a trader approved both, so a proposer claims the (account, code, proposer) slot before its card
is shown, in one atomic statement (an upsert, so two runs finishing at the same instant cannot both win), and
gives it back once the approval is over (decided, expired, refused, or the order placed: its open order then
guards the next run). A claim nobody gives back (its thread was abandoned) lapses by itself APPLY_GRACE after the
card's own expiry. Manual orders claim nothing: a person sees what is already waiting."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, delete, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from tools.broker.claim_records import ProposalClaimRecord as Claim

log = logging.getLogger(__name__)

# How long a claim outlives the card's own expiry (the paper account's order TTL): an approval made just before
# the card expired still counts, and is applied a little later (the queue, a retry).
APPLY_GRACE = timedelta(minutes=10)


@dataclass(frozen=True)
class ProposalClaim:
    """Who holds the one card slot of (account, code, proposer), and when the claim lapses."""

    account: str
    ts_code: str
    proposer: str
    holder: str
    expires_at: datetime


def claim_proposal(engine: Engine, account: str, ts_code: str, proposer: str, holder: str, order_ttl: timedelta,
                   now: datetime) -> ProposalClaim:
    """Claim the slot for `holder` until `order_ttl` + APPLY_GRACE from `now`. It is taken when free, when its
    claim lapsed, or when `holder` holds it already (a node re-run on resume). Returns the claim in force
    afterwards: `holder`'s when it was taken."""
    if not holder or len(holder) > 255:
        raise ValueError(f"a claim holder is 1 to 255 characters, not {holder!r}")
    moment = _utc(now)
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    values = insert(Claim).values(account=account, ts_code=ts_code, proposer=proposer, holder=holder,
                                  claimed_at=moment, expires_at=moment + order_ttl + APPLY_GRACE)
    taken = values.on_conflict_do_update(
        index_elements=["account", "ts_code", "proposer"],
        set_={"holder": values.excluded.holder, "claimed_at": values.excluded.claimed_at,
              "expires_at": values.excluded.expires_at},
        where=or_(Claim.holder == values.excluded.holder, Claim.expires_at <= moment),
    ).returning(Claim.holder, Claim.expires_at)
    with engine.begin() as connection:  # a refused upsert keeps the row locked: the read sees its holder
        row = connection.execute(taken).first() or connection.execute(select(Claim.holder, Claim.expires_at).where(
            Claim.account == account, Claim.ts_code == ts_code, Claim.proposer == proposer)).one()
    claim = ProposalClaim(account, ts_code, proposer, row[0], _aware(row[1]))
    log.info("%s's order card on %s in %s %s %s (until %s)", proposer, ts_code, account,
             "claimed by" if claim.holder == holder else "still held by", claim.holder,
             f"{claim.expires_at:%Y-%m-%d %H:%M:%S}Z")
    return claim


def fit_claims_to_card(engine: Engine, holder: str, card_expires_at: datetime) -> None:
    """Once the card's own expiry is known (it is often sooner than the order TTL: cut at 09:15 or 14:57), the
    holder's claims lapse APPLY_GRACE after it, so a dead card does not block its proposer for hours."""
    until = _utc(card_expires_at) + APPLY_GRACE
    with engine.begin() as connection:
        connection.execute(update(Claim).where(Claim.holder == holder, Claim.expires_at > until)
                           .values(expires_at=until))


def release_proposals(engine: Engine, holder: str) -> int:
    """Give back every claim `holder` holds (its approval is over, or its run ended without one); returns how
    many. Only the holder's own claims go: a lapsed claim another holder took since stays."""
    with engine.begin() as connection:
        released = connection.execute(delete(Claim).where(Claim.holder == holder)).rowcount
    if released:
        log.info("order card claim(s) of %s released: %d", holder, released)
    return released


def live_claims(engine: Engine, proposer: str, now: datetime) -> list[ProposalClaim]:
    """The proposer's claims in force at `now` (lapsed ones are free), by account and code."""
    query = (select(Claim).where(Claim.proposer == proposer, Claim.expires_at > _utc(now))
             .order_by(Claim.account, Claim.ts_code))
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    return [ProposalClaim(r.account, r.ts_code, r.proposer, r.holder, _aware(r.expires_at)) for r in rows]


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{moment} has no timezone: claim times must be aware")
    return moment.astimezone(UTC)


def _aware(moment: datetime) -> datetime:
    """A stored time as aware UTC (SQLite hands them back naive)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
