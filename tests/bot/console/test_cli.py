from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from bot.cli import CONSOLE_LOG
from testkit.console import cli_env, quantdesk
from testkit.fakes.slack_server import FakeSlack, SlackServer
from tools.storage.migrate import head_revision


def test_chat_session_on_embedded_defaults(tmp_path: Path) -> None:
    session = "\n".join([
        "fields",
        "load close 000001.SZ,600519.SH 20200101 20200331",
        "ws",
        "bars 600519.SH 20200102 20200103 close",
        "bars 000001.SZ,600519.SH 20200102 20200103 turnover_rate",
        "load pe 000001.SZ 20200101 20200331",
        "bogus",
        "quit",
        "ws",
    ])
    out = quantdesk(["chat"], tmp_path, session)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "daily_basic: turnover_rate" in lines
    assert lines.count("ohlcv/close 58x2 20200102..20200331") == 1
    assert "stored ohlcv/close 58x2 20200102..20200331" in lines
    assert any("600519.SH   20200102" in line for line in lines)
    assert "4 rows" in lines and any(re.match(r"^0 +000001\.SZ +20200102 +\d+\.\d+$", line) for line in lines)
    assert any("'pe' (daily_basic) is not available from the bundled sample" in line for line in lines)
    assert any(line.startswith("I can run these without an LLM") for line in lines)
    assert (tmp_path / "data" / "quantdesk.db").is_file()


def test_signal_session_with_a_clarify_answered_at_the_prompt(tmp_path: Path) -> None:
    session = "\n".join([
        "signal bollinger 600519.SH,000001.SZ window=30",
        "20190101 20200601",
        "signal momentum 000001.SZ 20190101 20200101",
        "cancel",
        "signal rsi 600519.SH 20190101 20190110",
    ])
    out = quantdesk(["chat"], tmp_path, session)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("? Which date range?")
    assert lines[1] == "Signal: bollinger (window=30, k=2)"
    assert lines[2].startswith("Signal bollinger (window=30, k=2): total ") and "against buy-and-hold" in lines[2]
    assert lines[4].startswith("  2019-01-02 – 2020-06-01 · ")
    chart = next(line.split(": ", 1)[1] for line in lines if line.startswith("  saved chart: "))
    assert Path(chart).read_bytes()[:4] == b"\x89PNG" and Path(chart).parent.parent == tmp_path / "data" / "exports"
    assert "? Cross-sectional momentum ranks stocks against each other; give at least 3 codes." in lines
    assert "Cancelled; nothing was run." in lines
    assert any("the signal has no buy or sell at all" in line for line in lines[-4:]), lines[-4:]


def test_workspace_persists_between_console_runs(tmp_path: Path) -> None:
    quantdesk(["chat"], tmp_path, "load vol 000001.SZ 20200101 20200131\n")
    out = quantdesk(["chat"], tmp_path, "ws\n")
    assert "ohlcv/vol 16x1 20200102..20200123" in out.stdout


def test_unmigrated_postgres_is_refused_until_db_upgrade(tmp_path: Path, fresh_pg_url: str) -> None:
    refused = quantdesk(["chat"], tmp_path, "ws\n", DATABASE_URL=fresh_pg_url)
    assert refused.returncode == 2
    assert f"is at revision none, code needs {head_revision()}; run `quantdesk db upgrade`" in refused.stderr
    upgraded = quantdesk(["db", "upgrade"], tmp_path, DATABASE_URL=fresh_pg_url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"is at revision {head_revision()}" in upgraded.stdout
    works = quantdesk(["chat"], tmp_path, "ws\n", DATABASE_URL=fresh_pg_url)
    assert works.returncode == 0 and "workspace is empty" in works.stdout


def test_db_upgrade_hides_the_password(tmp_path: Path, fresh_pg_url: str) -> None:
    with_password = fresh_pg_url.replace("postgres@", "postgres:s3cret-pw@")
    out = quantdesk(["db", "upgrade"], tmp_path, DATABASE_URL=with_password)
    assert out.returncode == 0, out.stderr
    assert "s3cret-pw" not in out.stdout + out.stderr
    assert "***" in out.stdout


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://nobody:s3cret-pw@127.0.0.1:1/x",
     "quantdesk: database postgresql://nobody:***@127.0.0.1:1/x failed: connection failed: connection to server "
     'at "127.0.0.1", port 1 failed: Connection refused; check DATABASE_URL and that the database server is running'),
    ("not-a-url", "quantdesk: DATABASE_URL is not usable (Could not parse SQLAlchemy URL from given URL string); "
                  "use sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE"),
])
def test_db_upgrade_on_a_bad_database_says_what_to_fix(tmp_path: Path, url: str, message: str) -> None:
    out = quantdesk(["db", "upgrade"], tmp_path, DATABASE_URL=url)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [message]


def test_serve_with_slack_unreachable_says_what_to_fix(tmp_path: Path) -> None:
    out = quantdesk(["serve", "--host", "127.0.0.1", "--port", "0"], tmp_path, SLACK_BOT_TOKEN="xoxb-secret-x",
                     SLACK_SIGNING_SECRET="s", SLACK_API_URL="http://127.0.0.1:1/api/")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "xoxb-secret-x" not in out.stderr
    assert re.fullmatch(r"quantdesk: cannot reach Slack at http://127\.0\.0\.1:1/api/ \(.*Connection refused\); "
                        r"check the network, or SLACK_API_URL if set", out.stderr.splitlines()[-1])
    assert sum(line.startswith("quantdesk:") for line in out.stderr.splitlines()) == 1


class _RefusingSlack(FakeSlack):
    def _respond(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": False, "error": "invalid_auth"} if method == "auth.test" else super()._respond(method, args)


def test_serve_with_a_refused_token_says_what_to_fix(tmp_path: Path) -> None:
    with SlackServer(_RefusingSlack()) as slack:
        out = quantdesk(["serve", "--host", "127.0.0.1", "--port", "0"], tmp_path, SLACK_BOT_TOKEN="xoxb-secret-x",
                         SLACK_SIGNING_SECRET="s", SLACK_API_URL=slack.url)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "xoxb-secret-x" not in out.stderr
    assert out.stderr.splitlines()[-1] == ("quantdesk: Slack refused SLACK_BOT_TOKEN (invalid_auth); check the token "
                                           "in your Slack app's settings")
    assert [c.method for c in slack.fake.calls] == ["auth.test"]


def test_local_provider_needs_a_directory(tmp_path: Path) -> None:
    out = quantdesk(["chat"], tmp_path, "", QUANTDESK_DATA_PROVIDER="local")
    assert out.returncode == 2
    assert "needs QUANTDESK_LOCAL_DATA" in out.stderr


def test_factor_session_with_review_at_the_prompt(tmp_path: Path) -> None:
    """Library factors with no LLM, end to end through `quantdesk chat`: approve, edit (typed and from a file),
    a near duplicate's approval rejected, a review rejected, then the library read back."""
    edited = tmp_path / "body.py"
    edited.write_text("return -(close / close.shift(10) - 1)\n")
    session = "\n".join([
        "factor momentum 20190301 20200601 window=20",
        "looks fine",  # not a decision: the prompt says what is expected
        "approve",
        "factor reversal 20190301 20200601",
        "edit name=rev_stack",
        "return close.stack()",
        ".",
        f"edit {edited}",
        "approve",  # the edit passed its checks and is shown again: approved, it is saved
        "factor reversal 20190301 20200601 window=10 name=rev10",  # the values of the edited reversal_5
        "approve",
        "edit",  # not possible on an approval: the prompt says what is
        "reject same as reversal_5",
        "factor volatility 20190301 20200601",
        "reject too close to what we have",
        "factor list",
        "factor show reversal_5_edit_86c6ab",
    ])
    out = quantdesk(["chat"], tmp_path, session)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "--- code review: factor momentum_20 (checks passed; sandbox isolation: full) ---" in text
    assert "the code is waiting for review: approve, edit [FILE] [name=NAME], or reject REASON" in text
    assert "\nFactor momentum_20 v1 saved: Rank IC " in text and " · approve by " in text  # title once, in the summary
    assert "Your edit was not accepted.\n" in text and text.count("must return a DataFrame, got Series") == 1
    assert "--- code review: factor rev_stack (checks FAILED: " in text  # the name typed with the edit
    assert ("Your edit passed its checks; approve saves it as reversal_5_edit_86c6ab: Edited by " in text
            and "Before the edit: minus the return over the last 5 trading days" in text)
    assert ("--- changes against the code first reviewed ---\n-return -(close / close.shift(5) - 1)\n"
            "+return -(close / close.shift(10) - 1)\n--- body of compute_factor ---") in text
    assert "\nFactor reversal_5_edit_86c6ab v1 saved: Rank IC " in text and " · edit by " in text
    assert "--- approval: save rev10 ---" in text and "reversal_5_edit_86c6ab v1: correlation 1.000" in text
    assert "this waits for approval: approve | reject (reject needs a REASON)" in text
    assert ("Not saved: factor rev10 nearly repeats reversal_5_edit_86c6ab; nothing was written. Reason: same as "
            "reversal_5") in text
    assert "Rejected: factor volatility_20 was not backfilled or saved" in text
    assert "  volatility_20 v1 [rejected]" in text and "  momentum_20 v1 [active]" in text
    assert "return -(close / close.shift(10) - 1)" in text.split("reversal_5_edit_86c6ab: ", 1)[1]
    chart = next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("  saved chart: "))
    assert Path(chart).read_bytes()[:4] == b"\x89PNG"


def test_first_start_says_in_one_line_that_it_created_the_database(tmp_path: Path) -> None:
    """At the default log level the migrations are not listed (alembic logs at WARNING); a second start is quiet."""
    first = quantdesk(["chat"], tmp_path, "quit\n", QUANTDESK_LOG_LEVEL="INFO")
    assert first.returncode == 0, first.stderr
    created = [line for line in first.stderr.splitlines() if "database" in line and "revision" in line]
    assert created == [f"database created at sqlite:///{tmp_path / 'data' / 'quantdesk.db'}, revision "
                       f"{head_revision()}"]
    assert "Running upgrade" not in first.stderr
    again = quantdesk(["chat"], tmp_path, "quit\n", QUANTDESK_LOG_LEVEL="INFO")
    assert "database created" not in again.stderr


def test_the_console_keeps_info_lines_off_the_screen_and_in_its_log_file(tmp_path: Path) -> None:
    """With no QUANTDESK_LOG_LEVEL set, the console's terminal shows warnings only; the log file has everything."""
    env = {k: v for k, v in cli_env(tmp_path).items() if k != "QUANTDESK_LOG_LEVEL"}
    out = subprocess.run([sys.executable, "-m", "bot.cli", "chat"], input="quit\n", capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert " INFO " not in out.stderr
    logged = (tmp_path / "data" / CONSOLE_LOG).read_text(encoding="utf-8")
    assert " INFO bot.startup: database: sqlite:///" in logged and " INFO bot.jobs.local: " in logged


def test_debug_logging_lists_the_migrations(tmp_path: Path) -> None:
    out = quantdesk(["chat"], tmp_path, "quit\n", QUANTDESK_LOG_LEVEL="DEBUG")
    assert out.returncode == 0, out.stderr
    assert "Running upgrade  -> 0001" in out.stderr


def test_version_and_serve_help(tmp_path: Path) -> None:
    out = quantdesk(["--version"], tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"quantdesk {version('quantdesk')}"
    help_text = " ".join(quantdesk(["serve", "--help"], tmp_path).stdout.split())
    assert "--host HOST address the HTTP mode listens on (default 0.0.0.0;" in help_text
    assert "--port PORT port of the HTTP mode's /slack/events (default 3000;" in help_text
