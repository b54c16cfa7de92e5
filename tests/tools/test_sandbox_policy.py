"""The static policy: every escape construct is rejected with the construct and its line named."""

from __future__ import annotations

import pytest

from tools.sandbox.policy import check_code

REJECTED = {
    # imports and aliases
    "import os": "import of 'os' is not allowed",
    "import subprocess as sp": "import of 'subprocess'",
    "from os import system": "import of 'os'",
    "import numpy.ctypeslib": "import of 'numpy.ctypeslib'",
    "from numpy import ctypeslib": "'from numpy import ctypeslib' is not allowed",
    "from pandas.io import common": "import of 'pandas.io'",
    "from pandas import *": "import *",
    "import importlib": "import of 'importlib'",
    "import pickle": "import of 'pickle'",
    "import ctypes": "import of 'ctypes'",
    "from . import x": "relative imports",
    "__import__('os')": "'__import__' is not allowed",
    # builtins tricks
    "eval('1+1')": "'eval' is not allowed",
    "exec('x = 1')": "'exec' is not allowed",
    "compile('1', 'f', 'eval')": "'compile' is not allowed",
    "open('/etc/passwd').read()": "'open' is not allowed",
    "globals()['x'] = 1": "'globals' is not allowed",
    "vars()": "'vars' is not allowed",
    "breakpoint()": "'breakpoint' is not allowed",
    "t = type(1)": "'type' is not allowed",
    "b = __builtins__": "'__builtins__' is not allowed",
    "getattr(pd, name)": "getattr() needs a literal attribute name",
    "getattr(pd, 'read_csv')('/etc/passwd')": "getattr(..., 'read_csv') is not allowed",
    "getattr(1, '__class__')": "private and dunder attributes are not allowed",
    "ｅｖａｌ('1')": "'eval' is not allowed",
    "getattr(1, '＿＿class＿＿')": "private and dunder",
    # attribute chains
    "().__class__.__bases__[0].__subclasses__()": "'.__class__'",
    "f = lambda: 0\ng = f.__globals__": "'.__globals__'",
    "f = lambda: 0\nc = f.__code__": "'.__code__'",
    "g = (x for x in [1])\nfr = g.gi_frame.f_back": "'.gi_frame'",
    "x = pd._libs": "'._libs'",
    "m = pd.DataFrame.mro()": "'.mro'",
    "class A: pass": "class definitions are not allowed",
    "def __init__(self): pass": "dunder definition",
    # pandas / numpy public-API escapes
    "pd.io.common.os.system('id')": "'.io' is not allowed",
    "pd.read_csv('/etc/passwd')": "'.read_csv' is not allowed",
    "pd.read_csv('/proc/self/environ')": "'.read_csv'",
    "pd.read_json('http://example.com/x.json')": "'.read_json'",
    "pd.read_pickle('x.pkl')": "'.read_pickle'",
    "np.load('x.npy', allow_pickle=True)": "'.load' is not allowed",
    "np.fromfile('/etc/passwd')": "'.fromfile'",
    "np.ctypeslib.load_library('libc', '/lib')": "'.ctypeslib'",
    "close.to_pickle('/tmp/x')": "'.to_pickle'",
    "close.to_csv('/home/x.csv')": "with a path writes a file",
    "close.to_csv(path_or_buf='/x')": "with a path writes a file",
    "close.eval('@pd.io')": "may not use '@' variables",
    "close.query('a > @limit')": "may not use '@' variables",
    "close.query(expr)": "needs a literal expression string",
    "close.eval('a + b', engine='python')": "may not set engine",
    "'{0.__class__}'.format(1)": "may not reach attributes",
    "fmt.format(1)": "only on a literal string",
    "'{x}'.format_map(d)": "'.format_map'",
    "pd.set_option('display.max_rows', 1)": "'.set_option'",
    "a = close.values.ctypes": "'.ctypes'",
    "pd.api.extensions.register_dataframe_accessor('x')": "'.api'",
    "global x": "'global' is not allowed",
    "async def f(): pass": "async code",
    # string-to-attribute helpers: the attribute check would never see the names
    "import operator\nf = operator.attrgetter('io.common.os')": "'.attrgetter' is not allowed",
    "from operator import methodcaller": "'from operator import methodcaller' is not allowed",
    "g = getattr\nx = g(pd, 'io')": "getattr() may only be called directly",
    "import functools\nx = functools.reduce(getattr, ['io', 'common'], pd)": "getattr() may only be called directly",
    "m = list(map(hasattr, [pd], ['io']))": "hasattr() may only be called directly",
    # string annotations are evaluated by typing.get_type_hints and functools.singledispatch
    "import typing\nh = typing.get_type_hints": "'.get_type_hints' is not allowed",
    "from typing import ForwardRef": "'from typing import ForwardRef' is not allowed",
    "import functools\n@functools.singledispatch\ndef f(x):\n    return x": "'.singledispatch' is not allowed",
    # expression strings and method-name strings get the attribute check too
    "x = pd.eval('pd.io.common.os.getcwd()')": "'.eval()' attribute '.io' is not allowed",
    "x = close.eval('a.to_pickle')": "'.eval()' attribute '.to_pickle'",
    "x = close.query('a >')": "'.query()' needs a valid expression",
    "x = close.agg('to_pickle', path='x.pkl')": "'.agg('to_pickle')' is not allowed",
    "x = close.apply(['mean', '_mgr'])": "'.apply('_mgr')': private and dunder",
    "x = close.transform({'a': 'to_csv'})": "call '.to_csv()' directly",
    "x = close.to_string(float_format='{0.__class__}')": "format field {0.__class__}: private and dunder",
    "x = close.to_string(float_format='{0.f_globals}')": "format field {0.f_globals} is not allowed",
}


@pytest.mark.parametrize(("code", "message"), list(REJECTED.items()), ids=list(range(len(REJECTED))))
def test_escape_constructs_are_rejected(code: str, message: str) -> None:
    violations = check_code(code)
    assert violations, f"not rejected: {code}"
    assert any(message in v.message for v in violations), [str(v) for v in violations]
    assert all(v.line >= 1 for v in violations)
    assert not any(v.syntax for v in violations)


def test_rejection_names_the_line() -> None:
    code = "x = 1\ny = 2\nimport os\n"
    (violation,) = check_code(code)
    assert violation.line == 3
    assert str(violation) == (
        "line 3: import of 'os' is not allowed; allowed modules: collections, datetime, decimal, fractions, "
        "functools, itertools, math, numpy, operator, pandas, statistics, typing"
    )


def test_syntax_errors_are_marked() -> None:
    (violation,) = check_code("x = (1,\n")
    assert violation.syntax and violation.line == 1


ALLOWED = [
    "import numpy as np\nimport pandas as pd\nfrom math import sqrt\nimport numpy.linalg",
    "signal = (close.rolling(5).mean() > close.rolling(20).mean()).astype(float)",
    "z = (close - close.rolling(20).mean()) / close.rolling(20).std()\nfactor = z.rank(axis=1, pct=True)",
    "factor = close.pct_change(20, fill_method=None).where(close.notna()).clip(-1, 1)",
    "result = close.query('a > 1 and pct_chg < 3')",
    "print(f'{len(close)} rows')\nprint('{} rows'.format(3))",
    "factor = getattr(close, 'mean')()",
    "out = close.to_csv()\nresult = len(out)",
    "def zscore(x):\n    return (x - x.mean()) / x.std()\nfactor = close.apply(zscore, axis=1)",
    "result = close.dtypes.iloc[0] == 'float64'",
    "factor = close.ewm(span=10).mean().groupby(close.index.month).transform('mean')",
    "result = close.agg(['mean', 'std'])\nz = close.apply(lambda row: row['000001.SZ'], axis=1)",
    "result = close.eval('a.abs() + b')\nr = pd.eval('close.a + 1')",
    "print('{0.real} and {x[1]}')\nresult = hasattr(close, 'mean')",
    "import functools\nimport operator\nresult = functools.reduce(operator.add, [1, 2], 0)",
]


@pytest.mark.parametrize("code", ALLOWED)
def test_ordinary_factor_code_passes(code: str) -> None:
    assert check_code(code) == []
