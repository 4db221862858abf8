"""Writes ``infra/keywords.py``: the :class:`~infra.sundial.Sundial` construct's keyword arguments,
a ``TypedDict`` with one key per setting of ``shared.settings.context.DeploymentSettings``, each
with the model's type, its default, its context key and its documentation.

The model is where a setting is declared; this file is written from it, never by hand, so the
construct's keyword arguments cannot drift from the ``sundial:*`` keys of cdk.json
(tests/infrastructure/test_construct.py fails when the file differs from what this writes)::

    .venv/bin/python -m release.keywords           # rewrites infra/keywords.py
    .venv/bin/python -m release.keywords --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo

from shared.settings.context import DeploymentSettings, context_key
from shared.settings.model import SettingsModel

TARGET = Path(__file__).resolve().parent.parent / "infra" / "keywords.py"
WIDTH = 100

HEADER = '''\
"""The :class:`~.sundial.Sundial` construct's keyword arguments: :class:`SundialSettings`, one key
per ``sundial:*`` setting of cdk.json, with the settings model's type, default and documentation
(``shared.settings.context.DeploymentSettings``, which also validates them).

Written by ``python -m release.keywords`` from the model: do not edit by hand.
"""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = ["SundialSettings"]


class SundialSettings(TypedDict, total=False):
    """A Sundial deployment's settings as keyword arguments: each is a ``sundial:*`` context key of
    cdk.json (named in its documentation), with the same default and the same validation; one left
    out takes its default."""'''


def field_docs(model: type[SettingsModel]) -> dict[str, str]:
    """Each field's documentation: the string literal after it in its class's source."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, SettingsModel)) or cls is SettingsModel:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        (node,) = tree.body
        assert isinstance(node, ast.ClassDef)
        for statement, after in zip(node.body, [*node.body[1:], None], strict=True):
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                continue
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                docs[statement.target.id] = inspect.cleandoc(str(after.value.value))
    return docs


def type_expression(info: FieldInfo) -> str:
    """The keyword's type: the model's, a ``Literal`` of strings kept as one (``Literal["retain",
    "destroy"]``), a ``Literal`` of integers as ``int`` (the model checks the value)."""
    annotation = info.annotation
    if typing.get_origin(annotation) is Literal:
        values = typing.get_args(annotation)
        if all(isinstance(value, str) for value in values):
            return f"Literal[{', '.join(json.dumps(value) for value in values)}]"
        if all(isinstance(value, int) for value in values):
            return "int"
    if annotation in (int, bool, str):
        return str(annotation.__name__)
    raise TypeError(f"no keyword type for {annotation!r}: teach release/keywords.py")


def _literal(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def accepted(info: FieldInfo) -> str:
    """The values an integer ``Literal`` accepts (its keyword's type is ``int``); empty for the
    others, whose bounds and rules the model states when it refuses a value (docs/deploy.md,
    section 3, lists them)."""
    if typing.get_origin(info.annotation) is Literal and type_expression(info) == "int":
        return "one of " + ", ".join(map(str, typing.get_args(info.annotation)))
    return ""


def _docstring(text: str) -> list[str]:
    """``text`` as a docstring indented in the class body, wrapped at :data:`WIDTH`."""
    paragraphs = [" ".join(paragraph.split()) for paragraph in text.split("\n\n")]
    lines: list[str] = []
    for paragraph in paragraphs:
        if lines:
            lines.append("")
        lines += textwrap.wrap(paragraph, WIDTH - 4, break_on_hyphens=False, break_long_words=False)
    lines[0] = '"""' + lines[0]
    lines[-1] = lines[-1] + '"""'
    return ["    " + line if line else "" for line in lines]


def source(model: type[DeploymentSettings] = DeploymentSettings) -> str:
    """infra/keywords.py as the model makes it."""
    docs = field_docs(model)
    out = [HEADER]
    for name, info in model.model_fields.items():
        accepts = accepted(info)
        summary = f"Default ``{_literal(info.default)}``" + (f"; {accepts}" if accepts else "")
        documentation = docs.get(name, "").rstrip()
        if not documentation:
            raise ValueError(f"{model.__name__}.{name} has no documentation: write it under the field")
        if not documentation.endswith((".", ")")):
            documentation += "."
        text = f"{summary} (cdk.json: ``{context_key(name)}``). {documentation}"
        out.append("")
        out.append(f"    {name}: {type_expression(info)}")
        out += _docstring(text)
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.keywords", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when infra/keywords.py is stale")
    arguments = parser.parse_args(argv)
    written = source()
    if arguments.check:
        if TARGET.read_text() != written:
            print(f"{TARGET} is stale: run .venv/bin/python -m release.keywords", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(written)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
