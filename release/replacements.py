"""What a ``cdk deploy`` of one template over another replaces, among the resources that hold state.

    .venv/bin/python -m release.replacements OLD.template.json NEW.template.json

A table, a queue or the state machine replaced is data lost: a new, empty table; a new queue
without the occurrences waiting in the old one; a new state machine without the running
executions. :func:`replacements` names every one such a deploy would make, by what CloudFormation
does:

* the logical ID is gone from the new template, or names another type: CloudFormation deletes the
  resource (and creates another, if any);
* a property it cannot update changed: CloudFormation replaces the resource. Which those are
  comes from the resource's schema in the CloudFormation registry, its ``createOnlyProperties``,
  as cfn-lint ships them (:func:`create_only_properties`), with the few the CloudFormation user
  guide documents as "Update requires: Replacement" that the schema leaves out
  (:data:`DOCUMENTED_REPLACEMENTS`).

The comparison is of the templates' JSON as written: a property that refers to another resource
whose logical ID changed compares different, and a property added with its default value counts as
changed. Both err on the side of naming a replacement. Exit status 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

STATEFUL = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::StepFunctions::StateMachine")
"""The resources whose replacement loses tasks: the tables, the queues, the state machine."""

DOCUMENTED_REPLACEMENTS = {
    # "AWS::DynamoDB::Table", CloudFormation Template Reference
    # (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-dynamodb-table.html):
    # KeySchema and LocalSecondaryIndexes, "Update requires: Replacement"; the registry's schema
    # lists neither among its createOnlyProperties.
    "AWS::DynamoDB::Table": ("/properties/KeySchema", "/properties/LocalSecondaryIndexes"),
}
SCHEMA_REGION = "us-east-1"
"""The region whose registry schemas are read (the properties that force a replacement are the
same in every region)."""


@dataclass(frozen=True, order=True)
class Replacement:
    logical_id: str
    type: str
    reason: str

    def __str__(self) -> str:
        return f"{self.logical_id} ({self.type}): {self.reason}"


@cache
def create_only_properties(resource_type: str) -> tuple[str, ...]:
    """The JSON pointers (``/properties/TableName``) of ``resource_type``'s properties a change to
    which replaces the resource: the registry schema's ``createOnlyProperties`` (cfn-lint's copy)
    and :data:`DOCUMENTED_REPLACEMENTS`."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # noqa: PLC0415  (seconds to import: only when asked)

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
    pointers = [*schema.get("createOnlyProperties", []), *DOCUMENTED_REPLACEMENTS.get(resource_type, ())]
    return tuple(dict.fromkeys(pointers))


def _at(value: Any, parts: Sequence[str]) -> Any:
    """What a pointer's ``parts`` (after ``/properties``) name in ``value``: ``*`` is every item
    of a list; None where the template has nothing."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if head == "*":
        return [_at(item, rest) for item in value] if isinstance(value, list) else None
    if isinstance(value, Mapping):
        return _at(value.get(head), rest)
    return None


def _changed(pointer: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    parts = pointer.split("/")[1:]
    if not parts or parts[0] != "properties":
        raise ValueError(f"not a property's pointer: {pointer}")
    return _at(old, parts[1:]) != _at(new, parts[1:])


def replacements(old: Mapping[str, Any], new: Mapping[str, Any], types: Iterable[str] = STATEFUL) -> list[Replacement]:
    """Every resource of ``types`` in the ``old`` template that deploying ``new`` over it deletes
    or replaces, and why."""
    wanted = set(types)
    old_resources = old.get("Resources", {})
    new_resources = new.get("Resources", {})
    found = []
    for logical_id, resource in old_resources.items():
        kind = resource.get("Type")
        if kind not in wanted:
            continue
        after = new_resources.get(logical_id)
        if after is None:
            found.append(Replacement(logical_id, kind, "gone from the new template: deleted"))
            continue
        if after.get("Type") != kind:
            found.append(Replacement(logical_id, kind, f"now a {after.get('Type')}: deleted and another made"))
            continue
        before_properties = resource.get("Properties", {})
        after_properties = after.get("Properties", {})
        for pointer in create_only_properties(kind):
            if _changed(pointer, before_properties, after_properties):
                found.append(Replacement(logical_id, kind, f"{pointer} changed: replaced"))
    return sorted(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.replacements", description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the deployed version's template")
    parser.add_argument("new", type=Path, help="the template deployed over it")
    arguments = parser.parse_args(argv)
    found = replacements(json.loads(arguments.old.read_text()), json.loads(arguments.new.read_text()))
    for replacement in found:
        print(replacement)
    if not found:
        print(f"no {', '.join(STATEFUL)} replaced")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
