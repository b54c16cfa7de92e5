"""The manual order grammar: `order CODE buy|sell QTY [limit=PRICE] [account=NAME] [REASON ...]`, read from the
normalised line (`下单 600519.SH 买入 １００` is `order 600519.SH buy 100`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from graphs import names
from graphs.grammar import CODE, PARAM, Words, did_you_mean, english, normalize, segment, split
from tools.broker.boards import OrderRuleError
from tools.broker.orders import PriceType
from tools.broker.rules import MAX_ORDER_QUANTITY, MAX_PRICE, order_size_problem
from tools.data.codes import CODE_LIKE
from tools.i18n import _

KEYWORD = "order"
SIDES = ("buy", "sell")  # a request may start with its side: `买入 000001.SZ 200股` is `order 000001.SZ buy 200`
WORDS = Words(
    commands={"下单": "order", "买": "buy", "买入": "buy", "卖": "sell", "卖出": "sell"},
    params={"数量": "quantity", "限价": "limit", "账户": "account"},
)
USAGE = "order CODE buy|sell QTY [limit=PRICE] [account=NAME] [reason words]"
ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class OrderGrammarError(ValueError):
    """A manual order that cannot be read; the message says what to write."""


@dataclass(frozen=True)
class OrderIntent:
    """An order as asked for, before any check: what the approval subgraph takes."""

    ts_code: str
    side: str
    quantity: int
    price_type: str
    limit_price: str | None  # Decimal as text (state is JSON)
    account: str | None  # None: the thread's default account
    reason: str

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


PARAMS = ("limit", "account")


def starts_request(text: str) -> bool:
    """`order …`, or a side with a stock and a quantity (`买入 平安银行 2手`, `sell 601318.SH 300`): prose that
    starts with a side (`buy Moutai when it dips`) is not an order."""
    words = split(text)
    if not words or words[0].lower() in (KEYWORD, f"/{KEYWORD}"):
        return bool(words)
    return (len(words) >= 3 and words[0].lower() in SIDES and words[2].replace(",", "").isdigit()
            and (bool(CODE_LIKE.match(words[1])) or bool(names.table().codes_for(words[1]))))


def looks_structured(text: str) -> bool:
    words = split(text)
    return len(words) >= 3 and bool(CODE.match(words[0])) and words[1].lower() in ("buy", "sell")


def account_name(text: str) -> str:
    """A valid account name, or OrderGrammarError."""
    if not ACCOUNT_NAME.match(text):
        raise OrderGrammarError(_("account name {name} must be letters, digits, '.', '_' or '-' (at most 64)").format(
            name=repr(text)))
    return text


def parse_order(text: str) -> OrderIntent:
    tokens: list[str] = []
    for token in re.split(r"\s+", normalize(text).strip()):  # commas stay: a quantity may be 1,000
        # the code, side and quantity may be typed without spaces (`买平安银行1000`); the reason stays as typed
        tokens += segment(token) if len(tokens) < 4 else [token] if token else []
    if tokens and english(tokens[0]).lower() in (KEYWORD, f"/{KEYWORD}"):
        tokens = tokens[1:]
    elif len(tokens) >= 2 and english(tokens[0]).lower() in SIDES:  # side first: `买入 平安银行 1000股`
        tokens = [tokens[1], tokens[0], *tokens[2:]]
    if len(tokens) < 3:
        raise OrderGrammarError(_("an order needs a code, a side and a quantity: `{usage}`, e.g. `order 600519.SH buy "
                                  "100 limit=1700`").format(usage=USAGE))
    code, side, qty, rest = tokens[0], english(tokens[1]).lower(), tokens[2].replace(",", ""), tokens[3:]
    qty = qty.removesuffix("股")  # 100股
    named = names.table().codes_for(code) if not CODE.match(code) else ()
    if len(named) > 1:
        raise OrderGrammarError(_("{name} is not one stock{which}: give its ts_code").format(
            name=code, which=did_you_mean(code, ())))
    code = named[0] if named else code
    if not CODE.match(code):
        raise OrderGrammarError(_("{code} is not a ts_code (like 600519.SH or 000001.SZ)").format(code=code))
    if side not in ("buy", "sell"):
        raise OrderGrammarError(_("the side must be buy or sell, not {word}").format(word=repr(tokens[1])))
    if not qty.lstrip("-").isdigit() or not qty.isascii():  # '²' is a digit to isdigit, not to int
        raise OrderGrammarError(_("the quantity must be a whole number of shares, not {word}").format(
            word=repr(tokens[2])))
    if qty.startswith("-") or not qty.strip("0"):  # a buy's lot rule is the broker's check (100 or 200 shares)
        least = _("one lot (100 shares on most boards)") if side == "buy" else "1"
        raise OrderGrammarError(_("the quantity must be a whole number of shares of at least {least}, not {word}")
                                .format(least=least, word=_shortened(tokens[2])))
    if len(qty.lstrip("0")) > len(str(MAX_ORDER_QUANTITY)):  # before int(): thousands of digits are refused
        raise OrderGrammarError(_("the quantity {word} is more than any order may ask for (at most {most} shares)")
                                .format(word=_shortened(tokens[2]), most=f"{MAX_ORDER_QUANTITY:,}"))
    params: dict[str, str] = {}
    words: list[str] = []
    for token in rest:
        match = PARAM.match(token)
        if match:
            params[match.group(1).lower()] = match.group(2)
        else:
            words.append(token)
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        listed = ", ".join(name + did_you_mean(f"{name}={params[name]}", PARAMS) for name in unknown)
        raise OrderGrammarError(_("unknown parameter {names}: an order takes limit=PRICE and account=NAME").format(
            names=listed))
    limit = _price(params["limit"]) if "limit" in params else None
    price_type: PriceType = "limit" if limit else "market"
    try:
        too_many = order_size_problem(code.upper(), int(qty), price_type)
    except OrderRuleError:  # a code no board trades: the broker's check names it
        too_many = None
    if too_many:
        raise OrderGrammarError(too_many)
    return OrderIntent(code.upper(), side, int(qty), price_type, limit,
                       account_name(params["account"]) if "account" in params else None, " ".join(words))


def _shortened(word: str) -> str:
    return word if len(word) <= 24 else word[:20] + "…"


def _price(text: str) -> str:
    """A limit price as text with two decimals; anything that is not a price in fen is refused."""
    try:
        price = Decimal(text)
    except (InvalidOperation, ValueError):
        raise OrderGrammarError(_("limit={text} is not a price").format(text=_shortened(text))) from None
    if not price.is_finite() or price <= 0:
        raise OrderGrammarError(_("limit={text} must be a positive price").format(text=_shortened(text)))
    if price > MAX_PRICE:
        raise OrderGrammarError(_("limit={text} is not a price: A-share prices are below {most} CNY").format(
            text=_shortened(text), most=f"{MAX_PRICE:,}"))
    if price != price.quantize(Decimal("0.01")):
        raise OrderGrammarError(_("limit={text}: A-share prices tick by 0.01 (two decimals at most)").format(text=text))
    return str(price.quantize(Decimal("0.01")))
