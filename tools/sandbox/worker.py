"""The sandbox worker: a warm zygote that forks one fresh, locked-down child per code run.

Runs as a plain script inside the isolation the host set up (bubblewrap namespaces, or a bare
subprocess at the basic level), with only the standard library, numpy, pandas, pyarrow and its three
sibling modules. Protocol on stdin/stdout: `codec` messages. The child of each run:
new session → chdir to a private scratch dir → rlimits → drop root → seccomp → decode inputs →
run the code with guarded builtins (see `guard`) → encode outputs (data only) → exit. The zygote enforces the
wall clock, caps the result size, kills every leftover process and removes the scratch dir.
"""

from __future__ import annotations

import builtins
import ctypes
import io
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.extend(sys.argv[1:])  # the host's library directories (numpy, pandas, pyarrow)

import contextlib

import codec  # noqa: E402
import guard  # noqa: E402
import seccomp  # noqa: E402

USER_FILENAME = "<user code>"
NOBODY = 65534
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
DEFAULT_OUTPUTS = ("signal", "factor", "result")


class CappedText(io.TextIOBase):
    """A text sink that keeps the first `cap` characters and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.cap - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n[... {self.dropped} more characters cut]" if self.dropped else "")


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(option, value, 0, 0, 0)


def _user_line(exc: BaseException, code: str) -> tuple[int | None, str | None]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == USER_FILENAME]
    if isinstance(exc, SyntaxError) and exc.filename == USER_FILENAME:
        lineno = exc.lineno
    elif frames:
        lineno = frames[-1].lineno
    else:
        return None, None
    lines = code.splitlines()
    source = lines[lineno - 1].strip() if lineno and 0 < lineno <= len(lines) else None
    return lineno, source


def _scrub(message: str) -> str:
    """Drop host paths from a library's error message."""
    for path in sorted({p for p in sys.path if p and p.startswith("/")}, key=len, reverse=True):
        message = message.replace(path + "/", "").replace(path, "")
    return message


def _error(kind: str, message: str, exc: BaseException | None = None, code: str = "") -> dict:
    line, source = _user_line(exc, code) if exc is not None else (None, None)
    return {"kind": kind, "message": _scrub(message), "line": line, "source": source}


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    _cur_soft, cur_hard = resource.getrlimit(which)
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(request: dict, blobs: list[bytes], result_fd: int, scratch: str, ctx: dict) -> None:
    """Runs in the forked child; never returns."""
    limits = request["limits"]
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.chdir(scratch)
    _limit(resource.RLIMIT_CPU, int(limits["cpu_seconds"]), int(limits["cpu_seconds"]) + 1)
    _limit(resource.RLIMIT_AS, _vm_size() + int(limits["memory_bytes"]))
    _limit(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    _limit(resource.RLIMIT_NOFILE, 256)
    _limit(resource.RLIMIT_CORE, 0)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    if ctx["seccomp"] is not None:
        seccomp.install(ctx["seccomp"], os.getpid())
    sys.setrecursionlimit(2000)

    code = request["code"]
    out, err = CappedText(int(limits["max_stdout_chars"])), CappedText(int(limits["max_stdout_chars"]))
    sys.stdout, sys.stderr = out, err
    response: dict = {"ok": False, "outputs": []}
    blobs_out: list[bytes] = []
    try:
        inputs = codec.decode_values(request["inputs"], blobs)
        namespace = {"__builtins__": ctx["builtins"], "pd": ctx["pd"], "np": ctx["np"], **inputs}
        compiled = compile(code, USER_FILENAME, "exec")
        exec(compiled, namespace)  # noqa: S102 - this is the sandbox
        wanted = request.get("outputs") or [n for n in DEFAULT_OUTPUTS if n in namespace]
        missing = [n for n in wanted if n not in namespace]
        if missing:
            response["error"] = _error("runtime", f"the code did not define {', '.join(missing)}")
        else:
            entries, blobs_out = codec.encode_values({n: namespace[n] for n in wanted})
            size = sum(len(b) for b in blobs_out)
            if size > int(limits["max_output_bytes"]):
                response["error"] = _error(
                    "output_too_large", f"outputs are {size} bytes, over the {limits['max_output_bytes']}-byte limit"
                )
                blobs_out = []
            else:
                response.update(ok=True, outputs=entries)
    except MemoryError:
        namespace = None
        response["error"] = _error("memory", f"out of memory: over the {limits['memory_bytes']}-byte limit")
    except SyntaxError as exc:
        response["error"] = _error("syntax", f"syntax error: {exc.msg}", exc, code)
    except codec.CodecError as exc:
        response["error"] = _error("runtime", f"output {exc}")
    except RecursionError as exc:
        response["error"] = _error("runtime", "RecursionError: recursion too deep", exc, code)
    except BaseException as exc:  # noqa: BLE001 - report anything the code raised
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        response["error"] = _error("runtime", text, exc, code)
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    response["stdout"], response["stderr"] = out.text(), err.text()
    with os.fdopen(result_fd, "wb") as sink:
        codec.write_message(sink, response, blobs_out)
    os._exit(0)


def _sweep(own_pid: int, in_pid_namespace: bool) -> None:
    """Kill and reap every process left behind (in our pid namespace, all but init and us)."""
    if in_pid_namespace:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in (1, own_pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry), signal.SIGKILL)
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _collect(read_fd: int, pid: int, deadline: float, cap: int) -> tuple[bytes, bool, bool]:
    """Read the child's result until EOF, the deadline or the cap; returns (data, timed_out, too_large)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), True, False
        ready, _, _ = select.select([read_fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False, False
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            return b"", False, True


def _run(request: dict, blobs: list[bytes], ctx: dict) -> tuple[dict, list[bytes]]:
    limits = request["limits"]
    scratch = tempfile.mkdtemp(prefix="run-", dir=ctx["scratch_root"])
    if os.geteuid() == 0:
        os.chown(scratch, NOBODY, NOBODY)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            _child(request, blobs, write_fd, scratch, ctx)
        finally:
            os._exit(70)
    os.close(write_fd)
    cap = int(limits["max_output_bytes"]) + 16 * int(limits["max_stdout_chars"]) + (1 << 20)
    data, timed_out, too_large = _collect(read_fd, pid, started + float(limits["wall_seconds"]), cap)
    os.close(read_fd)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _wpid, status = os.waitpid(pid, 0)
    _sweep(os.getpid(), ctx["pid_namespace"])
    shutil.rmtree(scratch, ignore_errors=True)
    status_info = {
        "elapsed": time.monotonic() - started,
        "timed_out": timed_out,
        "too_large": too_large,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    }
    return status_info, [data] if data and not timed_out else []


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    init, _ = codec.read_message(stdin)
    import numpy as np
    import pandas as pd
    import pyarrow  # noqa: F401 - warm the import for the children

    pd.DataFrame({"a": [1.0, 2.0]}).rolling(2).mean().rank()  # warm lazy pandas internals
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    lib = seccomp.load_library() if init["seccomp"] else None
    ctx = {
        "pd": pd,
        "np": np,
        "seccomp": lib,
        "scratch_root": init["scratch_root"],
        "pid_namespace": init["pid_namespace"],
        "builtins": (guard.guarded_builtins(frozenset(init["allowed_modules"]), frozenset(init["forbidden_builtins"]))
                     if init["python_guards"] else vars(builtins)),
    }
    codec.write_message(stdout, {"ready": True, "seccomp": lib is not None, "pid": os.getpid()}, [])
    while True:
        try:
            request, blobs = codec.read_message(stdin)
        except EOFError:
            return 0
        status, data = _run(request, blobs, ctx)
        codec.write_message(stdout, status, data)


if __name__ == "__main__":
    sys.exit(main())
