"""`quantdesk serve --surface feishu`: the core on the Feishu surface, its worker and background service, and what
Feishu delivers through: HTTP callbacks (checked by the verification token and the encrypt key), or the long
connection when neither is set (no public URL needed)."""

from __future__ import annotations

import logging

from langgraph.checkpoint.base import BaseCheckpointSaver

from bot.core import Core
from bot.core.background import BackgroundService
from bot.core.wiring import build_core
from bot.feishu.callbacks import Callbacks
from bot.feishu.client import FeishuClient, FeishuError, domain_of
from bot.feishu.http import PATH, HttpListener
from bot.feishu.surface import FeishuSurface
from bot.feishu.ws import LongConnectionHandler, long_connection
from bot.heap import startup_done
from bot.jobs import start_serve_worker
from bot.startup import AppServices, StartupError
from bot.stopping import leave, stop_on_sigterm
from bot.surfaces import FEISHU
from tools.storage.db import warm_pool

log = logging.getLogger(__name__)

FIRST_PASS_WAIT_SECONDS = 10.0


def feishu_core(ctx: AppServices, checkpointer: BaseCheckpointSaver) -> Core:
    """The core on the Feishu surface (a worker needs no listener and calls Feishu only when a job posts)."""
    settings = ctx.settings
    if not settings.feishu_app_id or settings.feishu_app_secret is None:
        raise StartupError("FEISHU_APP_ID and FEISHU_APP_SECRET are not set; see README, 'Feishu (飞书) app'")
    return build_core(ctx, checkpointer, FeishuSurface(FeishuClient(settings)), FEISHU.scope)


def serve(ctx: AppServices, checkpointer: BaseCheckpointSaver, host: str, port: int) -> None:
    """HTTP callbacks when FEISHU_VERIFICATION_TOKEN or FEISHU_ENCRYPT_KEY is set, else the long connection."""
    settings = ctx.settings
    core = feishu_core(ctx, checkpointer)
    surface = core.surface
    assert isinstance(surface, FeishuSurface)  # feishu_core's
    try:
        bot = surface.client.bot_open_id()  # the first call: credentials and the address are checked here
    except (FeishuError, OSError) as exc:
        raise StartupError(f"Feishu at {domain_of(settings.feishu_domain)} refused the app or was not reached "
                           f"({exc}); check FEISHU_APP_ID, FEISHU_APP_SECRET and FEISHU_DOMAIN") from None
    callbacks = Callbacks(core, surface, bot)
    token = settings.feishu_verification_token.get_secret_value() if settings.feishu_verification_token else ""
    key = settings.feishu_encrypt_key.get_secret_value() if settings.feishu_encrypt_key else ""
    worker = start_serve_worker(core.queue, core)
    service = BackgroundService(core, settings.reconcile_interval_seconds, settings.rule_catch_up,
                                serves=FEISHU.serves_channel)
    service.start()
    warm_pool(ctx.engine)
    if not service.wait_first_pass(FIRST_PASS_WAIT_SECONDS):
        log.warning("the background service's first pass takes over %.0f s; listening anyway",
                    FIRST_PASS_WAIT_SECONDS)
    startup_done()
    try:
        if token or key:
            _listen(callbacks, key, token, host, port)
        else:
            secret = settings.feishu_app_secret.get_secret_value() if settings.feishu_app_secret else ""
            client = long_connection(settings.feishu_app_id or "", secret, domain_of(settings.feishu_domain),
                                     LongConnectionHandler(callbacks.dispatcher("", ""), callbacks.after))
            log.info("Feishu long connection")
            stop_on_sigterm(leave)
            print("connecting to Feishu by long connection", flush=True)
            client.start()
    finally:
        if worker is not None:
            worker.stop()


def _listen(callbacks: Callbacks, key: str, token: str, host: str, port: int) -> None:
    server = HttpListener(callbacks.dispatcher(key, token), callbacks.after, host, port)
    log.info("Feishu HTTP callbacks on %s:%s%s", host, server.port, PATH)
    stop_on_sigterm(server.shutdown)
    print(f"listening on http://{host}:{server.port}{PATH}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.shutdown()
