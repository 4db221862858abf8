"""The API's strict integers (a tenant's limits, a rotation's grace) take what JSON Schema calls an
integer, ``5.0`` included, and nothing else: not ``5.5``, ``"5"`` or ``false``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.api.models.signing import SigningRotateIn
from shared.api.models.tenants import LimitsIn

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("given", "read"), [(5, 5), (5.0, 5), (1e2, 100)])
def test_an_integral_number_is_an_integer(given: object, read: int) -> None:
    assert LimitsIn.model_validate({"burst": given}).burst == read
    assert type(LimitsIn.model_validate({"burst": given}).burst) is int
    assert SigningRotateIn.model_validate({"previous_expires_in_seconds": given}).previous_expires_in_seconds == read


@pytest.mark.parametrize("field", ["requests_per_second", "burst", "max_tasks"])
@pytest.mark.parametrize("given", [5.5, "5", False, True, 0.0])
def test_a_limit_is_a_whole_number_only(field: str, given: object) -> None:
    with pytest.raises(ValidationError):
        LimitsIn.model_validate({field: given})


@pytest.mark.parametrize("given", [5.5, "5", False, True, None, -1.0])
def test_a_rotation_takes_whole_seconds_only(given: object) -> None:
    with pytest.raises(ValidationError):
        SigningRotateIn.model_validate({"previous_expires_in_seconds": given})
