"""moto parses an UpdateItem's update expression twice (once to check the names and values it
uses, once to apply it) and its condition expression twice too (the same check, then the
condition itself), by hand-written tokenizers and parsers in Python: about a third of an
UpdateItem's time in moto after its serialization (`make bench ARGS="--ceiling"` under cProfile).
Sundial sends a handful of distinct expressions, thousands of times each.

Wherever moto runs for Sundial (the local runtime's moto process, the tests) a parse is
remembered: an update expression's tree by its text (moto only reads that tree: each application
validates and executes a deep copy of it, ``Validator.__init__``), a condition's tree by its text,
names and values, with the names and values it found. A parse that fails is not remembered: the
same request fails the same way every time. An upstream fix (memoizing ``UpdateExpressionParser.make``
and ``ConditionExpressionParser.parse``) would be the better place."""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from typing import Any

MAX_REMEMBERED = 1024
"""Distinct parses kept (least recently used dropped first): Sundial sends a few dozen."""


class _Remembered:
    """A bounded, thread-safe map of parses."""

    def __init__(self) -> None:
        self._parses: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            found = self._parses.get(key)
            if found is not None:
                self._parses.move_to_end(key)
            return found

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._parses[key] = value
            while len(self._parses) > MAX_REMEMBERED:
                self._parses.popitem(last=False)


def _condition_key(parser: Any) -> Any:
    return (
        parser.condition_expression,
        json.dumps(parser.expression_attribute_names, sort_keys=True),
        json.dumps(parser.expression_attribute_values, sort_keys=True),
    )


def make_expressions_remembered() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    if getattr(ConditionExpressionParser.parse, "_sundial_remembered", False):
        return
    make = UpdateExpressionParser.make.__func__
    parse = ConditionExpressionParser.parse
    updates, conditions = _Remembered(), _Remembered()

    def remembered_make(cls: Any, expression: str) -> Any:
        tree = updates.get(expression)
        if tree is None:
            tree = make(cls, expression)
            updates.put(expression, tree)
        return tree

    def remembered_parse(self: Any) -> Any:
        try:
            key = _condition_key(self)
        except (TypeError, ValueError):  # names or values moto will refuse: its own parse says how
            return parse(self)
        found = conditions.get(key)
        if found is None:
            op = parse(self)
            found = (op, tuple(self.expr_attr_names_found), tuple(self.expr_attr_values_found))
            conditions.put(key, found)
            return op
        op, names, values = found
        self.expr_attr_names_found.extend(names)
        self.expr_attr_values_found.extend(values)
        return op

    functools.update_wrapper(remembered_make, make)
    functools.update_wrapper(remembered_parse, parse)
    remembered_parse._sundial_remembered = True  # type: ignore[attr-defined]
    UpdateExpressionParser.make = classmethod(remembered_make)
    ConditionExpressionParser.parse = remembered_parse  # type: ignore[method-assign]
