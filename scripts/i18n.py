"""The message catalogs (tools/i18n/locale): `update` extracts the marked texts of bot/, graphs/ and tools/ and
merges them into every catalog (the English one copies each new id as its text; Chinese ones are translated by
hand), `compile` writes the .mo files the package ships, `check` fails when a catalog is out of date with the code,
a message lacks a translation or a translation drops a placeholder.

    .venv/bin/python scripts/i18n.py update|compile|check [--locale-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALE_DIR = ROOT / "tools" / "i18n" / "locale"
DOMAIN = "quantdesk"
PYBABEL = str(Path(sys.executable).parent / "pybabel")
SOURCE = "en"  # the language of the message ids
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\([a-z_]+\)[sd]|%[sd]")


def _pybabel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYBABEL, "-q", *args], cwd=ROOT, capture_output=True, text=True)


def extract(pot: Path) -> None:
    done = _pybabel("extract", "-F", "babel.cfg", "--no-location", "--sort-output", "-k", "N_", "-k",
                    "ngettext:1,2", "--project", "QuantDesk", "-o", str(pot), ".")
    if done.returncode:
        raise SystemExit(done.stderr)


def _update_args(pot: Path, locale_dir: Path) -> list[str]:
    return ["update", "-i", str(pot), "-d", str(locale_dir), "-D", DOMAIN, "--ignore-obsolete",
            "--ignore-pot-creation-date", "--no-fuzzy-matching"]


def update(locale_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pot = Path(tmp) / f"{DOMAIN}.pot"
        extract(pot)
        done = _pybabel(*_update_args(pot, locale_dir))
        if done.returncode:
            raise SystemExit(done.stderr)
    source = locale_dir / SOURCE / "LC_MESSAGES" / f"{DOMAIN}.po"
    with source.open("rb") as file:
        catalog = read_po(file, locale=SOURCE)
    for message in catalog:
        if message.id and not _translated(message.string):
            message.string = message.id
    with source.open("wb") as file:
        write_po(file, catalog, ignore_obsolete=True)


def compile_catalogs(locale_dir: Path) -> None:
    done = _pybabel("compile", "-d", str(locale_dir), "-D", DOMAIN)
    if done.returncode:
        raise SystemExit(done.stderr)


def _translated(string: str | tuple[str, ...]) -> bool:
    return all(string) if isinstance(string, tuple) else bool(string)


def problems(locale_dir: Path) -> list[str]:
    """What is wrong with the catalogs under `locale_dir`: out of date with the code, an untranslated or fuzzy
    message, a translation whose placeholders differ from its id's."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        pot = Path(tmp) / f"{DOMAIN}.pot"
        extract(pot)
        done = _pybabel(*_update_args(pot, locale_dir), "--check")
        if done.returncode:
            found.append(f"out of date with the code (run scripts/i18n.py update): {done.stderr.strip()}")
    for po in sorted(locale_dir.glob(f"*/LC_MESSAGES/{DOMAIN}.po")):
        language = po.parent.parent.name
        with po.open("rb") as file:
            catalog = read_po(file)
        for message in catalog:
            if not message.id:
                continue
            ids = message.id if isinstance(message.id, tuple) else (message.id,)
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            if not _translated(message.string) or message.fuzzy:
                found.append(f"{language}: no translation for {ids[0]!r}")
            elif any(sorted(PLACEHOLDER.findall(s)) != sorted(PLACEHOLDER.findall(ids[0])) for s in strings):
                found.append(f"{language}: the placeholders of {ids[0]!r} differ in its translation")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("update", "compile", "check"))
    parser.add_argument("--locale-dir", type=Path, default=LOCALE_DIR)
    args = parser.parse_args()
    if args.action == "update":
        update(args.locale_dir)
    elif args.action == "compile":
        compile_catalogs(args.locale_dir)
    elif found := problems(args.locale_dir):
        print("\n".join(found))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
