"""The factor template. Generated (or edited) code is only the body of `compute_factor`; the header, the
signature (one wide frame per requested field) and the call are fixed here, and only the sandbox runs it."""

from __future__ import annotations

import ast
import textwrap

from tools.i18n import _
from tools.sandbox.policy import UncheckableCode, check_code, parse_untrusted

HEADER = '''# Factor: {name}
# {description}
# Inputs: one DataFrame per field, index = trade dates, columns = ts_codes.
# Output: a DataFrame with the same index and columns as the inputs.
import math

import numpy as np
import pandas as pd


def compute_factor({params}):
'''
CALL = "\n\nfactor = compute_factor({args})\n"


class TemplateError(ValueError):
    """An edit that does not fit the template."""


def render(name: str, description: str, fields: tuple[str, ...] | list[str], body: str) -> str:
    """The full program the sandbox runs: header, indented body, the fixed call that leaves `factor`."""
    body = textwrap.dedent(body).strip("\n")
    if not body.strip():
        raise TemplateError(_("the factor body is empty"))
    header = HEADER.format(name=name, description=" ".join(description.split())[:200],
                           params=", ".join(fields))
    return header + textwrap.indent(body, "    ") + CALL.format(args=", ".join(f"{f}={f}" for f in fields))


def body_of(text: str) -> str:
    """The body from an edit: either a bare body or a whole program with `def compute_factor(...)`."""
    text = textwrap.dedent(text.replace("\r\n", "\n")).strip("\n")
    if "def compute_factor" not in text:
        return text + "\n"
    try:
        tree = parse_untrusted(text)
    except UncheckableCode as exc:
        raise TemplateError(exc.msg) from None
    except SyntaxError as exc:
        raise TemplateError(_("the edited code does not parse (line {line}: {problem})").format(
            line=exc.lineno, problem=exc.msg)) from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "compute_factor":
            lines = text.splitlines()
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str) and len(node.body) > 1):
                first = node.body[1]  # drop the docstring
            return textwrap.dedent("\n".join(lines[first.lineno - 1: node.end_lineno])) + "\n"
    raise TemplateError(_("the edited code has no `def compute_factor(...)`"))


def edit_problems(text: str) -> list[str]:
    """What the sandbox's static check would refuse in an edit, with body-relative line numbers (for forms)."""
    if not text.strip():
        return [_("The code is empty.")]
    try:
        body = body_of(text)
    except TemplateError as exc:
        return [str(exc)]
    wrapped = "def compute_factor():\n" + textwrap.indent(body, "    ")
    return [_("line {line}: {problem}").format(line=max(v.line - 1, 1), problem=v.message) for v in check_code(wrapped)]
