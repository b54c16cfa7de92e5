"""Sandbox for LLM-written and human-edited code: static policy plus OS isolation. See README, "Sandbox"."""

from tools.sandbox.host import (
    ERROR_KINDS,
    Limits,
    Sandbox,
    SandboxError,
    SandboxResult,
    SandboxUnavailable,
    default_sandbox,
    run_code,
)
from tools.sandbox.isolation import Level, detect

__all__ = [
    "ERROR_KINDS",
    "Level",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxResult",
    "SandboxUnavailable",
    "default_sandbox",
    "detect",
    "run_code",
]
