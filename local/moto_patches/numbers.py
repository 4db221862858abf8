"""moto stores a Number attribute whatever its text; DynamoDB refuses one that is not a number.
Numbers travel as strings ("Supported data types and naming rules in Amazon DynamoDB": "Numbers
are sent across the network to DynamoDB as strings"), and a string that does not parse (``"null"``,
``"NaN"``, ``""``) is a ``ValidationException`` ("The parameter cannot be converted to a numeric
value: null"; dynalite's validation tests, which were written against DynamoDB, record that answer
for keys, items and expression values). On moto the write went through and stored the text, a
value that then compared as nothing, so a write that fails on AWS passed here.

:func:`make_numbers_checked` makes moto refuse it as DynamoDB does. Left out: DynamoDB's 38 digits
of precision and its range (1E-130 to 9.9999999999999999999999999999999999999E+125)."""

from __future__ import annotations

import functools
from decimal import Decimal, InvalidOperation
from typing import Any


def _checked(text: Any) -> None:
    try:
        number = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        number = None
    if number is None or not number.is_finite():
        from moto.dynamodb.exceptions import MockValidationException

        raise MockValidationException(f"The parameter cannot be converted to a numeric value: {text}")


def make_numbers_checked() -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    original = DynamoType.__init__
    if getattr(original, "_sundial_checked", False):
        return

    def __init__(self: Any, type_as_dict: Any) -> None:
        original(self, type_as_dict)
        if self.type == "N":
            _checked(self.value)
        elif self.type == "NS":
            for text in self.value:
                _checked(text)

    functools.update_wrapper(__init__, original)
    __init__._sundial_checked = True  # type: ignore[attr-defined]
    DynamoType.__init__ = __init__  # type: ignore[method-assign]
