"""The Feishu (Lark) surface: `quantdesk serve --surface feishu` (serve.py runs it on the core, callbacks.py takes
what Feishu delivers, surface.py posts what the core shows as the cards render.py builds, client.py calls the Open
API through the official SDK, http.py listens for callbacks)."""
