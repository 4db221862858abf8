"""The pipeline's queues on moto, created from their definitions (shared/topology.py): the
local runtime's and the integration tests' queues are the stack's, by construction."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from shared.topology import QueueSpec

QUEUE_PREFIX = "sundial-"


def create_queues(sqs: Any, specs: Iterable[QueueSpec]) -> tuple[dict[str, str], dict[str, str]]:
    """Create every queue of ``specs`` (a queue after the one it redrives to, as
    ``topology.queues`` lists them); returns (url, arn) by the spec's name."""
    urls: dict[str, str] = {}
    arns: dict[str, str] = {}
    for spec in specs:
        attributes = {
            "VisibilityTimeout": str(spec.visibility_timeout_s),
            "MessageRetentionPeriod": str(spec.retention_s),
        }
        if spec.dead_letter:
            policy = {"deadLetterTargetArn": arns[spec.dead_letter], "maxReceiveCount": str(spec.max_receive_count)}
            attributes["RedrivePolicy"] = json.dumps(policy)
        urls[spec.name] = sqs.create_queue(QueueName=f"{QUEUE_PREFIX}{spec.name}", Attributes=attributes)["QueueUrl"]
        answer = sqs.get_queue_attributes(QueueUrl=urls[spec.name], AttributeNames=["QueueArn"])
        arns[spec.name] = answer["Attributes"]["QueueArn"]
    return urls, arns
