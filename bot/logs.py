"""Logging for every entry point: one format, and alembic's per-migration lines only at DEBUG."""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from tools.redact import RedactingFilter

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE_BYTES = 5_000_000  # a log file rolls over at this size, keeping LOG_FILE_BACKUPS old ones
LOG_FILE_BACKUPS = 3


def configure_logging(level: str, *, terminal_level: str | None = None, log_file: Path | None = None) -> None:
    """Log at `level`; alembic's per-migration lines only at DEBUG (else its warnings and errors).

    With `log_file`, every record at `level` goes there and the terminal (stderr) shows only `terminal_level` and
    above. A file that cannot be opened leaves the terminal at `level`, and says so."""
    level = level.upper()
    terminal = logging.StreamHandler()
    handlers: list[logging.Handler] = [terminal]
    problem = None
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            handlers.append(RotatingFileHandler(log_file, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS,
                                                encoding="utf-8"))
            terminal.setLevel((terminal_level or level).upper())
        except OSError as exc:
            problem = exc.strerror or str(exc)
    for handler in handlers:  # no secret reaches a log, whoever logs it (an endpoint's echoed key, a traceback)
        handler.addFilter(RedactingFilter())
    logging.basicConfig(level=level, format=FORMAT, handlers=handlers)
    logging.getLogger("alembic").setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)
    if problem:
        logging.getLogger(__name__).warning("cannot write the log file %s (%s): logging to the terminal",
                                            log_file, problem)
