"""Block Kit for interrupts and results (ARCHITECTURE §3 limits), with a plain-text fallback for each message."""

from __future__ import annotations

import json
from typing import Any

SECTION_TEXT_MAX = 3000
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2000
MAX_BLOCKS = 50
CHOICE_BUTTONS_MAX = 20


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_TEXT_MAX)}}


def button_value(thread_id: str, interrupt_id: str, decision: str) -> str:
    """A button's small JSON value: which thread, which pause, what was chosen."""
    value = json.dumps({"t": thread_id, "i": interrupt_id, "d": decision}, separators=(",", ":"))
    if len(value) > BUTTON_VALUE_MAX:
        raise ValueError("button value over Slack's 2,000-character limit")
    return value


def clarify_message(thread_id: str, interrupt_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A clarify question; choices become buttons, any thread reply answers too."""
    question = str(payload.get("question") or "Could you say more?")
    blocks: list[dict[str, Any]] = [_section(f":question: {question}")]
    choices = list(payload.get("choices") or [])[:CHOICE_BUTTONS_MAX]
    for start in range(0, len(choices), 5):  # an actions block holds at most 25 elements; 5 a row reads better
        blocks.append({
            "type": "actions",
            "block_id": f"clarify_{start}",
            "elements": [{"type": "button", "action_id": f"clarify_choice_{start + i}",
                          "text": {"type": "plain_text", "text": _clip(choice, BUTTON_TEXT_MAX)},
                          "value": button_value(thread_id, interrupt_id, choice)}
                         for i, choice in enumerate(choices[start:start + 5])],
        })
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": "Reply in this thread" + (" or press a button." if choices else ".")}]})
    return {"text": question, "blocks": blocks[:MAX_BLOCKS]}


def answered_message(question: str, user_id: str, answer: str) -> dict[str, Any]:
    """What a clarify message becomes once answered: no buttons, who said what."""
    text = f"{question}\n*<@{user_id}>:* {answer}"
    return {"text": f"{question} — answered by {user_id}", "blocks": [_section(text)]}


def _pct(value: float) -> str:
    return f"{value:.2%}"


def signal_result_message(result: dict[str, Any]) -> dict[str, Any]:
    """Summary blocks of a signal run: what ran, signal counts, backtest metrics, warnings."""
    m, counts = result["metrics"], result["counts"]
    fields = [
        ("Total return", _pct(m["total_return"])), ("Annualised", _pct(m["annual_return"])),
        ("Sharpe", f"{m['sharpe']:.2f}"), ("Max drawdown", _pct(m["max_drawdown"])),
        ("Trades", str(m["trades"])), ("Hit rate", f"{m['hit_rate']:.1%}"),
        ("Daily turnover", _pct(m["turnover"])), ("Fee per side", _pct(m["fee_rate"])),
        ("Buy / sell", f"{counts['buy']} / {counts['sell']}"),
        ("Hold / missing", f"{counts['hold']} / {counts['missing']}"),
    ]
    codes = ", ".join(result["codes"][:12]) + (f" and {len(result['codes']) - 12} more" if len(result["codes"]) > 12
                                                else "")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(f"Signal: {result['title']}", 150)}},
        _section(f"{codes}\n{result['first_date']} – {result['last_date']} · {result['shape'][0]} dates × "
                 f"{result['shape'][1]} codes"),
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"} for k, v in fields]},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(result["conventions"], 3000)}]},
    ]
    for warning in result.get("warnings", [])[:5]:
        note = _clip(f":warning: {warning}", 3000)
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    text = (f"Signal {result['title']}: total {_pct(m['total_return'])}, Sharpe {m['sharpe']:.2f}, "
            f"max drawdown {_pct(m['max_drawdown'])}, {m['trades']} trades")
    return {"text": text, "blocks": blocks[:MAX_BLOCKS]}


def reply_message(text: str) -> dict[str, Any]:
    return {"text": _clip(text, 40_000), "blocks": [_section(text)]}
