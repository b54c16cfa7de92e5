"""The `quantdesk` command. Heavy modules are imported by the command that needs them, so `quantdesk chat` shows
its prompt at once (bot/console/launch.py warms up behind it)."""

from __future__ import annotations

import argparse
import sys
from datetime import date
from importlib.metadata import version
from pathlib import Path

from bot.heap import paused_for_startup, startup_done
from bot.logs import configure_logging
from tools.i18n import _
from tools.redact import remember_settings
from tools.settings import Settings, SettingsError, get_settings

LONG_RUNNING = ("chat", "serve", "worker")  # the commands that start a process to serve for a long time
CONSOLE_LOG = "console.log"  # the console's log file, in QUANTDESK_DATA_DIR

NO_SEPARATE_WORKER = ("the embedded SQLite default runs jobs in-process inside `quantdesk serve` and `quantdesk chat`; "
                      "`quantdesk worker` and `serve --no-worker` need DATABASE_URL=postgresql://...")


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2026-03-02") from None


def _days(first: date | None, last: date | None) -> tuple[date, date] | tuple[()] | None:
    """A pair of days given together: both, () for neither, None for one alone."""
    if first is not None and last is not None:
        return first, last
    return () if first is None and last is None else None


SURFACE_NAMES = ("slack", "feishu")  # what `serve --surface` takes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quantdesk", description="QuantDesk research desk")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('quantdesk')}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("chat", help="local console on the same workflows (reads stdin)")
    serve = sub.add_parser("serve", help="run the chat bot: Slack (Socket Mode with SLACK_APP_TOKEN, else HTTP mode) "
                                         "or Feishu (HTTP callbacks; the long connection without "
                                         "FEISHU_VERIFICATION_TOKEN and FEISHU_ENCRYPT_KEY)")
    serve.add_argument("--surface", choices=SURFACE_NAMES, default="slack",
                       help="the chat surface served (default %(default)s)")
    serve.add_argument("--host", default="0.0.0.0",
                       help="address the HTTP mode listens on (default %(default)s; unused in Socket Mode)")
    serve.add_argument("--port", type=int, default=3000,
                       help="port of the HTTP mode's /slack/events (default %(default)s; unused in Socket Mode; "
                            "Feishu's HTTP callbacks: /feishu/events)")
    serve.add_argument("--no-worker", action="store_true",
                       help="run no job worker beside the listener (PostgreSQL: `quantdesk worker` processes run jobs)")
    worker = sub.add_parser("worker", help="run jobs from the PostgreSQL job queue (any number of hosts)")
    worker.add_argument("--concurrency", type=_positive, default=None,
                        help="jobs this process runs at once (default QUANTDESK_JOB_CONCURRENCY)")
    worker.add_argument("--parent", type=int, default=None, help=argparse.SUPPRESS)  # serve's child: exit with it
    worker.add_argument("--surface", choices=SURFACE_NAMES, default=None,
                        help="the surface whose jobs it runs (default: feishu when only FEISHU_APP_ID is set, else "
                             "slack)")
    evaluate = sub.add_parser("eval", help="measure a workflow against the configured model on a dataset of requests")
    evaluate.add_argument("workflow", nargs="?", help="signal, factor, rule or analyze")
    evaluate.add_argument("--dataset", type=Path, help="a dataset JSON file (default: the workflow's shipped one)")
    evaluate.add_argument("--model", help="the main model to evaluate (default QUANTDESK_MODEL)")
    evaluate.add_argument("--light-model", help="the light model (default QUANTDESK_LIGHT_MODEL)")
    evaluate.add_argument("--judge-model", help="the LLM judge's model (default QUANTDESK_MODEL, whatever --model)")
    evaluate.add_argument("--repeat", type=_positive, default=1, help="runs of the whole dataset (mean and spread)")
    evaluate.add_argument("--out", type=Path, help="where the JSON and CSV go (default QUANTDESK_DATA_DIR/evals)")
    evaluate.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                          help="print two reports side by side instead of running")
    audit = sub.add_parser("audit", help="the tamper-evident audit trail")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    check = audit_sub.add_parser("verify", help="walk the audit chains; exit 1 at an edited, deleted or inserted entry")
    check.add_argument("--account", help="only this paper account's chain")
    check.add_argument("--head", type=Path, help="an `audit export` CSV whose signed head the chain must still hold")
    check.add_argument("--witness", metavar="FILE|slack",
                       help="hold every chain to its witnessed heads: a QUANTDESK_AUDIT_WITNESS_FILE, or `slack` "
                            "(QUANTDESK_AUDIT_CHANNEL)")
    check.add_argument("--unsigned", action="store_true",
                       help="exit 0 even when head signatures cannot be checked (no public key for them)")
    export = audit_sub.add_parser("export", help="one chain's audit entries and signed head as CSV")
    chain = export.add_mutually_exclusive_group(required=True)
    chain.add_argument("--account", help="the paper account's chain")
    chain.add_argument("--global", dest="global_chain", action="store_true",
                       help="the global chain: the trading switch, the session clock, the bot's human decisions")
    export.add_argument("--from", dest="start", type=_day, help="first day written, YYYY-MM-DD (Shanghai)")
    export.add_argument("--to", dest="end", type=_day, help="last day written, YYYY-MM-DD (Shanghai)")
    export.add_argument("--session-from", type=_day, help="first trading session, YYYY-MM-DD (the simulated clock's)")
    export.add_argument("--session-to", type=_day, help="last trading session, YYYY-MM-DD")
    export.add_argument("--out", type=Path, help="the CSV file (default: standard output)")
    keygen = audit_sub.add_parser("keygen", help="write a new Ed25519 signing key; print its key id and public key")
    keygen.add_argument("--dir", type=Path, default=Path("."), help="where the private key file goes (default: here)")
    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply migrations to DATABASE_URL")
    return parser


def _worker_surface(settings: Settings, surface: str | None) -> str:
    """The surface a worker posts to: the one named, else Feishu when only Feishu is configured (serve's child
    worker inherits its environment), else Slack."""
    if surface is not None:
        return surface
    return "feishu" if settings.feishu_app_id and settings.slack_bot_token is None else "slack"


def _worker(settings: Settings, concurrency: int | None, parent: int | None, surface: str | None) -> int:
    """`quantdesk worker`: a procrastinate worker running the bot's jobs until SIGINT/SIGTERM (or, as the child
    of `serve`, until that process is gone)."""
    from bot.feishu.serve import feishu_core
    from bot.jobs.child import exit_with_parent
    from bot.jobs.pg import PgJobQueue
    from bot.slack.serve import slack_core
    from bot.startup import build_context
    from graphs.checkpointer import open_checkpointer
    from tools.storage.db import redacted

    ctx = build_context(settings)
    surface_core = feishu_core if _worker_surface(settings, surface) == "feishu" else slack_core
    with open_checkpointer(settings.database_url_value, max_connections=settings.checkpoint_pool_size) as checkpointer:
        core = surface_core(ctx, checkpointer)  # a client only: no listener, no call until a job posts
        queue = core.queue
        assert isinstance(queue, PgJobQueue)
        startup_done()
        print(f"worker on {redacted(settings.database_url_value)}: queue {queue.queue}, concurrency "
              f"{concurrency or settings.job_concurrency}", flush=True)
        if parent is not None:
            exit_with_parent(parent)
        queue.run_worker(core, concurrency)
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from bot.evaluation.command import EvalError, run_compare, run_eval

    try:
        if args.compare:
            return run_compare(*args.compare)
        if not args.workflow:
            raise EvalError(_("name a workflow (quantdesk eval factor) or give --compare A.json B.json"))
        return run_eval(settings, args.workflow, args.dataset, args.model, args.light_model, args.judge_model,
                        args.repeat, args.out)
    except EvalError as exc:
        print(f"quantdesk eval: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in LONG_RUNNING:  # each calls bot.heap.startup_done once it is ready to serve
        with paused_for_startup():
            return _main(args)
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        settings = get_settings()
    except SettingsError as exc:  # every command reads the settings first: a bad value is said, one line each
        print("\n".join(f"quantdesk: {line}" for line in str(exc).splitlines()), file=sys.stderr)
        return 2
    remember_settings(settings)  # masked in every log line from here on
    if args.command == "chat":  # the screen is for the conversation: warnings on it, everything in the log file
        explicit = "log_level" in settings.model_fields_set
        configure_logging(settings.log_level, terminal_level=None if explicit else "WARNING",
                          log_file=settings.data_dir / CONSOLE_LOG)
        from bot.console.launch import launch

        return launch(settings, sys.stdin, sys.stdout, failure_message)
    configure_logging(settings.log_level)
    try:
        return _command(args, settings)
    except Exception as exc:  # noqa: BLE001 - a start-up failure is said plainly; anything else is re-raised
        message = failure_message(exc, settings)
        if message is None:
            raise
        print(f"quantdesk: {message}", file=sys.stderr)
        return 2


def _command(args: argparse.Namespace, settings: Settings) -> int:
    from bot.startup import build_context
    from graphs.checkpointer import open_checkpointer
    from tools.storage.db import is_sqlite, make_engine, redacted
    from tools.storage.migrate import upgrade

    if args.command == "eval":
        return _eval(args, settings)
    if args.command == "audit":
        from bot.audit import run_export, run_keygen, run_verify

        if args.audit_command == "keygen":
            return run_keygen(args.dir)
        if args.audit_command == "verify":
            return run_verify(settings, args.account, args.head, args.unsigned, args.witness)
        days, sessions = _days(args.start, args.end), _days(args.session_from, args.session_to)
        if days == sessions == () or days is None or sessions is None:
            print("quantdesk audit export: give --from and --to, --session-from and --session-to, or both pairs",
                  file=sys.stderr)
            return 2
        return run_export(settings, None if args.global_chain else args.account, days or None, args.out,
                          sessions or None)
    if args.command == "db":
        url = settings.database_url_value
        revision = upgrade(make_engine(url))
        print(f"{redacted(url)} is at revision {revision}")
        return 0
    if args.command == "worker" or getattr(args, "no_worker", False):
        if is_sqlite(settings.database_url_value):
            print(f"quantdesk: {NO_SEPARATE_WORKER}", file=sys.stderr)
            return 2
        if args.command == "worker":
            return _worker(settings, args.concurrency, args.parent, args.surface)
        settings = settings.model_copy(update={"in_process_worker": False})
    if args.surface == "feishu":
        from bot.feishu.serve import serve
    else:
        from bot.slack.serve import serve

    ctx = build_context(settings)
    with open_checkpointer(settings.database_url_value, max_connections=settings.checkpoint_pool_size) as checkpointer:
        serve(ctx, checkpointer, args.host, args.port)
    return 0


def failure_message(exc: BaseException, settings: Settings) -> str | None:
    """What to tell a person whose command could not start (configuration, database, data, sandbox); None for
    anything else (a bug: it is raised)."""
    from sqlalchemy.exc import ArgumentError, OperationalError

    from bot.startup import StartupError
    from tools.data.schema import DataError
    from tools.sandbox import SandboxUnavailable
    from tools.storage.db import redacted

    if isinstance(exc, StartupError | DataError | SandboxUnavailable):
        return str(exc)
    if isinstance(exc, OperationalError):
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        return (f"database {redacted(settings.database_url_value)} failed: {reason}; check DATABASE_URL and that the "
                "database server is running")
    if isinstance(exc, ArgumentError):
        return f"DATABASE_URL is not usable ({exc}); use sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE"
    return None


if __name__ == "__main__":
    sys.exit(main())
