"""Issue 25, item 2: the gettext catalogs. The compiled catalogs are what `pybabel compile` makes of the .po files,
the .po files are up to date with the code (`pybabel update --check`), both languages translate every message id
with the same placeholders, and `_` speaks the language in effect."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from babel.messages.pofile import read_po, write_po
from langgraph.errors import GraphRecursionError

from bot.core.kinds import said
from graphs.grammar import english
from graphs.llm import describe_model_failure
from graphs.signal.nodes.validate import check_data, check_signal_frame
from testkit.paths import REPO
from tools.broker.mandate import Mandate
from tools.broker.notes import note_text
from tools.i18n import LOCALES, _, choice_of, current, language_for_locale, translate, using
from tools.i18n.catalog import LOCALE_DIR
from tools.i18n.languages import choices_text

PYBABEL = str(Path(sys.executable).parent / "pybabel")


def _check(locale_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/i18n.py", "check", "--locale-dir", str(locale_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "locale"
    shutil.copytree(LOCALE_DIR, copy)
    return copy


def _edit(po: Path, change) -> None:  # type: ignore[no-untyped-def]
    with po.open("rb") as file:
        catalog = read_po(file)
    change(catalog)
    with po.open("wb") as file:
        write_po(file, catalog)


def test_the_committed_mo_files_are_what_pybabel_compile_makes(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    for mo in copy.glob("*/LC_MESSAGES/*.mo"):
        mo.unlink()
    done = subprocess.run([PYBABEL, "compile", "-d", str(copy), "-D", "quantdesk"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for language in ("zh_CN", "en"):
        shipped = LOCALE_DIR / language / "LC_MESSAGES" / "quantdesk.mo"
        assert (copy / language / "LC_MESSAGES" / "quantdesk.mo").read_bytes() == shipped.read_bytes(), language


def test_the_catalogs_are_complete_and_up_to_date_with_the_code() -> None:
    done = _check(LOCALE_DIR)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_fails_on_a_message_without_a_translation(tmp_path: Path) -> None:
    copy = _copy(tmp_path)

    def untranslate(catalog) -> None:  # type: ignore[no-untyped-def]
        catalog["Already handled."].string = ""

    _edit(copy / "zh_CN" / "LC_MESSAGES" / "quantdesk.po", untranslate)
    done = _check(copy)
    assert done.returncode == 1
    assert "zh_CN: no translation for 'Already handled.'" in done.stdout


def test_the_check_fails_when_a_catalog_is_out_of_date_with_the_code(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _edit(copy / "en" / "LC_MESSAGES" / "quantdesk.po", lambda catalog: catalog.delete("Already handled."))
    done = _check(copy)
    assert done.returncode == 1
    assert "out of date with the code" in done.stdout


def test_the_check_fails_when_a_translation_drops_a_placeholder(tmp_path: Path) -> None:
    copy = _copy(tmp_path)

    def drop(catalog) -> None:  # type: ignore[no-untyped-def]
        catalog["error: {error}"].string = "错误"

    _edit(copy / "zh_CN" / "LC_MESSAGES" / "quantdesk.po", drop)
    done = _check(copy)
    assert done.returncode == 1
    assert "zh_CN: the placeholders of 'error: {error}' differ in its translation" in done.stdout


def test_underscore_speaks_the_language_in_effect() -> None:
    with using("zh-CN"):
        assert _("Already handled.") == "已处理。"
        assert current() == "zh-CN"
        with using("en"):
            assert _("Already handled.") == "Already handled."
        assert _("Already handled.") == "已处理。"
    assert translate("zh-CN", "Stuck:") == "卡住的："
    assert translate("en", "Stuck:") == "Stuck:"


def test_a_thread_started_inside_a_language_does_not_inherit_it_but_the_default() -> None:
    seen: list[str] = []
    with using("zh-CN"):
        worker = threading.Thread(target=lambda: seen.append(_("Already handled.")))
        worker.start()
        worker.join()
    assert seen == ["Already handled."]  # the workspace default (en in tests): a listener sets its own


@pytest.mark.parametrize(("locale", "language"), [("zh-CN", "zh-CN"), ("en-US", "en"), ("en-GB", "en"),
                                                  ("zh-TW", "zh-CN"), ("zh-HK", "zh-CN"), ("ja-JP", "zh-CN"),
                                                  (None, "zh-CN"), ("", "zh-CN")])
def test_locales_outside_the_table_fall_back_to_the_workspace_default(locale: str | None, language: str) -> None:
    assert language_for_locale(locale, "zh-CN") == language
    assert language_for_locale("ja-JP", "en") == "en"
    assert "zh-TW" not in LOCALES and "zh-HK" not in LOCALES and "ja-JP" not in LOCALES


CHINESE = ["zh", "zh_CN", "zh-CN", "zh-cn", "zh_Hans", "zh-Hans", "zh-Hans-CN", "cn", "chinese", "中文", "简体中文",
           "ZH", " Chinese ", "zh-SG"]
ENGLISH = ["en", "en_US", "en-US", "en-GB", "en_GB", "english", "英文", "英语", "EN", " English ", "en-au"]
REFUSED = ["zh_TW", "zh-TW", "zh-Hant", "zh-HK", "fr", "ja-JP", "klingon", "", "zh cn", "繁体中文"]


@pytest.mark.parametrize(("word", "language"), [*((word, "zh-CN") for word in CHINESE),
                                                *((word, "en") for word in ENGLISH),
                                                *((word, None) for word in REFUSED)])
def test_a_typed_choice_names_a_language(word: str, language: str | None) -> None:
    """What people type for a language, after `lang` and as QUANTDESK_LANGUAGE: an explicit list, any case, `_` or
    `-`; a valid locale of another language or script (zh_TW, fr) is not one of ours."""
    assert choice_of(word) == language


def test_a_refusal_names_every_accepted_choice_on_one_line() -> None:
    text = choices_text()
    assert "\n" not in text
    assert all(word.strip().replace("_", "-").lower() in text.lower() for word in CHINESE + ENGLISH)


def test_a_stored_order_note_is_shown_in_the_readers_language_and_an_unknown_one_as_it_is() -> None:
    stored = ("not filled on 20200824: locked at limit-up 10.00 (low 10.00): no sellers below the limit, the buy "
              "cannot fill")
    with using("zh-CN"):
        assert note_text(stored) == "20200824 未成交：封死涨停 10.00（最低价 10.00）：涨停价之下无卖盘，买单无法成交"
        assert note_text("simulated fill at the last available close (20200824)") == "按最近收盘价模拟成交（20200824）"
        assert note_text("filled by hand") == "filled by hand"
    with using("en"):
        assert note_text(stored) == stored


def test_a_mandate_reads_in_the_language_in_effect_and_is_recorded_in_english() -> None:
    mandate = Mandate(allow=("600519.SH", "main"), max_orders_per_day=5, max_turnover=Decimal("200000"))
    with using("zh-CN"):
        assert mandate.lines() == ["仅允许 600519.SH, main", "每日最多 5 笔委托", "每日成交额不超过 200,000.00 元"]
        assert mandate.record() == ["allow only 600519.SH, main", "at most 5 orders a day",
                                    "turnover at most 200,000.00 CNY a day"]


def test_a_model_failure_is_told_in_the_threads_language_and_logged_in_english(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="graphs.llm"), using("zh-CN"):
        told = describe_model_failure(GraphRecursionError("Recursion limit of 12 reached"))
    assert told == "模型没有完成：它一直调用工具，直到步数上限将其停止。"
    assert [r.getMessage() for r in caplog.records] == [
        "model failure: The model did not finish: it kept calling tools until the step limit stopped it."]


def test_a_signals_validation_is_told_in_the_threads_language() -> None:
    dates = pd.date_range("2020-01-02", periods=3, name="trade_date")
    close = pd.DataFrame({"600519.SH": [1.0, 1.1, 1.2]}, index=dates)
    flat = pd.DataFrame({"600519.SH": [0.0, 0.0, 2.0]}, index=dates)
    with using("zh-CN"):
        errors, _warnings = check_signal_frame(flat, close)
    assert errors == ["信号值只能是 1、0、-1 或 NaN；发现 2", "信号中没有任何买入或卖出（全为 0 或 NaN）"]
    errors, _warnings = check_signal_frame(flat, close)
    assert errors == ["signal values must be 1, 0, -1 or NaN; found 2",
                      "the signal has no buy or sell at all (all 0 or NaN)"]


def test_a_signals_checks_name_ten_codes_and_count_the_rest() -> None:
    dates = pd.date_range("2020-01-02", periods=4, name="trade_date")
    codes = [f"{600000 + i}.SH" for i in range(12)]
    close = pd.DataFrame({code: [1.0, None, None, None] for code in codes}, index=dates)
    signal = pd.DataFrame({f"{300000 + i}.SZ": [1.0, 0.0, -1.0, 0.0] for i in range(13)}, index=dates)
    _errors, warnings = check_data(close)
    assert warnings == ["12 code(s) miss more than 50% of dates: " + ", ".join(codes[:10]) + " and 2 more"]
    with using("zh-CN"):
        errors, _warnings = check_signal_frame(signal, close)
    assert errors[0].endswith("300008.SZ, 300009.SZ 等另外 3 只")


def test_every_decision_word_shown_in_chinese_is_read_back_as_the_english_one() -> None:
    for word in ("approve", "edit", "reject"):
        with using("zh-CN"):
            shown = said(word)
        assert shown != word
        assert english(shown) == word
