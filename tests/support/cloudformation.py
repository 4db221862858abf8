"""CloudFormation's custom resource requests as AWS documents them (tests/data/aws/cloudformation/,
its README says where each comes from), and the documented members of the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "aws" / "cloudformation"
REQUEST_TYPES = ("Create", "Update", "Delete")


def documented_request(request_type: str, **members: Any) -> dict[str, Any]:
    """The documented request of ``request_type`` (a fresh copy), ``members`` replacing its own
    (``None`` leaves a member out)."""
    request: dict[str, Any] = json.loads((DATA / f"custom-resource-{request_type.lower()}.json").read_text())
    for name, value in members.items():
        if value is None:
            request.pop(name, None)
        else:
            request[name] = value
    return request


def documented_response() -> dict[str, Any]:
    """The answer's documented members, required ones and bounds."""
    answer: dict[str, Any] = json.loads((DATA / "custom-resource-response.json").read_text())
    return answer


def check_response(body: dict[str, Any], raw: bytes) -> None:
    """An answer holds only documented members, every required one, a ``Reason`` when it failed, and
    fits the documented bounds."""
    documented = documented_response()
    assert set(body) <= set(documented["members"]), set(body) - set(documented["members"])
    assert set(documented["required"]) <= set(body)
    assert body["Status"] in documented["status"]
    if body["Status"] == "FAILED":
        assert body.get("Reason")
    assert isinstance(body["PhysicalResourceId"], str)
    assert body["PhysicalResourceId"]
    assert len(body["PhysicalResourceId"].encode()) <= documented["max_physical_resource_id_bytes"]
    assert len(raw) <= documented["max_body_bytes"]
