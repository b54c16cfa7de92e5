"""How many codes a factor's quantile figures need. Below MIN_CODES the reviewer is warned before the code review
and saving asks for an approval (the confirm_save gate), as for a near duplicate."""

from __future__ import annotations

from tools.i18n import _

QUANTILES = 5
MIN_CODES = 4 * QUANTILES  # fewer than 4 codes a quantile on average: quantile spreads and turnover are noise


def too_few_codes(codes: int) -> str | None:
    """'3 codes, 5 quantiles: quantile spreads mean little ...' (in the language in effect) below MIN_CODES, else
    None."""
    if codes >= MIN_CODES:
        return None
    return _("{codes} codes, {quantiles} quantiles: quantile spreads mean little (saving asks for an approval below "
             "{least} codes)").format(codes=codes, quantiles=QUANTILES, least=MIN_CODES)
