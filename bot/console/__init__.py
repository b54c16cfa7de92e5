"""The console surface: `quantdesk chat` (session.py) on the core, printing what the core posts (surface.py)."""

from bot.console.session import CONSOLE_SCOPE, Console, run_console
from bot.console.surface import ConsoleSurface, console_place

__all__ = ["CONSOLE_SCOPE", "Console", "ConsoleSurface", "console_place", "run_console"]
