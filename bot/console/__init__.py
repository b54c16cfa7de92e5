"""The console surface: `quantdesk chat` (launch.py starts it at once, session.py runs it on the core, surface.py
prints what the core posts, text.py formats views)."""
