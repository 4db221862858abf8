"""moto parses an UpdateItem's update expression twice (once to check the names and values it
uses, once to apply it) and its condition expression twice too (the same check, then the
condition itself), by hand-written tokenizers and parsers in Python: about a third of an
UpdateItem's time in moto after its serialization (`make bench ARGS="--ceiling"` under cProfile).
Sundial sends a handful of distinct expressions, thousands of times each.

Wherever moto runs for Sundial (the local runtime's moto process, the tests) a parse is
remembered: an update expression's tree by its text (moto only reads that tree: each application
validates and executes a deep copy of it, ``Validator.__init__``), a condition's tree by its text,
names and the names and types of its values, with the names and values it found, each request's
values put into a copy of it (a claim's values are new every time: kept by them, its condition
was parsed anew at every claim; a claim 2.52 → 2.18 ms of moto's CPU, `make bench ARGS="--costs
--tasks 200"`). A parse that fails is not remembered: the
same request fails the same way every time. An upstream fix (memoizing ``UpdateExpressionParser.make``
and ``ConditionExpressionParser.parse``) would be the better place."""

from __future__ import annotations

import copy
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
    """A condition's parse depends on its text, its names and which values it is given, not on
    what they are: moto's parser only wraps each value in an ``AttributeValue`` (``_make_operand``),
    so a parse is kept per shape (the values' names, and their types, though the parser reads
    neither) and each request's values are put into a copy of it (:func:`_with_values`). A
    claim's condition carries the run's id and due time, new every time: kept by its values,
    moto parsed it anew for every claim, 30 % of a claim's time in moto (py-spy)."""
    values = parser.expression_attribute_values or {}
    shape = tuple(sorted((name, _type_of(value)) for name, value in values.items()))
    return parser.condition_expression, json.dumps(parser.expression_attribute_names, sort_keys=True), shape


def _type_of(value: Any) -> str:
    """A value's type (``{"N": "5"}``: ``N``); one that is not a single-typed value is refused
    (``TypeError``), and parsed by moto each time, which says what is wrong with it."""
    if not isinstance(value, dict) or len(value) != 1:
        raise TypeError("not an attribute value")
    (kind,) = value
    return str(kind)


class _Placeholder(str):
    """Stands for a value in a parse kept by shape: the ``AttributeValue`` holding it is replaced
    by one of the request's value (:func:`_with_values`)."""

    __slots__ = ()


def _placeholders(values: dict[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {name: {_type_of(value): _Placeholder(name)} for name, value in values.items()}


def _holders(op: Any) -> list[tuple[Any, str]]:
    """The ``AttributeValue``s of a parse that hold a placeholder, and the value each stands for."""
    from moto.dynamodb.comparisons import AttributeValue

    found: list[tuple[Any, str]] = []
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, AttributeValue):
            if isinstance(node.value, _Placeholder):
                found.append((node, str(node.value)))
            return
        if isinstance(node, list | tuple):
            for child in node:
                walk(child)
        elif hasattr(node, "__dict__"):
            for child in vars(node).values():
                walk(child)

    walk(op)
    return found


def _with_values(op: Any, holders: list[tuple[Any, str]], values: dict[str, Any]) -> Any:
    """A copy of a parse kept by shape with each placeholder's ``AttributeValue`` replaced by one
    of ``values`` (as moto's parse of them would have built it)."""
    from moto.dynamodb.comparisons import AttributeValue

    memo = {id(holder): AttributeValue(values[name]) for holder, name in holders}
    return copy.deepcopy(op, memo)


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
            op = parse(self)  # with the request's own values: a parse that fails says so as moto would
            shaped = type(self)(
                self.condition_expression,
                self.expression_attribute_names,
                _placeholders(self.expression_attribute_values),
            )
            try:
                template = parse(shaped)
            except Exception:  # (never seen: the parse does not read the values) kept by none
                return op
            names, values = tuple(shaped.expr_attr_names_found), tuple(shaped.expr_attr_values_found)
            found = (template, _holders(template), names, values)
            conditions.put(key, found)
            return op
        template, holders, names, values = found
        self.expr_attr_names_found.extend(names)
        self.expr_attr_values_found.extend(values)
        return _with_values(template, holders, self.expression_attribute_values or {})

    functools.update_wrapper(remembered_make, make)
    functools.update_wrapper(remembered_parse, parse)
    remembered_parse._sundial_remembered = True  # type: ignore[attr-defined]
    UpdateExpressionParser.make = classmethod(remembered_make)
    ConditionExpressionParser.parse = remembered_parse  # type: ignore[method-assign]


def make_update_validation_cheap() -> None:
    """moto validates an UpdateItem's expression by walking its tree ten times, one walk per check
    (``UpdateExpressionValidator.get_ast_processors``), each asking every node
    ``isinstance(node, <a tuple of abstract classes>)``, which goes through ``ABCMeta`` (the nodes'
    metaclass) twice per node; the walk that counts the clauses lists the clauses below every
    node of the tree again; and the tree is deep-copied first through pickle's protocol
    (``__reduce_ex__``), an object at a time. A claim's tree has about 75 nodes: those were over
    half of moto's CPU for a claim (cProfile of claims on moto in one process; the claim 5.2 → 3.7 ms
    in all, client included).

    Each answer stays the same, only found faster: whether a walk processes a node, and by which
    of its functions, depends on the node's class alone, so it is looked up once per class and
    kind of walk (the classes never change: moto registers no virtual subclass), and only the
    kinds of walk that look at a child before walking it are asked to; the clauses below a node are listed
    by the same rule, with its class's answer looked up once; and a node copies itself as
    ``deepcopy`` would (its attributes deep-copied, the same memo), without pickle's protocol.
    tests/integration/test_moto_fidelity.py compares every answer with moto's own."""
    from moto.dynamodb.parsing.ast_nodes import (  # type: ignore[attr-defined]
        DepthFirstTraverser,
        Expression,
        Node,
        UpdateExpressionFunction,
    )

    if getattr(Node, "_sundial_cheap", False):
        return
    walks = _Walks(Node, DepthFirstTraverser.pre_processing_of_child, (Expression, UpdateExpressionFunction))

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        return walks.walk(self, node, child_id, *walks.of(self))

    def find_clauses(self: Any, clause_types: Any) -> list[Any]:
        return walks.clauses(self, clause_types)

    def node_deepcopy(self: Any, memo: dict[int, Any]) -> Any:
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        copied.__dict__.update({name: copy.deepcopy(value, memo) for name, value in self.__dict__.items()})
        return copied

    functools.update_wrapper(traverse_node_recursively, DepthFirstTraverser.traverse_node_recursively)
    functools.update_wrapper(find_clauses, Node.find_clauses)
    DepthFirstTraverser.traverse_node_recursively = traverse_node_recursively
    Node.find_clauses = find_clauses
    Node.__deepcopy__ = node_deepcopy
    Node._sundial_cheap = True


class _Walks:
    """What moto's walks of an update's tree ask of a node's class, each answer found once."""

    def __init__(self, node: type, looks_at_nothing: Any, descended: tuple[type, ...]) -> None:
        self._node, self._looks_at_nothing, self._descended = node, looks_at_nothing, descended
        self._is_node: dict[type, bool] = {}
        self._descends: dict[type, bool] = {}
        self._walks: dict[type, tuple[dict[type, Any], bool]] = {}
        """A walk's kind -> (the function key a node's class is processed by, None: none; whether
        the kind looks at a child before its walk, ``pre_processing_of_child``)."""

    def of(self, traverser: Any) -> tuple[dict[type, Any], bool]:
        kind = type(traverser)
        found = self._walks.get(kind)
        if found is None:
            found = self._walks[kind] = ({}, kind.pre_processing_of_child is not self._looks_at_nothing)
        return found

    def _a_node(self, kind: type) -> bool:
        found = self._is_node.get(kind)
        if found is None:
            found = self._is_node[kind] = issubclass(kind, self._node)
        return found

    def walk(self, traverser: Any, node: Any, child_id: int, keys: dict[type, Any], looks: bool) -> Any:
        """moto's ``traverse_node_recursively``: children first, then the node, replaced by what
        its processing answers."""
        kind = type(node)
        if not self._a_node(kind):
            return node
        parent_node = node.parent
        if node.children is not None:
            for i, child_node in enumerate(node.children):
                if looks:
                    traverser.pre_processing_of_child(node, i)
                self.walk(traverser, child_node, i, keys, looks)
        try:
            key = keys[kind]
        except KeyError:  # moto's rule (`process`): the first class of the map the node is an instance of
            key = keys[kind] = next((k for k in traverser._processing_map() if issubclass(kind, k)), None)
        if key is not None:
            node = traverser._processing_map()[key](node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    def clauses(self, node: Any, clause_types: Any) -> list[Any]:
        """moto's ``Node.find_clauses``: the clauses of these types below ``node``, not below a clause."""
        found = []
        for child in node.children or []:
            kind = type(child)
            if kind in clause_types:
                found.append(child)
                continue
            below = self._descends.get(kind)
            if below is None:
                below = self._descends[kind] = issubclass(kind, self._descended)
            if below:
                found.extend(child.find_clauses(clause_types))
        return found
