"""`quantdesk serve`: the core on the Slack surface, its worker and background service, and the Bolt app in Socket
Mode or HTTP mode."""

from __future__ import annotations

import logging
from threading import Event

from langgraph.checkpoint.base import BaseCheckpointSaver
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from bot.core import Core
from bot.core.background import BackgroundService
from bot.core.wiring import build_core
from bot.core.witness import HeadWitness
from bot.heap import startup_done
from bot.jobs import WorkerHandle, start_serve_worker
from bot.slack.app import SLACK_SCOPE, build_app, make_client
from bot.slack.http import make_server
from bot.slack.surface import SlackSurface
from bot.startup import AppServices, StartupError
from bot.stopping import stop_on_sigterm
from bot.surfaces import SLACK
from tools.storage.db import warm_pool

log = logging.getLogger(__name__)

FIRST_PASS_WAIT_SECONDS = 10.0  # serve listens once the background service's first pass ended, or after this


def slack_startup_error(exc: Exception, token_name: str, api_url: str) -> StartupError:
    """What to fix when the first call to Slack fails: the token was refused, or Slack was not reached."""
    if isinstance(exc, BoltError) and isinstance(exc.__context__, SlackApiError):
        exc = exc.__context__  # Bolt's own auth.test at App() wraps Slack's refusal
    if isinstance(exc, BoltError):
        return StartupError(f"the Slack app cannot start: {exc}")
    if isinstance(exc, SlackApiError):
        return StartupError(f"Slack refused {token_name} ({exc.response.get('error')}); check the token in your "
                            "Slack app's settings")
    reason = getattr(exc, "reason", None) or exc
    return StartupError(f"cannot reach Slack at {api_url} ({reason}); check the network, or SLACK_API_URL if set")


def slack_core(ctx: AppServices, checkpointer: BaseCheckpointSaver) -> Core:
    """The core on the Slack surface (a bare WebClient: a worker needs no Bolt app and calls nothing at start)."""
    if ctx.settings.slack_bot_token is None:
        raise StartupError("SLACK_BOT_TOKEN is not set; see README, 'Slack app in five steps'")
    surface = SlackSurface(make_client(ctx.settings), ctx.settings.assistant_status_refresh_seconds)
    return build_core(ctx, checkpointer, surface, SLACK_SCOPE)


def background_service(core: Core, ctx: AppServices) -> BackgroundService:
    """Serve's background service: every Slack channel's rules (the console runs its own)."""
    settings = ctx.settings
    return BackgroundService(core, settings.reconcile_interval_seconds, settings.rule_catch_up,
                             serves=SLACK.serves_channel,
                             witness=HeadWitness(core, settings.audit_witness_file, settings.audit_channel))


def serve(ctx: AppServices, checkpointer: BaseCheckpointSaver, host: str, port: int) -> None:
    settings = ctx.settings
    core = slack_core(ctx, checkpointer)
    try:
        surface = core.surface
        assert isinstance(surface, SlackSurface)  # slack_core's
        app = build_app(settings, surface.client, core)  # auth.test: first call
    except (BoltError, SlackApiError, OSError) as exc:
        raise slack_startup_error(exc, "SLACK_BOT_TOKEN", settings.slack_api_url) from None
    worker = start_serve_worker(core.queue, core)  # unless `--no-worker` on PostgreSQL
    service = background_service(core, ctx)
    service.start()  # a pass now (start-up), then every few seconds
    warm_pool(ctx.engine)
    if not service.wait_first_pass(FIRST_PASS_WAIT_SECONDS):  # it builds calendars: not beside the first acks
        log.warning("the background service's first pass takes over %.0f s; listening anyway",
                    FIRST_PASS_WAIT_SECONDS)
    startup_done()
    if settings.slack_app_token is not None:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        handler = SocketModeHandler(app, settings.slack_app_token.get_secret_value())
        try:
            handler.connect()  # apps.connections.open, then the WebSocket; reconnects on its own after that
        except (SlackApiError, OSError) as exc:
            raise slack_startup_error(exc, "SLACK_APP_TOKEN", settings.slack_api_url) from None
        stopped = Event()
        stop_on_sigterm(stopped.set)
        log.info("Slack Socket Mode")
        print("connected to Slack in Socket Mode", flush=True)
        try:
            stopped.wait()
        finally:
            handler.close()
            _stop(worker)
        return
    if settings.slack_signing_secret is None:
        raise StartupError("HTTP mode needs SLACK_SIGNING_SECRET (or set SLACK_APP_TOKEN for Socket Mode)")
    server = make_server(app, host, port)
    log.info("Slack HTTP mode on %s:%s/slack/events", host, server.port)
    stop_on_sigterm(server.shutdown)
    print(f"listening on http://{host}:{server.port}/slack/events", flush=True)
    try:
        server.serve_forever()
    finally:
        server.shutdown()
        _stop(worker)


def _stop(worker: WorkerHandle | None) -> None:
    """Let running jobs reach a node boundary; what is cut short is retried by the next worker."""
    if worker is not None:
        worker.stop()
