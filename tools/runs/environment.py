"""The code a run ran on: the package version, the git commit when the source is a checkout, the versions of the
libraries a result depends on, and the sandbox's Python (the sandbox runs this interpreter: tools/sandbox)."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path

LIBRARIES = ("langgraph", "langchain-openai", "langchain-core", "pandas", "numpy", "TA-Lib")
ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def code_versions() -> dict[str, object]:
    """Read once per process: what is installed does not change under a running process."""
    return {"package": _version("quantdesk"), "commit": _commit(),
            "libraries": {name: _version(name) for name in LIBRARIES},
            "sandbox_python": platform.python_version()}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _commit() -> str | None:
    if not (ROOT / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
