"""The host side of the sandbox: a pool of warm workers and the one public entry point, `run_code`."""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import queue
import select
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from tools.sandbox import codec
from tools.sandbox.isolation import DESCRIPTIONS, Level, detect, remedy, worker_spec
from tools.sandbox.policy import ALLOWED_MODULES, FORBIDDEN_NAMES, check_code

log = logging.getLogger(__name__)

ERROR_KINDS = ("forbidden", "syntax", "runtime", "timeout", "memory", "output_too_large", "crashed")


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run code as configured (e.g. full isolation required but missing)."""


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 30.0
    cpu_seconds: int = 30
    memory_bytes: int = 2 << 30
    max_output_bytes: int = 256 << 20
    max_stdout_chars: int = 20_000
    max_file_bytes: int = 64 << 20


@dataclass(frozen=True)
class SandboxError:
    kind: str
    message: str
    line: int | None = None
    source: str | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        code = f" (`{self.source}`)" if self.source else ""
        return f"{self.kind}: {where}{self.message}{code}"


@dataclass
class SandboxResult:
    ok: bool
    outputs: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    error: SandboxError | None = None
    seconds: float = 0.0
    isolation: str = ""


_warned: set[tuple[Level, str]] = set()
_warned_lock = threading.Lock()


def _warn_below_full(level: Level, reason: str) -> None:
    """One warning per process for each distinct reason the sandbox runs below full isolation."""
    if level is Level.FULL:
        return
    with _warned_lock:
        if (level, reason) in _warned:
            return
        _warned.add((level, reason))
    log.warning("sandbox runs at %s isolation, below full: %s", level.value, reason)


WORKER_ATTEMPTS = 2  # workers a request is sent to when one stops answering


class _Worker:
    """One warm worker process and its pipes."""

    def __init__(self, spec_args: tuple) -> None:
        self.spec = worker_spec(*spec_args)
        self.proc = subprocess.Popen(self.spec.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self.spec.env, start_new_session=True)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=5)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        try:
            codec.write_message(self.proc.stdin, self.spec.init, [])
        except OSError as exc:  # it stopped reading before its start-up message: a start that failed
            self.kill()
            detail = self._stderr_tail[-1] if self._stderr_tail else str(exc)
            raise SandboxUnavailable(f"the sandbox worker stopped as it started: {detail}") from exc
        header = self._read(60.0)
        if not header or not header[0].get("ready"):
            self.kill()
            detail = self._stderr_tail[-1] if self._stderr_tail else "no output"
            raise SandboxUnavailable(f"the sandbox worker failed to start: {detail}")
        if self.spec.init["seccomp"] and not header[0].get("seccomp"):
            self.kill()
            raise SandboxUnavailable("the sandbox worker could not load libseccomp")

    def _drain_stderr(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._stderr_tail.append(line)
            log.debug("sandbox worker: %s", line)

    def _read(self, timeout: float) -> tuple[dict, list[bytes]] | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        try:
            return codec.read_message(self.proc.stdout)
        except (EOFError, ValueError):
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request: dict, blobs: list[bytes], limits: Limits) -> tuple[dict, list[bytes]] | None:
        try:
            codec.write_message(self.proc.stdin, request, blobs)
        except (BrokenPipeError, OSError):
            return None
        return self._read(limits.wall_seconds + 15.0)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


class Sandbox:
    """Runs untrusted pandas/numpy code: static policy first, then a fresh isolated child per run."""

    def __init__(self, workers: int = 2, require_full: bool = False, level: Level | None = None,
                 static_policy: bool = True, runtime_guards: bool = True) -> None:
        """`level` forces a weaker level than detected. `static_policy=False` and `runtime_guards=False` switch off
        the static check and the child's restricted builtins and import guard; they exist only so tests can show
        each remaining layer holding on its own.

        `level` (attribute) is the isolation every run gets; `reason` says why it is below full ('' at full)."""
        detected, reason = detect()
        self.level = level or detected
        if self.level is Level.FULL:
            self.reason = ""
        elif self.level is detected:
            self.reason = f"{reason}; to get full isolation, {remedy(detected)}"
        else:
            self.reason = f"level {self.level.value} was requested; this host offers {detected.value}"
        if require_full and self.level is not Level.FULL:
            raise SandboxUnavailable(
                f"full sandbox isolation is required (QUANTDESK_SANDBOX_REQUIRE_FULL) but unavailable: {self.reason}"
            )
        log.info("sandbox isolation %s", DESCRIPTIONS[self.level])
        _warn_below_full(self.level, self.reason)
        self._scratch = tempfile.TemporaryDirectory(prefix="quantdesk-sandbox-")
        self._spec_args = (self.level, ALLOWED_MODULES, FORBIDDEN_NAMES, self._scratch.name, runtime_guards)
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(workers):
            self._idle.put(None)  # a slot; its worker starts on first use
        self._closed = False
        self._static_policy = static_policy

    def warm(self) -> None:
        """Start the idle workers' fork servers now (about a second at full isolation) instead of on first use.

        Raises SandboxUnavailable when a worker cannot start; its slot stays usable."""
        slots = [self._idle.get() for _ in range(self._idle.qsize())]
        try:
            for i, worker in enumerate(slots):
                if worker is None or not worker.alive():
                    slots[i] = _Worker(self._spec_args)
        finally:
            for worker in slots:
                self._idle.put(worker)

    def run(self, code: str, inputs: dict[str, Any] | None = None, limits: Limits | None = None,
            outputs: list[str] | tuple[str, ...] | None = None) -> SandboxResult:
        """Check, then run `code` with `inputs` as variables; collect `outputs` (default: signal, factor, result)."""
        limits = limits or Limits()
        started = time.perf_counter()
        violations = check_code(code) if self._static_policy else []
        if violations:
            first = violations[0]
            kind = "syntax" if first.syntax else "forbidden"
            message = first.message if len(violations) == 1 else "; ".join(str(v) for v in violations)
            source = _line(code, first.line)
            return SandboxResult(False, error=SandboxError(kind, message, first.line or None, source),
                                 seconds=time.perf_counter() - started, isolation=self.level.value)
        try:
            entries, blobs = codec.encode_values(dict(inputs or {}))
        except codec.CodecError as exc:
            raise ValueError(f"sandbox input {exc}") from None
        for name in (inputs or {}):
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"sandbox input name {name!r} is not a plain identifier")
        request = {"code": code, "inputs": entries, "limits": asdict(limits), "outputs": list(outputs or [])}
        status, data = self._dispatch(request, blobs, limits)
        result = _interpret(status, data, limits, code)
        result.seconds = time.perf_counter() - started
        result.isolation = self.level.value
        return result

    def _dispatch(self, request: dict, blobs: list[bytes], limits: Limits) -> tuple[dict | None, list[bytes]]:
        """The worker's answer; (None, []) when a worker stopped answering twice. A worker that dies or hangs (not
        the code: the worker reports the code's timeouts and crashes itself) is replaced and the request sent once
        more to the new one, which is safe: the code's only effect is its answer."""
        if self._closed:
            raise SandboxUnavailable("the sandbox is closed")
        for attempt in range(WORKER_ATTEMPTS):
            worker = self._idle.get()
            try:
                if worker is None or not worker.alive():
                    worker = _Worker(self._spec_args)
                answer = worker.run(request, blobs, limits)
                if answer is not None:
                    return answer
                again = attempt + 1 < WORKER_ATTEMPTS
                log.warning("sandbox worker stopped answering; restarting it%s", " and sending the code again"
                            if again else "")
                worker.kill()
                worker = None
            finally:
                self._idle.put(worker)
        return None, []

    def close(self) -> None:
        self._closed = True
        while not self._idle.empty():
            worker = self._idle.get_nowait()
            if worker is not None:
                worker.kill()
        self._scratch.cleanup()


def _line(code: str, lineno: int) -> str | None:
    lines = code.splitlines()
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else None


def _interpret(status: dict | None, data: list[bytes], limits: Limits, code: str) -> SandboxResult:
    if status is None:
        return SandboxResult(False, error=SandboxError(
            "crashed", "the sandbox worker stopped answering twice (the host may be overloaded); it was restarted"))
    if status["timed_out"]:
        return SandboxResult(False, error=SandboxError(
            "timeout", f"the code ran longer than the {limits.wall_seconds:g}-second wall-clock limit"))
    if status["too_large"]:
        return SandboxResult(False, error=SandboxError(
            "output_too_large", f"the result exceeded the {limits.max_output_bytes}-byte output limit"))
    if not data:
        sig = status.get("signal")
        if sig in (signal.SIGXCPU, signal.SIGKILL) and status["elapsed"] >= limits.cpu_seconds * 0.9:
            return SandboxResult(False, error=SandboxError(
                "timeout", f"the code used more than {limits.cpu_seconds} seconds of CPU time"))
        how = f"signal {signal.Signals(sig).name}" if sig else f"exit code {status.get('exit_code')}"
        return SandboxResult(False, error=SandboxError("crashed", f"the code's process died ({how})"))
    header, blobs = codec.read_message(io.BytesIO(data[0]))
    outputs = codec.decode_values(header.get("outputs", []), blobs) if header.get("ok") else {}
    error = header.get("error")
    return SandboxResult(
        ok=bool(header.get("ok")),
        outputs=outputs,
        stdout=header.get("stdout", ""),
        stderr=header.get("stderr", ""),
        error=SandboxError(**error) if error else None,
    )


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide sandbox, configured from settings on first use."""
    global _default
    with _default_lock:
        if _default is None:
            from tools.settings import get_settings

            settings = get_settings()
            _default = Sandbox(workers=settings.sandbox_workers, require_full=settings.sandbox_require_full)
        return _default


def run_code(code: str, inputs: dict[str, Any] | None = None, limits: Limits | None = None,
             outputs: list[str] | tuple[str, ...] | None = None) -> SandboxResult:
    """Run untrusted code in the process-wide sandbox. See `Sandbox.run`."""
    return default_sandbox().run(code, inputs, limits, outputs)
