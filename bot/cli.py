"""The `quantdesk` command."""

from __future__ import annotations

import argparse
import sys

from sqlalchemy.exc import ArgumentError, OperationalError

from bot.console import run_console
from bot.context import StartupError, build_context, configure_logging
from bot.runner import Runner
from tools.data.schema import DataError
from tools.sandbox import SandboxUnavailable
from tools.settings import get_settings
from tools.storage.checkpointer import open_checkpointer
from tools.storage.db import make_engine, redacted
from tools.storage.migrate import upgrade


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quantdesk", description="QuantDesk research desk")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("chat", help="local console on the same workflows (reads stdin)")
    serve = sub.add_parser("serve", help="run the Slack bot (Socket Mode with SLACK_APP_TOKEN, else HTTP mode)")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=3000)
    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply migrations to DATABASE_URL")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    try:
        if args.command == "db":
            url = settings.database_url_value
            revision = upgrade(make_engine(url))
            print(f"{redacted(url)} is at revision {revision}")
            return 0
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            if args.command == "serve":
                from bot.slack.serve import serve

                serve(ctx, checkpointer, args.host, args.port)
                return 0
            return run_console(ctx, Runner(ctx, checkpointer))
    except (StartupError, DataError, SandboxUnavailable) as exc:
        print(f"quantdesk: {exc}", file=sys.stderr)
        return 2
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        print(f"quantdesk: database {redacted(settings.database_url_value)} failed: {reason}; check DATABASE_URL "
              "and that the database server is running", file=sys.stderr)
        return 2
    except ArgumentError as exc:
        print(f"quantdesk: DATABASE_URL is not usable ({exc}); use sqlite:///PATH or "
              "postgresql://USER@HOST:PORT/DATABASE", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
