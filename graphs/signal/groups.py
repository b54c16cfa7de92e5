"""The ends of a cross-sectional ranking a built-in strategy trades (momentum's top and bottom, valuation's cheap
and dear), and the warning when too few codes leave one of them empty: the strategy then never buys or never sells."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tools.i18n import _


@dataclass(frozen=True)
class Group:
    """The share of the ranked codes named by `param`, at the low end (rank <= share) or the high end (rank > 1 -
    share) of the daily percentile ranks, which the strategy buys or sells (`side`)."""

    param: str
    side: Literal["buy", "sell"]
    low: bool

    def size(self, codes: int, share: float) -> int:
        """How many of `codes` distinct percentile ranks (k / codes, as pandas ranks) the group holds."""
        ranks = np.arange(1, codes + 1) / codes
        return int((ranks <= share).sum() if self.low else (ranks > 1 - share).sum())

    def codes_needed(self, share: float) -> int:
        """The fewest codes with at least one in the group."""
        return next(n for n in range(1, math.ceil(1 / share) + 2) if self.size(n, share) >= 1)

    def share_needed(self, codes: int) -> float:
        """The smallest share in steps of 0.01 that holds one of `codes` codes."""
        return next(k / 100 for k in range(1, 101) if self.size(codes, k / 100) >= 1)


def empty_group_warnings(strategy: str, groups: tuple[Group, ...], params: dict[str, float | int],
                         codes: int) -> list[str]:
    """A warning per group that holds no code among `codes`, saying what the run did and how to fill it."""
    warnings = []
    for group in groups:
        share = float(params[group.param])
        if group.size(codes, share):
            continue
        did = (_("it never signals a sell, and every code it buys is held to the end (a buy-and-hold of the codes "
                 "it bought)") if group.side == "sell" else
               _("it never signals a buy, so it holds nothing long"))
        warnings.append(_("{strategy} ranks {codes} codes each day, and its {param}={share} group holds none of them "
                          "(it needs at least {needed} codes): {did}. Give at least {needed} codes, or {param}={fits} "
                          "or more.").format(strategy=strategy, codes=codes, param=group.param, share=f"{share:g}",
                                             needed=group.codes_needed(share), did=did,
                                             fits=f"{group.share_needed(codes):g}"))
    return warnings
