"""A decision's stability: how often its live re-runs gave the rating it had, as a line and as the data a result
keeps (the decision's card shows it once re-runs exist)."""

from __future__ import annotations

from typing import Any

from tools.desk.log import rating_word
from tools.i18n import _
from tools.runs.store import Stability


def stability_text(stable: Stability) -> str:
    """`2 of 3 live re-runs gave the run's rating Buy (Buy 2, Overweight 1)`."""
    counted = sorted(stable.ratings.items(), key=lambda item: (-item[1], item[0]))
    seen = ", ".join(f"{rating_word(rating)} {n}" for rating, n in counted)
    return _("{same} of {runs} live re-runs gave the run's rating {rating} ({seen})").format(
        same=stable.same, runs=stable.runs, rating=rating_word(stable.rating), seen=seen)


def stability_data(stable: Stability) -> dict[str, Any]:
    """What a result keeps of it (JSON), read back by `stability_of`."""
    return {"rating": stable.rating, "same": stable.same, "runs": stable.runs, "ratings": dict(stable.ratings)}


def stability_of(data: dict[str, Any]) -> Stability:
    return Stability(str(data["rating"]), int(data["same"]), int(data["runs"]),
                     {str(k): int(v) for k, v in dict(data["ratings"]).items()})
