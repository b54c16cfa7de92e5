"""A-share codes as people type them: a ts_code (600519.SH), and the bare or half-suffixed codes (600519, 600519.)
that are not one, with the ts_code they probably mean."""

from __future__ import annotations

import re

from tools.i18n import _

CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$", re.IGNORECASE)
CODE_LIKE = re.compile(r"^\d{6}(\.[A-Za-z]*)?$")  # six digits with no or a wrong suffix: named, never dropped


def bad_codes(text: str) -> tuple[str, ...]:
    """The code-like words of a comma- or space-separated list that are not ts_codes."""
    words = re.split(r"[\s,，]+", text.strip())
    return tuple(w for w in words if w and not CODE.match(w) and CODE_LIKE.match(w))


def exchange_of(digits: str) -> str | None:
    """The exchange suffix an A-share code's digits belong to (SSE 6xxxxx, SZSE 0/3xxxxx, BSE 4/8/92xxxx)."""
    if digits.startswith("6") or digits.startswith("9") and not digits.startswith("92"):
        return "SH"
    if digits[0] in "03":
        return "SZ"
    if digits[0] in "48" or digits.startswith("92"):
        return "BJ"
    return None


def bad_code_message(bad_codes: tuple[str, ...]) -> str:
    """'600519 is not a ts_code; did you mean 600519.SH?' for each code-like word."""
    parts = []
    for token in bad_codes:
        digits = token[:6]
        suffix = exchange_of(digits)
        parts.append(_("{token} is not a ts_code; did you mean {code}?").format(token=token, code=f"{digits}.{suffix}")
                     if suffix else
                     _("{token} is not a ts_code (ts_codes look like 600519.SH or 000001.SZ).").format(token=token))
    return _("; ").join(parts)
