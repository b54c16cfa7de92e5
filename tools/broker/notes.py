"""The notes an order keeps (how it fills, how it filled, why it did not): stored in English in the order's row,
fill and events, and shown in the reader's language by `note_text`, which reads a stored note back through the
template that wrote it."""

from __future__ import annotations

from tools.i18n import N_, stored_text

SIMULATED = N_("simulated fill at the last available close")
SIMULATED_ON = N_("simulated fill at the last available close ({day})")
FILLS_AT = {"open": N_("fills at the open of {day} (Asia/Shanghai)"),
            "close": N_("fills at the close of {day} (Asia/Shanghai)")}
NO_TRADING_DAY = {"open": N_("{day} was no trading day; fills at the open of {next}"),
                  "close": N_("{day} was no trading day; fills at the close of {next}")}
FILLED_AT = {"open": N_("filled at the open of {day}"), "close": N_("filled at the close of {day}")}
SUSPENDED = N_("not filled: the stock did not trade on {day} (suspended)")
BLOCKED = N_("not filled on {day}: {why}")
LOCKED_UP = N_("locked at limit-up {limit} (low {low}): no sellers below the limit, the buy cannot fill")
LOCKED_DOWN = N_("locked at limit-down {limit} (high {high}): no buyers above the limit, the sell cannot fill")
LOW_NOT_REACHED = N_("not filled: the low of {day} ({low}) never reached the limit {limit}")
HIGH_NOT_REACHED = N_("not filled: the high of {day} ({high}) never reached the limit {limit}")
LIMIT_FILLED = {"buy": N_("limit buy filled on {day}"), "sell": N_("limit sell filled on {day}")}
NO_CASH = N_("not filled: not enough cash at the fill price")
NO_SHARES = N_("not filled: the position no longer holds the shares")
CANCELLED_BY = N_("cancelled by {who}")
# the lines of an account's mandate an order breaks (tools/broker/mandate.py), and a settle that refuses a fill
MANDATE_BLOCKED = N_("{code} is blocked (mandate: block {entries})")
MANDATE_NOT_ALLOWED = N_("{code} is not allowed (mandate: allow only {entries})")
MANDATE_ST_UNKNOWN = N_("{code}'s ST status is unknown, so the mandate's block ST cannot be checked: refused until "
                        "the data says whether it is ST")
MANDATE_ORDERS = N_("{n} orders already this session (mandate: at most {most} orders a day)")
MANDATE_EXPOSURE = N_("gross exposure would be {amount} CNY (mandate: gross exposure at most {most} CNY)")
MANDATE_TURNOVER = N_("turnover would be {amount} CNY this session (mandate: turnover at most {most} CNY a day)")
MANDATE_REFUSED = N_("not filled: the account's mandate refuses it at the fill: {why}")
# a live broker's (tools/broker/vnpy.py): where the order is, what its server said
SENDING = N_("sending to {gateway}")
SENT = N_("sent to {gateway}")
PART_FILLED = N_("sent to {gateway}; filled {filled} of {quantity}")
GATEWAY_FILLED = N_("filled {quantity} @ {price} by {gateway}")
TRADED = N_("filled {quantity} @ {price} by {gateway} (trade {trade})")  # one fill of a live order
GATEWAY_CANCELLED = N_("cancelled at {gateway}")
GATEWAY_REJECTED = N_("rejected by {gateway}: {why}")
REPLAY_FILLED = N_("replay account: filled at the decision date's close, without approval")
NOT_TAKEN = N_("not taken by {gateway}: {why} (VeighNa gave no order id: nothing was placed)")
DRY_RUN = N_("dry run: not sent to {gateway} (QUANTDESK_VNPY_DRY_RUN)")
UNKNOWN = N_("{gateway} does not know this order (reference {reference}): it may or may not have reached the "
             "broker. Check the order at the broker, then `resolve {order} filled PRICE|cancelled|unsent`; QuantDesk "
             "never sends it again by itself")
MARKED = {"filled": N_("marked filled by {who} after checking at the broker"),
          "cancelled": N_("marked cancelled by {who} after checking at the broker"),
          "unsent": N_("marked never sent by {who} after checking at the broker")}
TEMPLATES = (*MARKED.values(), SENDING, SENT, PART_FILLED, GATEWAY_FILLED, TRADED, GATEWAY_CANCELLED,
             GATEWAY_REJECTED, NOT_TAKEN, REPLAY_FILLED, DRY_RUN, UNKNOWN,
             SIMULATED, SIMULATED_ON, *FILLS_AT.values(), *NO_TRADING_DAY.values(), *FILLED_AT.values(), SUSPENDED,
             BLOCKED, LOCKED_UP, LOCKED_DOWN, LOW_NOT_REACHED, HIGH_NOT_REACHED, *LIMIT_FILLED.values(), NO_CASH,
             NO_SHARES, CANCELLED_BY, MANDATE_REFUSED, MANDATE_BLOCKED, MANDATE_NOT_ALLOWED, MANDATE_ST_UNKNOWN,
             MANDATE_ORDERS, MANDATE_EXPOSURE, MANDATE_TURNOVER)


def note_text(note: str) -> str:
    """A stored note in the language in effect (a note no template wrote, as it is); a placeholder holding another
    note (why a fill was blocked) is shown translated too."""
    return stored_text(note, TEMPLATES)
