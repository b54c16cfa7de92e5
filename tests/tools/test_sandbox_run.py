"""The sandbox at run time: outputs, errors, resource limits, and OS isolation holding on its own."""

from __future__ import annotations

import ctypes.util
import dataclasses
import logging
import os
import shutil
import signal
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testkit.paths import REPO
from testkit.wait import wait_until
from tools.sandbox import Level, Limits, Sandbox, SandboxUnavailable, detect, host
from tools.sandbox.host import SandboxResult

FAST = Limits(wall_seconds=5, cpu_seconds=4, memory_bytes=512 << 20)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=2)
    yield box
    box.close()


@pytest.fixture(scope="module", params=[Level.FULL, Level.BASIC])
def raw_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """No static policy and no runtime guards: what the OS layer alone contains, at each level."""
    if request.param is Level.FULL and detect()[0] is not Level.FULL:
        pytest.fail(f"full isolation unavailable: {detect()[1]}")
    box = Sandbox(workers=1, level=request.param, static_policy=False, runtime_guards=False)
    yield box
    box.close()


@pytest.fixture(scope="module")
def close(shared_data: Path) -> pd.DataFrame:
    frame = pd.read_parquet(shared_data / "cn_csi300_tushare" / "daily.parquet")
    frame = frame[frame.trade_date >= "20210101"]
    wide = frame.pivot(index="trade_date", columns="ts_code", values="close")
    wide.index = pd.DatetimeIndex(pd.to_datetime(wide.index, format="%Y%m%d"), name="trade_date")
    return wide.iloc[:, :60]


def _expected_level() -> Level:
    """The level this host should reach, worked out here rather than by tools.sandbox.isolation: full when
    bubblewrap can start a process in fresh namespaces, else basic when libseccomp is there, else minimal."""
    if shutil.which("bwrap"):
        probe = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                                "--proc", "/proc", "--dev", "/dev", "true"], capture_output=True, timeout=60)
        if probe.returncode == 0:
            return Level.FULL
    return Level.BASIC if ctypes.util.find_library("seccomp") else Level.MINIMAL


def test_detected_level_is_what_the_host_offers(sandbox: Sandbox) -> None:
    level, reason = detect()
    assert level is _expected_level(), reason
    if os.environ.get("CI", "").lower() == "true" or (os.geteuid() == 0 and shutil.which("bwrap")):
        assert level is Level.FULL, reason  # scripts/system-deps.sh installs bubblewrap for `make test`
    assert sandbox.level is level
    assert (sandbox.reason == "") is (level is Level.FULL)


def test_inputs_in_outputs_out(sandbox: Sandbox, close: pd.DataFrame) -> None:
    code = "signal = (close > close.rolling(5).mean()).astype(float)\nresult = {'n': 1}['n'] + k\nprint('done')"
    res = sandbox.run(code, {"close": close, "k": 2, "codes": ["000001.SZ"]})
    assert res.ok, res.error
    expected = (close > close.rolling(5).mean()).astype(float)
    pd.testing.assert_frame_equal(res.outputs["signal"], expected, check_freq=False)
    assert res.outputs["result"] == 3
    assert res.stdout == "done\n"
    assert res.isolation == sandbox.level.value


def test_series_and_named_outputs(sandbox: Sandbox, close: pd.DataFrame) -> None:
    res = sandbox.run("s = close.iloc[:, 0].rename('x')\nm = float(s.mean())", {"close": close},
                      outputs=["s", "m"])
    assert res.ok, res.error
    pd.testing.assert_series_equal(res.outputs["s"], close.iloc[:, 0].rename("x"), check_freq=False)
    assert res.outputs["m"] == pytest.approx(float(close.iloc[:, 0].mean()))


def test_missing_output_is_a_runtime_error(sandbox: Sandbox) -> None:
    res = sandbox.run("x = 1", outputs=["factor"])
    assert not res.ok and res.error.kind == "runtime"
    assert "did not define factor" in res.error.message


def test_unsupported_output_type(sandbox: Sandbox) -> None:
    res = sandbox.run("result = object")
    assert res.error.kind == "forbidden"
    res = sandbox.run("result = {'a': 1}")
    assert res.error.kind == "runtime" and "dict cannot be passed" in res.error.message


def test_runtime_error_names_the_users_line_without_host_paths(sandbox: Sandbox, close: pd.DataFrame) -> None:
    code = "a = close.rolling(3).mean()\nb = close['999999.SZ']\n"
    res = sandbox.run(code, {"close": close})
    assert res.error.kind == "runtime"
    assert res.error.line == 2 and res.error.source == "b = close['999999.SZ']"
    assert "KeyError" in res.error.message
    assert "/site-packages" not in res.error.message and "/work" not in res.error.message


def test_syntax_error(sandbox: Sandbox) -> None:
    res = sandbox.run("x = (1,\ny = 2")
    assert res.error.kind == "syntax" and res.error.line == 1


def test_forbidden_is_reported_before_running(sandbox: Sandbox) -> None:
    res = sandbox.run("x = 1\nimport os\nos.system('touch /tmp/pwned')")
    assert res.error.kind == "forbidden" and res.error.line == 2
    assert "import of 'os' is not allowed" in res.error.message


# --- resource attacks -------------------------------------------------------------------


def test_infinite_loop_times_out(sandbox: Sandbox) -> None:
    res = sandbox.run("while True:\n    pass", limits=Limits(wall_seconds=2, cpu_seconds=30))
    assert res.error.kind == "timeout" and "wall-clock" in res.error.message
    assert res.seconds < 5


def test_cpu_limit(sandbox: Sandbox) -> None:
    res = sandbox.run("x = 0\nwhile True:\n    x += 1", limits=Limits(wall_seconds=20, cpu_seconds=1))
    assert res.error.kind == "timeout"


def test_sleep_times_out(raw_sandbox: Sandbox) -> None:
    res = raw_sandbox.run("import time\ntime.sleep(60)", limits=Limits(wall_seconds=1.5))
    assert res.error.kind == "timeout"


def test_memory_bomb(sandbox: Sandbox) -> None:
    res = sandbox.run("x = np.ones((200_000, 10_000))", limits=FAST)
    assert res.error.kind == "memory"
    res = sandbox.run("x = [0] * (10 ** 10)", limits=FAST)
    assert res.error.kind == "memory"


def test_huge_output_is_capped(sandbox: Sandbox) -> None:
    res = sandbox.run("for i in range(200_000):\n    print('x' * 100)\nresult = 1", limits=FAST)
    assert res.ok and len(res.stdout) < 25_000 and "more characters cut" in res.stdout


def test_output_too_large(sandbox: Sandbox) -> None:
    limits = Limits(max_output_bytes=1 << 20)
    res = sandbox.run("result = pd.DataFrame(np.random.rand(100_000, 10))", limits=limits)
    assert res.error.kind == "output_too_large"


def test_deep_recursion(sandbox: Sandbox) -> None:
    res = sandbox.run("def f(n):\n    return f(n + 1)\nresult = f(0)", limits=FAST)
    assert res.error.kind == "runtime" and "recursion" in res.error.message.lower()


def test_fork_bomb(raw_sandbox: Sandbox) -> None:
    res = raw_sandbox.run("import os\nwhile True:\n    os.fork()", limits=FAST)
    assert res.error.kind == "runtime" and "PermissionError" in res.error.message


def test_crash_is_reported_and_the_next_run_works(raw_sandbox: Sandbox) -> None:
    res = raw_sandbox.run("import ctypes\nctypes.string_at(0)", limits=FAST)
    assert res.error.kind == "crashed"
    assert raw_sandbox.run("result = 2 + 2").outputs == {"result": 4}


# --- OS isolation without the static policy ------------------------------------------------


def test_environment_is_empty(raw_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    code = "import os\nresult = ' '.join(sorted(os.environ))\nenv = open('/proc/self/environ').read()"
    os.environ["QUANTDESK_TEST_SECRET"] = "very-secret-value"
    try:
        names = raw_sandbox.run("import os\nresult = ' '.join(sorted(os.environ))")
        res = raw_sandbox.run(code, outputs=["result", "env"])
    finally:
        del os.environ["QUANTDESK_TEST_SECRET"]
    assert names.ok, names.error
    assert "QUANTDESK_TEST_SECRET" not in names.outputs["result"]
    if res.ok:
        assert "very-secret-value" not in res.outputs["env"]
    else:  # basic level as root: the child runs as nobody and may not read its own /proc entry
        assert "PermissionError" in res.error.message


def test_pandas_reader_on_proc_environ_finds_no_secret(raw_sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import io
        raw = open('/proc/self/environ', 'rb').read()
        result = raw.decode()
        for pid in ('1', '2'):
            try:
                result += open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')
            except OSError:
                pass
    """)
    os.environ["QUANTDESK_TEST_SECRET"] = "very-secret-value"
    try:
        res = raw_sandbox.run(code)
    finally:
        del os.environ["QUANTDESK_TEST_SECRET"]
    if res.ok:
        assert "very-secret-value" not in res.outputs["result"]
    else:
        assert "PermissionError" in res.error.message


def test_network_is_unreachable(raw_sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import socket
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(('127.0.0.1', 5432))
            result = 'connected'
        except OSError as exc:
            result = type(exc).__name__
    """)
    res = raw_sandbox.run(code, limits=FAST)
    assert res.ok and res.outputs["result"] == "PermissionError"
    res = raw_sandbox.run("import pandas as pd\nresult = pd.read_csv('http://127.0.0.1:5432/x.csv')", limits=FAST)
    assert res.error.kind == "runtime"


def test_no_exec_and_no_shell(raw_sandbox: Sandbox, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    code = f"import ctypes\nresult = ctypes.CDLL(None).system(b'touch {marker}')"
    res = raw_sandbox.run(code, limits=FAST)
    assert res.ok and res.outputs["result"] != 0
    res = raw_sandbox.run(f"import subprocess\nsubprocess.run(['touch', '{marker}'])", limits=FAST)
    assert res.error.kind == "runtime"
    res = raw_sandbox.run(f"import os\nos.execv('/usr/bin/touch', ['touch', '{marker}'])", limits=FAST)
    assert res.error.kind == "runtime"
    assert not marker.exists()


def test_pickle_payload_cannot_run_commands(raw_sandbox: Sandbox, tmp_path: Path) -> None:
    marker = tmp_path / "pickled"
    code = textwrap.dedent(f"""
        import pickle, os, numpy as np, io
        class P:
            def __reduce__(self):
                return (os.system, ('touch {marker}',))
        data = pickle.dumps(P())
        rc = pickle.loads(data)
        buf = io.BytesIO(); np.save(buf, np.array([P()], dtype=object), allow_pickle=True); buf.seek(0)
        arr = np.load(buf, allow_pickle=True)
        result = int(rc)
    """)
    res = raw_sandbox.run(code, limits=FAST)
    assert res.ok, res.error
    assert res.outputs["result"] != 0
    assert not marker.exists()


def test_cannot_kill_or_trace_the_worker(raw_sandbox: Sandbox) -> None:
    res = raw_sandbox.run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", limits=FAST)
    assert res.error.kind == "runtime" and "PermissionError" in res.error.message
    res = raw_sandbox.run("import os\nresult = open(f'/proc/{os.getppid()}/mem', 'rb').read(1)", limits=FAST)
    assert res.error.kind == "runtime"
    assert raw_sandbox.run("result = 1").ok


def test_dataframe_eval_with_local_references_is_contained(raw_sandbox: Sandbox, close: pd.DataFrame) -> None:
    code = "import os\nenv = os.environ\nresult = close.iloc[:3, :2].eval('@env')\nresult = str(result)"
    res = raw_sandbox.run(code, {"close": close}, limits=FAST)
    assert "SECRET" not in str(res.outputs.get("result", "")) and "KEY" not in str(res.outputs.get("result", ""))


def test_tampering_with_modules_does_not_carry_over(raw_sandbox: Sandbox, close: pd.DataFrame) -> None:
    raw_sandbox.run("import pandas as pd\npd.DataFrame.sum = lambda self, *a, **k: 42\nresult = 1")
    res = raw_sandbox.run("result = close.iloc[:5, :2].sum()", {"close": close})
    pd.testing.assert_series_equal(res.outputs["result"], close.iloc[:5, :2].sum())
    assert close.iloc[:5, :2].sum().iloc[0] != 42


def test_full_level_hides_the_host_file_system(sandbox: Sandbox) -> None:
    if sandbox.level is not Level.FULL:
        pytest.fail("needs full isolation")
    box = Sandbox(workers=1, static_policy=False, runtime_guards=False)
    try:
        repo = REPO
        code = textwrap.dedent(f"""
            import os
            seen = {{}}
            for path in ('/etc/passwd', '/etc/shadow', '{repo}/.env', '{repo}/tools', '{repo}/.git', '/home',
                         '/root/.bash_history', '/var/lib/postgresql'):
                seen[path] = os.path.exists(path)
            result = ','.join(p for p, there in seen.items() if there)
            repo_listing = sorted(os.listdir('{repo}')) if os.path.isdir('{repo}') else []
            try:
                open('/usr/lib/pwned', 'w')
                wrote = 'yes'
            except OSError:
                wrote = 'no'
            n_tmp = len(os.listdir(os.path.dirname(os.getcwd())))
        """)
        res = box.run(code, outputs=["result", "wrote", "n_tmp", "repo_listing"])
        assert res.ok, res.error
        assert res.outputs["result"] == ""
        # only the bound virtualenv (if it lives in the repo) is visible, never the sources or .env
        assert set(res.outputs["repo_listing"]) <= {".venv"}
        assert res.outputs["wrote"] == "no"
        assert res.outputs["n_tmp"] == 1  # only this run's own scratch directory is there
        first = box.run("f = open('left.txt', 'w'); f.write('x'); f.close()\nresult = 1")
        assert first.ok, first.error
        second = box.run("import os\nresult = os.path.exists('left.txt')")
        assert second.outputs["result"] is False
    finally:
        box.close()


def test_basic_level_still_blocks_network_and_exec() -> None:
    box = Sandbox(workers=1, level=Level.BASIC, static_policy=False, runtime_guards=False)
    try:
        res = box.run("import socket\nresult = 0\ntry:\n    socket.socket()\nexcept OSError:\n    result = 1")
        assert res.outputs == {"result": 1}
    finally:
        box.close()


def test_require_full_refuses_weaker_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "detect", lambda: (Level.BASIC, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(SandboxUnavailable, match="full sandbox isolation is required .*bwrap"):
        Sandbox(require_full=True)


def test_host_is_unaffected(sandbox: Sandbox, tmp_path: Path) -> None:
    env_before = dict(os.environ)
    sum_before = pd.DataFrame.sum
    for code in ("import os\nos.environ.clear()", "pd.DataFrame.sum = None", "np.random.seed(1)\nx = 1"):
        Sandbox.run(sandbox, code)
    assert dict(os.environ) == env_before
    assert pd.DataFrame.sum is sum_before
    assert sandbox.run("result = 1").ok


# --- level, warning, warm start -------------------------------------------------------------


def test_below_full_is_warned_once_with_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(host, "_warned", set())
    monkeypatch.setattr(host, "detect", lambda: (Level.BASIC, "bubblewrap (bwrap) is not installed"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with caplog.at_level(logging.WARNING, logger="tools.sandbox.host"):
        boxes = [Sandbox(workers=1), Sandbox(workers=1)]
    for box in boxes:
        box.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == host.log.name and r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "basic isolation, below full: bubblewrap (bwrap) is not installed" in warnings[0]
    assert "apt-get install bubblewrap" in warnings[0]
    assert boxes[0].level is Level.BASIC and "apt-get install bubblewrap" in boxes[0].reason


def test_minimal_level_also_names_libseccomp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "_warned", set())
    monkeypatch.setattr(host, "detect", lambda: (Level.MINIMAL, "bwrap cannot create namespaces here: denied"))
    box = Sandbox(workers=1)
    box.close()
    assert box.level is Level.MINIMAL
    assert "libseccomp" in box.reason and "bwrap cannot create namespaces" in box.reason


def test_a_requested_weaker_level_is_warned_and_explained(caplog: pytest.LogCaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if detect()[0] is not Level.FULL:
        pytest.fail(f"needs full isolation: {detect()[1]}")
    monkeypatch.setattr(host, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="tools.sandbox.host"):
        box = Sandbox(workers=1, level=Level.BASIC)
    box.close()
    assert box.reason == "level basic was requested; this host offers full"
    assert [r.getMessage() for r in caplog.records if r.name == host.log.name and r.levelno == logging.WARNING] == [
        "sandbox runs at basic isolation, below full: level basic was requested; this host offers full"]


def test_full_level_logs_no_warning(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "_warned", set())
    monkeypatch.setattr(host, "detect", lambda: (Level.FULL, ""))
    with caplog.at_level(logging.INFO, logger="tools.sandbox.host"):
        Sandbox(workers=1).close()
    assert [r.levelno for r in caplog.records if r.name == host.log.name] == [logging.INFO]


def _children() -> dict[int, str]:
    """This process's child processes and their command lines."""
    kids = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                kids[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue  # the process ended while we looked
    return kids


def test_warm_starts_the_workers_that_runs_then_use() -> None:
    before = _children()
    box = Sandbox(workers=2)
    try:
        assert _children() == before  # workers start lazily
        box.warm()
        started = {pid: cmd for pid, cmd in _children().items() if pid not in before}
        assert len(started) == 2 and all("worker.py" in cmd for cmd in started.values()), started
        assert box.run("result = float(np.arange(4.0).mean())").outputs == {"result": 1.5}
        assert {pid for pid in _children() if pid not in before} == set(started)  # no new worker for the run
        box.warm()  # idempotent: the warm workers are kept
        assert {pid for pid in _children() if pid not in before} == set(started)
    finally:
        box.close()
    assert not set(started) & set(_children())


def test_a_failed_warm_start_keeps_the_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    box = Sandbox(workers=1)

    def broken(_spec_args: tuple) -> None:
        raise SandboxUnavailable("the sandbox worker failed to start: test")

    try:
        with monkeypatch.context() as patch:
            patch.setattr(host, "_Worker", broken)
            with pytest.raises(SandboxUnavailable, match="failed to start"):
                box.warm()
        results = []
        runner = threading.Thread(target=lambda: results.append(box.run("result = 1")), daemon=True)
        runner.start()
        runner.join(timeout=60)
        assert results and results[0].outputs == {"result": 1}, "the run found no free worker slot"
    finally:
        box.close()


# --- the user's imports: refused statically, and at run time by the import guard ---------------

ESCAPE_IMPORTS = [
    "import os", "import subprocess", "import socket", "import sys", "import builtins", "import ctypes",
    "import importlib", "from importlib import import_module", "import pickle", "import numpy.ctypeslib",
    "from numpy import _core", "import numpy._core._methods", "from pandas import io", "import pandas.io.common",
]


@pytest.mark.parametrize("code", ESCAPE_IMPORTS)
def test_escape_imports_are_refused_before_running(sandbox: Sandbox, code: str) -> None:
    res = sandbox.run(f"{code}\nresult = 1")
    assert res.error is not None and res.error.kind == "forbidden" and res.error.line == 1, res.error


@pytest.mark.parametrize("code", [
    "result = str(getattr(np, 'ctypeslib'))", "result = str(np.ctypeslib)", "result = str(pd.io.common.os)",
    "import operator\nresult = str(operator.attrgetter('io.common.os')(pd))", "g = getattr\nresult = str(g(pd, 'io'))",
    "import functools\nresult = str(functools.reduce(getattr, ['io', 'common', 'os'], pd))",
    "result = str(pd.eval('pd.io.common.os.getcwd()'))", "result = str(__import__('os'))",
    "import typing\ndef f(x: 'pd.io.common.os.getcwd()'):\n    return x\nresult = str(typing.get_type_hints(f))",
    "import functools\n@functools.singledispatch\ndef g(x):\n    return 0\nresult = 1",
    "result = close.agg('to_pickle', path='x.pkl')",
])
def test_indirect_module_access_is_refused_before_running(sandbox: Sandbox, close: pd.DataFrame, code: str) -> None:
    res = sandbox.run(code, {"close": close.iloc[:5, :2]})
    assert res.error is not None and res.error.kind == "forbidden", res.error


@pytest.fixture(scope="module")
def guarded_sandbox() -> Iterator[Sandbox]:
    """No static policy, runtime guards on: what the guarded builtins and import hook refuse on their own."""
    box = Sandbox(workers=1, static_policy=False)
    yield box
    box.close()


@pytest.mark.parametrize("code", [*(c for c in ESCAPE_IMPORTS if c != "from pandas import io"),
                                  "from . import codec", "from numpy import *"])
def test_import_statements_are_refused_at_run_time(guarded_sandbox: Sandbox, code: str) -> None:
    res = guarded_sandbox.run(f"{code}\nresult = 1")
    assert res.error is not None and res.error.kind == "runtime" and res.error.line == 1, res.error
    assert "ImportError" in res.error.message and "not allowed" in res.error.message


@pytest.mark.parametrize("code", [
    "m = __import__('os')",  # a direct call, not an import statement
    "m = __import__('os', {'__name__': 'numpy'}, None, [], 0)",  # globals that pose as a library
    "m = __builtins__['__import__']('subprocess', {'__name__': 'pandas.core.frame'})",
    "m = __import__('importlib')",
    "m = __import__('numpy')",
])
def test_calling_the_import_guard_directly_returns_no_module(guarded_sandbox: Sandbox, code: str) -> None:
    res = guarded_sandbox.run(f"{code}\nresult = repr(m)")
    assert res.ok, res.error
    assert res.outputs["result"] == "None"


@pytest.mark.parametrize("code", [
    "__import__('numpy', {'__name__': 'numpy'}, None, ['ctypeslib'], 0)",
    "__import__('linalg', {'__name__': 'numpy', '__package__': 'numpy'}, None, [], 1)",
    "__import__('webbrowser')",  # neither loaded nor part of an allowed library: its module code never runs
])
def test_the_import_guard_refuses_other_library_style_calls(guarded_sandbox: Sandbox, code: str) -> None:
    res = guarded_sandbox.run(f"{code}\nresult = 1")
    assert res.error is not None and res.error.kind == "runtime", res.error
    assert "ImportError" in res.error.message and "not allowed" in res.error.message


def test_from_imports_of_allowed_names_work_under_the_guard(guarded_sandbox: Sandbox) -> None:
    code = "from numpy import linalg, float64, fft\nfrom pandas import DataFrame, offsets\nfrom math import sqrt\n" \
           "x = float(linalg.norm(DataFrame({'a': [3.0, 4.0]}).to_numpy())) + float(float64(sqrt(4.0)))\n" \
           "result = x + float(fft.fft(np.ones(2))[0].real) + offsets.BDay(3).n"
    res = guarded_sandbox.run(code)
    assert res.ok, res.error
    assert res.outputs["result"] == 12.0


def test_guarded_builtins_lack_the_forbidden_names(guarded_sandbox: Sandbox) -> None:
    for code in ("result = open('/etc/hostname').read()", "exec('result = 1')", "result = eval('1')"):
        res = guarded_sandbox.run(code)
        assert res.error is not None and "NameError" in res.error.message, (code, res.error)


def test_libraries_import_their_internals_under_the_guard(guarded_sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import numpy.linalg
        x = np.arange(6.0).reshape(2, 3)
        v = np.log(np.array([0.0, 1.0]))
        result = [float(x.sum()), float(x.mean()), float(numpy.linalg.norm(x)), str(x), float(v[0])]
    """)
    res = guarded_sandbox.run(code)
    assert res.ok, res.error
    x = np.arange(6.0).reshape(2, 3)
    assert res.outputs["result"] == [15.0, 2.5, float(np.linalg.norm(x)), str(x), float("-inf")]
    assert "RuntimeWarning" in res.stderr


# --- legitimate factor and signal code gives the same numbers as in-process -----------------

LEGIT = {
    "rolling": "factor = close.rolling(20).mean() / close - 1",
    "ewm": "factor = close.ewm(span=12, adjust=False).mean() - close.ewm(span=26, adjust=False).mean()",
    "rank": "factor = close.pct_change(5, fill_method=None).rank(axis=1, pct=True)",
    "groupby": "factor = close.pct_change(fill_method=None).groupby(close.index.to_period('M')).cumsum()",
    "pct_change": "factor = close.pct_change(20, fill_method=None)",
    "where": "r = close.pct_change(fill_method=None)\nfactor = r.where(r.abs() < 0.05)",
    "clip": "factor = close.pct_change(fill_method=None).clip(-0.03, 0.03)",
    "zscore": textwrap.dedent("""
        r = close.pct_change(10, fill_method=None)
        factor = r.sub(r.mean(axis=1), axis=0).div(r.std(axis=1), axis=0)
    """),
    "resample": "factor = close.resample('W-FRI').last().pct_change(fill_method=None)",
    "signal": textwrap.dedent("""
        import numpy as np
        fast, slow = close.rolling(5).mean(), close.rolling(20).mean()
        signal = pd.DataFrame(np.where(fast > slow, 1.0, np.where(fast < slow, -1.0, 0.0)),
                              index=close.index, columns=close.columns).where(slow.notna())
    """),
    "rsi": textwrap.dedent("""
        delta = close.diff()
        up = delta.clip(lower=0).rolling(14).mean()
        down = (-delta.clip(upper=0)).rolling(14).mean()
        factor = 100 - 100 / (1 + up / down)
    """),
}


@pytest.mark.parametrize("name", list(LEGIT))
def test_legitimate_code_matches_in_process(sandbox: Sandbox, close: pd.DataFrame, name: str) -> None:
    code = LEGIT[name]
    expected: dict = {"pd": pd, "np": np, "close": close.copy()}
    exec(code, expected)  # trusted test code, in-process reference
    res = sandbox.run(code, {"close": close})
    assert res.ok, res.error
    (out_name,) = res.outputs
    pd.testing.assert_frame_equal(res.outputs[out_name], expected[out_name], check_freq=False)


def _descendants(root: int) -> set[int]:
    """Every process below `root` (a sandbox worker: its isolation wrapper, its fork server and a run's child)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:  # it ended meanwhile
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_a_worker_killed_mid_run_is_replaced_and_the_code_runs_again(raw_sandbox: Sandbox) -> None:
    """A worker that dies or stops answering is the host's trouble, not the code's: the code runs again on a new
    worker (a machine under load must not turn into 'your code crashed')."""
    raw_sandbox.warm()
    worker = raw_sandbox._idle.queue[-1]  # the next one taken (a LIFO queue)
    assert worker is not None
    idle = _descendants(worker.proc.pid)
    results: list[SandboxResult] = []
    run = threading.Thread(target=lambda: results.append(raw_sandbox.run(
        "import time\ntime.sleep(1.5)\nresult = 4", limits=FAST)))
    run.start()
    wait_until(lambda: _descendants(worker.proc.pid) - idle, "the worker to fork the run's child", 30)
    os.killpg(worker.proc.pid, signal.SIGKILL)  # the worker's whole session: it never answers this run
    run.join(60)
    (result,) = results
    assert result.ok, result.error
    assert result.outputs == {"result": 4}


def test_a_worker_that_stops_reading_before_its_start_up_message_is_an_unavailable_sandbox(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies as it starts (seen under load, its pipe closed before the host's first message) is a
    SandboxUnavailable with its last words, which callers handle, not a BrokenPipeError in their thread."""
    real = host.worker_spec

    def closing_stdin(*args: object, **kwargs: object) -> host.WorkerSpec:
        spec = real(*args, **kwargs)  # type: ignore[arg-type]
        # a start-up message larger than the pipe holds: the host's write waits for the worker, which closes it
        return dataclasses.replace(spec, argv=["/bin/sh", "-c", "exec 0<&-; echo 'worker refused' >&2; sleep 30"],
                                   init={**spec.init, "padding": "x" * (1 << 20)})

    monkeypatch.setattr(host, "worker_spec", closing_stdin)
    box = Sandbox(workers=1)
    try:
        with pytest.raises(SandboxUnavailable, match="the sandbox worker stopped as it started"):
            box.warm()
    finally:
        box.close()
