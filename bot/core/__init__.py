"""The adapter-neutral core (bot/core/core.py) and the surface protocol every surface implements."""

from bot.core.core import Core, channel_account
from bot.core.decider import Verdict
from bot.core.intake import Intake, Reply, Typed, clean_text
from bot.core.policy import ALREADY_HANDLED, Policy
from bot.core.surface import Place, Refused, Surface

__all__ = ["ALREADY_HANDLED", "Core", "Intake", "Place", "Policy", "Refused", "Reply", "Surface", "Typed", "Verdict",
           "channel_account",
           "clean_text"]
