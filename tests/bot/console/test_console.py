"""`quantdesk chat` as a new user drives it: wrong argument counts, `cancel` at a prompt, a new request while a
question is pending, follow-ups, malformed codes, rejections without a reason (issue 11, defects 1–4 and 12)."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from testkit.console import cli_env, console_lines


def test_data_commands_with_wrong_arguments_print_their_usage_and_the_session_goes_on(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "load close 600519.SH 20200101", "bars", "bars 600519.SH", "show", "show a b",
                  "load close 600519.SH 20200101 20200110 extra", "codes now", "fields")
    assert lines[:7] == ["usage: load FIELD CODES START END", "usage: bars CODES START END [FIELD ...]",
                         "usage: bars CODES START END [FIELD ...]", "usage: show NAME", "usage: show NAME",
                         "usage: load FIELD CODES START END", "usage: codes"]
    assert lines[7].startswith("daily: open, high, low, close")  # the session survived every one of them


def test_cancel_ends_a_pending_question_in_the_factor_workflow(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "factor momentum window=20", "cancel", "fields", "hello there")
    assert lines[0].startswith("? Which dates?")
    assert lines[1] == "Cancelled; nothing was run."
    assert sum(line.startswith("? ") for line in lines) == 1  # asked once, not three more times
    assert lines[2].startswith("daily: ")
    assert lines[4].startswith("I can run these without an LLM")  # free text after a cancel is not a follow-up


def test_cancel_with_nothing_running_or_waiting_says_so(tmp_path: Path) -> None:
    nothing = "Nothing is running or waiting in this thread, so there is nothing to cancel."
    lines = console_lines(tmp_path, "cancel", "factor momentum window=20", "cancel", "取消")
    assert lines[0] == nothing and lines[1].startswith("? Which dates?")
    assert lines[2:] == ["Cancelled; nothing was run.", nothing]  # the second is in a fresh thread: nothing to cancel


def test_a_new_request_at_a_prompt_starts_afresh_and_commands_are_not_eaten_as_answers(tmp_path: Path) -> None:
    lines = console_lines(tmp_path,
                  "signal rsi 600519.SH 20190101 20200601 window=0",  # out of range: asks for a corrected value
                  "help", "factor list", "fields",  # each runs; none is taken as the answer
                  "signal ma_cross 600519.SH,000001.SZ 20190101 20200601 fast=5 slow=20",
                  "fast=10 slow=30",  # a follow-up re-runs the last request with these changes
                  "ws", "pending")
    assert lines[0] == "? window must be between 2 and 250, got 0. Reply with a corrected value, or `cancel`."
    assert any(line.startswith("workflow requests") for line in lines)  # help
    assert any(line.startswith("No factors saved yet") for line in lines)  # factor list
    assert any(line.startswith("daily: ") for line in lines)  # fields
    cancelled = lines.index("(the previous request's pending question was cancelled; starting the new request)")
    assert lines[cancelled + 1] == "Cancelled; nothing was run."  # ended as `cancel` would: nothing left open
    assert lines[-1] == "nothing is waiting for an answer"
    assert not any("has no parameter window" in line for line in lines)
    titles = [line for line in lines if line.startswith("Signal: ")]
    assert titles == ["Signal: ma_cross (fast=5, slow=20)", "Signal: ma_cross (fast=10, slow=30)"]
    current = lines[lines.index("current request:") + 1:]
    assert any(line.startswith("signal/") for line in current)  # the workflow's output is in `ws`
    assert any(line.startswith("ohlcv/close ") for line in current)


def test_malformed_codes_are_named_with_the_code_they_probably_mean(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "factor momentum 20190301 20200601 600519 window=20", "cancel",
                  "signal ma_cross 600519 20190101 20200601", "cancel", "signal rsi 000001 20190101 20200601")
    assert lines[0] == "? 600519 is not a ts_code; did you mean 600519.SH? Reply with the corrected codes, or `cancel`."
    assert lines[1] == "  choices: 600519.SH"  # the suggestion, answered by its number or `yes`
    assert lines[3] == lines[0]
    assert lines[6].startswith("? 000001 is not a ts_code; did you mean 000001.SZ?")


def test_a_rejection_needs_a_reason(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "factor reversal 20190301 20200601", "reject", "reject not what I asked for")
    assert "reject needs a reason: reject REASON (the rejection is recorded)" in lines
    assert any(line.startswith("Rejected: factor reversal_5 was not backfilled or saved") and
               line.endswith("Reason: not what I asked for") for line in lines)


def test_a_new_request_at_an_order_card_rejects_the_card_so_the_rule_can_propose_again(tmp_path: Path) -> None:
    lines = console_lines(tmp_path,
                  'rule add 600519.SH "buy when close > ma(30) and rsi(14) < 70; sell when close < ma(30)" size=100',
                  "rule run 1", "signal rsi 600519.SH 20190101 20200601", "rule run 1", "rule log 1")
    cards = [line for line in lines if line.startswith("--- approval: ")]
    assert len(cards) == 2, lines  # the second run proposes again: the first card no longer blocks the rule
    assert "(the previous request's pending review or approval is rejected first)" in lines
    assert not any("waiting for a trader's approval" in line for line in lines)
    assert any(line.startswith("Signal: rsi") for line in lines)


def test_bars_and_load_suggest_the_code_and_bars_print_each_row_once_in_one_format(tmp_path: Path) -> None:
    """Issue 28, items 7 and 8: the suggestion signal and factor give; 7 rows shown once, not as overlapping head
    and tail; `amount` in one fixed-point format (was 1.669684e+07 beside 6853917.601)."""
    lines = console_lines(tmp_path, "bars 600519 20200101 20200110", "load close 600519,000001.SZ 20200101 20200110",
                  "bars 600519.SH 20200101 20200110 amount")
    assert lines[:2] == ["error: 600519 is not a ts_code; did you mean 600519.SH?"] * 2
    assert lines[2] == "7 rows"
    rows = lines[4:]
    assert [row.split()[2] for row in rows] == ["20200102", "20200103", "20200106", "20200107", "20200108",
                                                "20200109", "20200110"]
    amounts = [row.split()[3] for row in rows]
    assert amounts[0] == "16696837.0950" and amounts[2] == "6853917.6010"
    assert all(re.fullmatch(r"\d+\.\d{4}", amount) for amount in amounts)


def test_an_edited_order_is_shown_again_checked_and_placed_only_once_approved(tmp_path: Path) -> None:
    """Issue 28, item 13: `edit` produces a new card with every check run again; the next `approve` decides it."""
    lines = console_lines(tmp_path, "order 000001.SZ buy 100 limit=14.50", "edit quantity=300 limit_price=14.60",
                  "orders all", "approve", "orders all")
    cards = [i for i, line in enumerate(lines) if line.startswith("--- approval: ")]
    assert [lines[i] for i in cards] == ["--- approval: BUY 100 000001.SZ 平安银行 at limit 14.50 ---",
                                         "--- approval: BUY 300 000001.SZ 平安银行 at limit 14.60 ---"]
    edited = lines[cards[1] + 1]
    assert edited.startswith("Edited by ") and edited.endswith(": every check ran again on the edited order; decide "
                                                                "it again.")
    assert lines[cards[1] + 2] == "All checks pass."
    placed = next(i for i, line in enumerate(lines) if line.startswith("Order 1 filled: BUY 300 000001.SZ"))
    assert cards[1] < placed
    assert any(line.startswith("No ") and "orders" in line for line in lines[cards[1]:placed])  # none before approve
    assert not any("an order needs a code" in line for line in lines)


def test_a_card_left_open_is_listed_by_pending_in_a_later_session_and_answered_there(tmp_path: Path) -> None:
    """Issue 28, item 10: the session ends on an order card; it says so, and the next session reaches the card."""
    first = console_lines(tmp_path, "order 000001.SZ buy 100")
    assert first[-1] == ("1 question(s), review(s) or order card(s) are still open; they stay open: in `quantdesk "
                         "chat`, `pending` lists them and `pending N` answers one")
    second = console_lines(tmp_path, "orders open", "pending", "pending 2", "pending 1", "approve", "pending")
    assert second[1:3] == ["1 waiting (`pending N` makes one current: the next line answers it):",
                           "  1. Approval: BUY 100 000001.SZ 平安银行 at market"]
    assert second[3] == "usage: pending [N], N from 1 to 1"
    assert second[4] == "--- approval: BUY 100 000001.SZ 平安银行 at market ---"  # the card, shown again
    assert any(line.startswith("Order 1 filled: BUY 100 000001.SZ") for line in second)
    assert second[-1] == "nothing is waiting for an answer"


def test_end_of_input_in_the_middle_of_an_edit_says_the_edit_was_dropped(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "factor reversal 20190301 20200601", "edit", "return close")
    assert lines[-2:] == ["(the edit you were typing was dropped; nothing was decided and the review is still open)",
                          "1 question(s), review(s) or order card(s) are still open; they stay open: in "
                          "`quantdesk chat`, `pending` lists them and `pending N` answers one"]
    assert console_lines(tmp_path, "pending")[1] == "  1. Code review: reversal_5"


class _Session:
    """`quantdesk chat` as a process whose stdout is read line by line as it comes."""

    def __init__(self, tmp_path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "bot.cli", "chat"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=cli_env(tmp_path), cwd=tmp_path)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:  # type: ignore[union-attr]
            self.lines.put(line.rstrip("\n"))

    def type(self, line: str) -> None:
        self.process.stdin.write(line + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def expect(self, start: str) -> list[str]:
        """The lines up to and including the first that starts with `start`."""
        seen = []
        while not (seen and seen[-1].startswith(start)):
            seen.append(self.lines.get(timeout=120))
        return seen

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)


def test_ctrl_c_drops_the_edit_being_typed_and_a_second_one_in_a_row_leaves(tmp_path: Path) -> None:
    """Issue 28, item 11: SIGINT at the prompt keeps the session (an edit in progress is dropped, the review stays
    open); two in a row end it with exit code 130 and no traceback."""
    chat = _Session(tmp_path)
    chat.type("factor reversal 20190301 20200601")
    chat.expect("--- review> ")
    chat.type("edit")
    chat.type("return close")
    chat.expect("type the new body of compute_factor")
    chat.interrupt()
    assert chat.expect("(Ctrl-C again") == [
        "(the edit you were typing was dropped; nothing was decided and the review is still open)",
        "(Ctrl-C again, `quit` or end of input leaves)"]
    chat.type("approve")  # the session goes on, and the review is still the current question
    chat.expect("Factor reversal_5 v1 saved")
    chat.interrupt()
    chat.expect("(Ctrl-C again")
    chat.interrupt()
    assert chat.process.wait(timeout=120) == 130
    assert "Traceback" not in chat.process.stderr.read()  # type: ignore[union-attr]


def test_help_and_order_wording(tmp_path: Path) -> None:
    """Issue 28, item 9: no backticks nested in the help's usages; a zero or negative quantity is not called 'not a
    whole number'."""
    lines = console_lines(tmp_path, "help", "order 600519.SH buy 0", "order 600519.SH sell -5",
                          "order 600519.SH buy 1.5")
    assert "  rule run ID" in lines and not any("(see `rule list`)" in line for line in lines)
    text = "\n".join(lines)
    assert ("the quantity must be a whole number of shares of at least one lot (100 shares on most boards), not 0"
            in text)
    assert "the quantity must be a whole number of shares of at least 1, not -5" in text
    assert "the quantity must be a whole number of shares, not '1.5'" in text


def test_a_view_whose_summary_begins_with_its_title_prints_it_once(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, 'rule add 600519.SH "buy when close > ma(30); sell when close < ma(30)" size=100')
    assert lines[0].startswith("Rule 1 saved, in the rule language")  # no bare "Rule 1" line before it


def test_trading_off_closes_the_open_order_card_before_the_next_prompt(tmp_path: Path) -> None:
    """Issue 29, item 5, in the console: the switch-off rejects the open card on record (who and why), its run
    ends before the next line, and nothing is left waiting or placed."""
    lines = console_lines(tmp_path, "order 600519.SH buy 100", "trading off exchange outage", "pending", "orders all")
    after = lines[next(i for i, line in enumerate(lines) if line.startswith("Trading is OFF")):]
    assert after[1] == "1 open order card was closed."
    assert re.fullmatch(r"Order rejected by (\S+): trading was switched off by \1: exchange outage\. Nothing was "
                        r"placed\.", after[2])
    assert after[-2:] == ["nothing is waiting for an answer", "No orders in account console."]
