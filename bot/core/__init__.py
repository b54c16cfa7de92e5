"""The adapter-neutral core (bot/core/core.py) and the surface protocol every surface implements."""

from bot.core.core import Core, Verdict, channel_account, clean_text
from bot.core.policy import ALREADY_HANDLED, Policy
from bot.core.surface import Place, Refused, Surface

__all__ = ["ALREADY_HANDLED", "Core", "Place", "Policy", "Refused", "Surface", "Verdict", "channel_account",
           "clean_text"]
