"""What isolation the host offers, and the command that starts a worker inside it."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from tools.sandbox import seccomp

log = logging.getLogger(__name__)

SANDBOX_DIR = Path(__file__).resolve().parent
WORKER_MOUNT = "/opt/quantdesk-sandbox"
NOBODY = "65534"

# The worker's whole environment: no keys, single-threaded maths libraries.
WORKER_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_MAX_THREADS": "1",
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class Level(StrEnum):
    FULL = "full"  # bubblewrap namespaces (user, pid, net, ipc, uts, mount) + seccomp + rlimits + empty env
    BASIC = "basic"  # subprocess with empty env + seccomp + rlimits; the file system stays readable
    MINIMAL = "minimal"  # subprocess with empty env + rlimits only (no libseccomp on the host)


DESCRIPTIONS = {
    Level.FULL: "full: bubblewrap namespaces (no network, private /proc and /tmp, read-only system files only), "
                "seccomp, rlimits, empty environment",
    Level.BASIC: "basic: separate process with empty environment, seccomp (no sockets, exec or new processes), "
                 "rlimits; the host file system is readable",
    Level.MINIMAL: "minimal: separate process with empty environment and rlimits only",
}


@dataclass(frozen=True)
class WorkerSpec:
    """How to start one worker at a level."""

    level: Level
    argv: list[str]
    env: dict[str, str]
    init: dict


def _python() -> str:
    return os.path.realpath(sys.executable)


def library_paths() -> list[str]:
    """sys.path entries the worker needs for numpy, pandas and pyarrow (and their dependencies)."""
    paths: list[str] = []
    for module in ("numpy", "pandas", "pyarrow", "dateutil", "tzdata"):
        spec = importlib.util.find_spec(module)
        if spec and spec.submodule_search_locations:
            root = str(Path(next(iter(spec.submodule_search_locations))).parent)
            if root not in paths:
                paths.append(root)
    return paths


SCRATCH_ROOT = "/scratch"


def _bwrap_argv() -> list[str]:
    """bubblewrap arguments; mount order matters: later mounts cover earlier ones, so /tmp comes first
    (the virtualenv may live below /tmp) and the read-only library binds after it."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
            "--uid", NOBODY, "--gid", NOBODY, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    mounted = {"/usr"}
    for path in [sys.base_prefix, *library_paths()]:
        real = os.path.realpath(path)
        if not any(real == m or real.startswith(m + "/") for m in mounted):
            argv += ["--ro-bind", real, real]
            mounted.add(real)
    argv += ["--ro-bind", str(SANDBOX_DIR), WORKER_MOUNT, "--tmpfs", SCRATCH_ROOT, "--chdir", SCRATCH_ROOT]
    for key, value in WORKER_ENV.items():
        argv += ["--setenv", key, value]
    return argv


def _probe_bwrap() -> str | None:
    """None when bubblewrap can start a worker-like process here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run(
            [*_bwrap_argv(), _python(), "-I", "-S", "-c",
             "import sys; sys.path.extend(sys.argv[1:]); import numpy, pandas, pyarrow", *library_paths()],
            capture_output=True, timeout=60, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if probe.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {probe.stderr.decode(errors='replace').strip()[:200]}"
    return None


@lru_cache(maxsize=1)
def detect() -> tuple[Level, str]:
    """The strongest level this host supports, with the reason a stronger one is missing ('' when full)."""
    reason = _probe_bwrap()
    if reason is None:
        return Level.FULL, ""
    if seccomp.load_library() is not None:
        return Level.BASIC, reason
    return Level.MINIMAL, f"{reason}; libseccomp is not installed either"


def remedy(level: Level) -> str:
    """What to install or allow so that a host whose `detect()` gives `level` offers full isolation."""
    if level is Level.FULL:
        return ""
    if shutil.which("bwrap") is None:
        steps = ["install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, or scripts/system-deps.sh)"]
    else:
        steps = ["let bubblewrap create namespaces: allow unprivileged user namespaces "
                 "(sysctl kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0) "
                 "or, in a container, use a seccomp/AppArmor profile that permits unshare"]
    if level is Level.MINIMAL:
        steps.append("install libseccomp (`apt-get install libseccomp2`) for the seccomp filter")
    return "; ".join(steps)


def worker_spec(level: Level, allowed_modules: frozenset[str], forbidden_builtins: frozenset[str],
                scratch_root: str, python_guards: bool = True) -> WorkerSpec:
    """`python_guards`: restricted builtins and import hook in the child (the runtime twin of the policy)."""
    init = {
        "python_guards": python_guards,
        "seccomp": level in (Level.FULL, Level.BASIC),
        "pid_namespace": level is Level.FULL,
        "allowed_modules": sorted(allowed_modules),
        "forbidden_builtins": sorted(forbidden_builtins),
    }
    python = [_python(), "-I", "-S", "-B"]
    if level is Level.FULL:
        argv = [*_bwrap_argv(), *python, f"{WORKER_MOUNT}/worker.py", *library_paths()]
        return WorkerSpec(level, argv, {}, {**init, "scratch_root": SCRATCH_ROOT})
    argv = [*python, str(SANDBOX_DIR / "worker.py"), *library_paths()]
    return WorkerSpec(level, argv, dict(WORKER_ENV), {**init, "scratch_root": scratch_root})
