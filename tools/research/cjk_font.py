"""The CJK font charts draw Chinese with: Noto Sans CJK SC subset to GB 2312 (OFL 1.1, fonts/OFL.txt), shipped as
package data so `make run` needs no system font. Latin text keeps matplotlib's DejaVu Sans; a glyph it lacks falls
back to this font."""

from __future__ import annotations

from pathlib import Path

from matplotlib import font_manager, rcParams

FONT_FILE = Path(__file__).parent / "fonts" / "NotoSansCJKsc-Regular-GB2312.otf"
FAMILY = "Noto Sans CJK SC"


def install() -> None:
    """Register the bundled font and make it the fallback of the default sans-serif family."""
    if FAMILY not in {entry.name for entry in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(FONT_FILE))
    rcParams["font.family"] = ["DejaVu Sans", FAMILY]
