"""Static policy: an AST check that rejects code reaching outside pandas/numpy arithmetic before anything runs.

It is the first of two layers; the OS isolation of the worker is the second, because public library
APIs always leave ways around a static check.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, overload

ALLOWED_MODULES = frozenset({
    "pandas", "numpy", "math", "statistics", "datetime", "itertools", "functools", "collections",
    "operator", "decimal", "fractions", "typing", "numpy.linalg", "numpy.random",
})

FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "input", "breakpoint",
    "help", "exit", "quit", "memoryview", "setattr", "delattr", "classmethod", "staticmethod", "property",
    "super", "object", "type", "__builtins__", "__loader__", "__spec__", "__file__", "__name__",
})

# Public attributes that lead to the file system, the interpreter, foreign code or pickles.
FORBIDDEN_ATTRIBUTES = frozenset({
    # modules hanging off pandas / numpy
    "io", "core", "compat", "util", "api", "testing", "plotting", "arrays", "errors", "tseries",
    "ctypeslib", "lib", "f2py", "distutils", "os", "sys", "subprocess", "ctypes", "builtins", "importlib",
    "pickle", "shutil", "pathlib", "socket", "mmap", "tempfile", "glob", "exceptions", "matrixlib",
    "polynomial", "rec", "char", "emath", "typing", "config", "options",
    # file and foreign-code access on objects
    "fromfile", "tofile", "load", "loads", "save", "savez", "savez_compressed", "loadtxt", "savetxt",
    "genfromtxt", "memmap", "fromregex", "DataSource", "frombuffer", "dump", "dumps",
    "to_pickle", "to_parquet", "to_feather", "to_hdf", "to_stata", "to_excel", "to_orc", "to_sql",
    "to_clipboard", "ExcelWriter", "HDFStore", "set_option", "option_context", "show_versions",
    "gi_frame", "f_globals", "f_locals", "f_back", "tb_frame", "cr_frame", "ag_frame", "mro",
    "format_map", "register_dataframe_accessor", "register_series_accessor", "register_index_accessor",
    # callables that turn strings into attribute access or evaluate them (string annotations)
    "attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "singledispatch", "singledispatchmethod",
})

# Methods that write text when given a path; allowed only without one (they then return a string).
PATH_WRITERS = frozenset({"to_csv", "to_json", "to_html", "to_xml", "to_latex", "to_markdown", "to_string"})
PATH_KEYWORDS = frozenset({"path_or_buf", "buf", "path"})
EXPRESSION_METHODS = frozenset({"eval", "query"})
# Methods that call the method a string names (`close.agg('mean')`).
DISPATCH_METHODS = frozenset({"agg", "aggregate", "apply", "transform"})
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr"})


@dataclass(frozen=True)
class Violation:
    line: int
    message: str
    syntax: bool = False

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _nfkc(name: str) -> str:
    return unicodedata.normalize("NFKC", name)


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def flag(self, node: ast.AST, message: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), message))

    # imports -------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, _nfkc(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(node, "relative imports are not allowed")
            return
        module = _nfkc(node.module or "")
        self._check_module(node, module)
        for alias in node.names:
            name = _nfkc(alias.name)
            if name == "*":
                self.flag(node, f"'from {module} import *' is not allowed; import the names you use")
            elif f"{module}.{name}" not in ALLOWED_MODULES:
                self._check_attribute_name(node, name, f"'from {module} import {name}'")

    def _check_module(self, node: ast.AST, module: str) -> None:
        if module not in ALLOWED_MODULES:
            allowed = ", ".join(sorted(m for m in ALLOWED_MODULES if "." not in m))
            self.flag(node, f"import of {module!r} is not allowed; allowed modules: {allowed}")

    # names and attributes ------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = _nfkc(node.id)
        if name in FORBIDDEN_NAMES:
            self.flag(node, f"use of {name!r} is not allowed")
        elif name in ATTRIBUTE_FUNCTIONS:
            self.flag(node, f"{name}() may only be called directly, with a literal attribute name")
        elif name.startswith("__"):
            self.flag(node, f"dunder name {name!r} is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check_attribute_name(node, _nfkc(node.attr), f"attribute '.{_nfkc(node.attr)}'")
        self.generic_visit(node)

    def _check_attribute_name(self, node: ast.AST, name: str, what: str) -> None:
        if name.startswith("_"):
            self.flag(node, f"{what}: private and dunder attributes are not allowed")
        elif name in FORBIDDEN_ATTRIBUTES or name.startswith("read_"):
            self.flag(node, f"{what} is not allowed (file, interpreter or foreign-code access)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "{" in node.value:
            for _literal, field, _spec, _conv in _format_fields(node.value):
                for name in re.findall(r"\.([^.\[]*)", field or ""):
                    self._check_attribute_name(node, _nfkc(name), f"format field {{{field}}}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and _nfkc(func.id) in ATTRIBUTE_FUNCTIONS:
            self._check_getattr(node, _nfkc(func.id))
            for child in (*node.args, *node.keywords):  # not the name itself: a direct call is fine
                self.visit(child)
            return
        if isinstance(func, ast.Attribute):
            attr = _nfkc(func.attr)
            if attr in PATH_WRITERS and (node.args or any(k.arg in PATH_KEYWORDS for k in node.keywords)):
                self.flag(node, f"'.{attr}(...)' with a path writes a file; call it without one to get text")
            if attr in EXPRESSION_METHODS:
                self._check_expression_string(node, attr)
            if attr == "format":
                self._check_format(node)
            if attr in DISPATCH_METHODS:
                self._check_dispatch_strings(node, attr)
        self.generic_visit(node)

    def _check_getattr(self, node: ast.Call, fn: str) -> None:
        if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or not isinstance(node.args[1].value, str):
            self.flag(node, f"{fn}() needs a literal attribute name")
            return
        self._check_attribute_name(node, _nfkc(node.args[1].value), f"{fn}(..., {node.args[1].value!r})")

    def _check_expression_string(self, node: ast.Call, method: str) -> None:
        expr = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "expr"), None)
        if not isinstance(expr, ast.Constant) or not isinstance(expr.value, str):
            self.flag(node, f"'.{method}()' needs a literal expression string")
            return
        text = _nfkc(expr.value)
        if "@" in text or "__" in text or "`" in text:
            self.flag(node, f"'.{method}()' expressions may not use '@' variables, dunders or backticks")
        else:
            self._check_expression_attributes(node, method, text)
        if any(k.arg in ("engine", "local_dict", "global_dict", "resolvers") for k in node.keywords):
            self.flag(node, f"'.{method}()' may not set engine or variable dictionaries")

    def _check_expression_attributes(self, node: ast.Call, method: str, text: str) -> None:
        try:
            tree = ast.parse(text, mode="exec")
        except SyntaxError:
            self.flag(node, f"'.{method}()' needs a valid expression")
            return
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Attribute):
                self._check_attribute_name(node, _nfkc(sub.attr), f"'.{method}()' attribute '.{sub.attr}'")

    def _check_dispatch_strings(self, node: ast.Call, method: str) -> None:
        """`close.agg('name')` calls the method `name`: the names must pass the attribute check."""
        targets = node.args[:1] + [k.value for k in node.keywords if k.arg == "func"]
        for name in (n for target in targets for n in _literal_strings(target)):
            self._check_attribute_name(node, _nfkc(name), f"'.{method}({name!r})'")
            if _nfkc(name) in PATH_WRITERS:
                self.flag(node, f"'.{method}({name!r})': call '.{_nfkc(name)}()' directly")

    def _check_format(self, node: ast.Call) -> None:
        target = node.func.value if isinstance(node.func, ast.Attribute) else None
        if not isinstance(target, ast.Constant) or not isinstance(target.value, str):
            self.flag(node, "'.format()' is allowed only on a literal string; use an f-string")
            return
        for _literal, field, _spec, _conv in _format_fields(target.value):
            if field and any(ch in field for ch in ".[_"):
                self.flag(node, f"format field {{{field}}} may not reach attributes or items")

    # definitions ---------------------------------------------------------------------
    def _check_def_name(self, node: ast.AST, name: str) -> None:
        if _nfkc(name).startswith("__"):
            self.flag(node, f"dunder definition {name!r} is not allowed")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._check_def_name(node, node.name)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.flag(node, "class definitions are not allowed; use functions")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.flag(node, "async code is not allowed")

    def visit_Global(self, node: ast.Global) -> None:
        self.flag(node, "'global' is not allowed")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.flag(node, "'nonlocal' is not allowed")

    def visit_arg(self, node: ast.arg) -> None:
        self._check_def_name(node, node.arg)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and _nfkc(node.arg).startswith("__"):
            self.flag(node, f"dunder keyword {node.arg!r} is not allowed")
        self.generic_visit(node)


def _literal_strings(node: ast.AST) -> list[str]:
    """The strings of a literal and of the lists, tuples, sets and dict values it is built from."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [s for item in node.elts for s in _literal_strings(item)]
    if isinstance(node, ast.Dict):
        return [s for item in node.values for s in _literal_strings(item)]
    return []


def _format_fields(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    import string

    try:
        return list(string.Formatter().parse(template))
    except ValueError:
        return []


class UncheckableCode(SyntaxError):
    """Code the parser or the check gave up on (nested too deeply, too large): refused like a syntax error."""


def _why(exc: Exception) -> str:
    if isinstance(exc, RecursionError | MemoryError):
        return "the code is nested too deeply or is too large to check"
    return f"the code cannot be checked ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})"


@overload
def parse_untrusted(code: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse_untrusted(code: str, mode: Literal["eval"]) -> ast.Expression: ...
def parse_untrusted(code: str, mode: str = "exec") -> ast.AST:
    """`ast.parse` of code a person or a model wrote: a SyntaxError (UncheckableCode for any other failure of the
    parser, such as RecursionError or MemoryError) rather than an exception that takes the process down."""
    try:
        return ast.parse(code, filename="<user code>", mode=mode)
    except SyntaxError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the parser raises, the code is refused, not the process
        raise UncheckableCode(_why(exc)) from None


def check_code(code: str) -> list[Violation]:
    """All policy violations in `code` (a syntax error, or code too deep or large to check, is reported as one
    violation with its line). Never raises: whatever goes wrong checking the code refuses it."""
    try:
        tree = parse_untrusted(code)
        checker = _Checker()
        checker.visit(tree)
    except UncheckableCode as exc:
        return [Violation(0, exc.msg, syntax=True)]
    except SyntaxError as exc:
        return [Violation(exc.lineno or 0, f"syntax error: {exc.msg}", syntax=True)]
    except Exception as exc:  # noqa: BLE001 - the check itself failing refuses the code
        return [Violation(0, _why(exc), syntax=True)]
    return sorted(checker.violations, key=lambda v: v.line)
