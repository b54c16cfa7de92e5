"""The runtime twin of the static policy: builtins without the forbidden names and a guarded `__import__`.

Standard library only: imported by the worker as a plain sibling module inside the sandbox.

The guarded `__import__` sits in the user's builtins, so CPython calls it in two ways, told apart by the
instruction the calling frame is at (never by the `globals` argument, which a caller controls):
- the user's own `import` statements (an IMPORT_NAME instruction): only the allowed modules, absolute,
  no `*` and no private names in `from … import` (public names are the static policy's business);
- C code importing through `PyImport_Import` while the user's frame is the innermost Python frame, e.g.
  `ndarray.sum` importing `numpy._core._methods`, `str(array)` importing `numpy._core.arrayprint`, a
  RuntimeWarning importing `warnings`, `Timestamp.strftime` importing `time`. `PyImport_Import` takes the
  module from `sys.modules` and ignores what `__import__` returns, so the guard imports it (a module of an
  allowed library, or one already loaded) and returns None: code that somehow called the guard directly
  gets nothing back. Library Python code never gets here: its frames carry their own modules' real builtins.
"""

from __future__ import annotations

import builtins
import opcode
import sys
from collections.abc import Callable
from typing import Any

_IMPORT_NAME = opcode.opmap["IMPORT_NAME"]


def make_import(allowed_modules: frozenset[str]) -> Callable[..., Any]:
    """A `__import__` for user code: the allowlist for its statements, library internals for library calls."""
    real_import = builtins.__import__
    allowed_roots = frozenset(m.partition(".")[0] for m in allowed_modules)

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002, ANN001, ANN202
        caller = sys._getframe(1)
        if caller.f_code.co_code[caller.f_lasti] == _IMPORT_NAME:  # the user's own import statement
            if level != 0 or name not in allowed_modules:
                raise ImportError(f"import of {name!r} is not allowed in the sandbox")
            for item in fromlist or ():
                if item == "*" or item.startswith("_"):
                    raise ImportError(f"importing {item!r} from {name!r} is not allowed")
            return real_import(name, globals, locals, fromlist, level)
        if level != 0 or fromlist or (name.partition(".")[0] not in allowed_roots and name not in sys.modules):
            raise ImportError(f"import of {name!r} (by a library call) is not allowed in the sandbox")
        real_import(name)
        return None  # PyImport_Import reads the module from sys.modules

    return guarded_import


def guarded_builtins(allowed_modules: frozenset[str], forbidden: frozenset[str]) -> dict[str, Any]:
    """The user code's `__builtins__`: public builtins minus `forbidden`, with the guarded `__import__`."""
    safe = {k: v for k, v in vars(builtins).items() if k not in forbidden and not k.startswith("_")}
    safe["__import__"] = make_import(allowed_modules)
    return safe
