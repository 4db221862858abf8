"""The pipeline's queues on moto, created from their definitions (shared/topology.py): the
local runtime's and the integration tests' queues are the stack's, by construction."""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from shared.topology import QueueSpec

QUEUE_PREFIX = "sundial-"


def create_queues(sqs: Any, specs: Iterable[QueueSpec], workers: int = 4) -> tuple[dict[str, str], dict[str, str]]:
    """Create every queue of ``specs``; returns (url, arn) by the spec's name. A queue is created
    after the one it redrives to (its policy names that one's ARN), the others at once on
    ``workers`` threads: one by one, a start's fourteen requests were 0.16 s of it."""
    urls: dict[str, str] = {}
    arns: dict[str, str] = {}

    def create(spec: QueueSpec) -> tuple[str, str, str]:
        attributes = {
            "VisibilityTimeout": str(spec.visibility_timeout_s),
            "MessageRetentionPeriod": str(spec.retention_s),
        }
        if spec.dead_letter:
            policy = {"deadLetterTargetArn": arns[spec.dead_letter], "maxReceiveCount": str(spec.max_receive_count)}
            attributes["RedrivePolicy"] = json.dumps(policy)
        url = sqs.create_queue(QueueName=f"{QUEUE_PREFIX}{spec.name}", Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return spec.name, url, arn

    waiting = list(specs)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="queues") as pool:
        while waiting:
            ready = [spec for spec in waiting if spec.dead_letter is None or spec.dead_letter in arns]
            if not ready:
                raise ValueError(f"queues redrive to queues not defined: {[spec.name for spec in waiting]}")
            for name, url, arn in pool.map(create, ready):
                urls[name], arns[name] = url, arn
            waiting = [spec for spec in waiting if spec.name not in arns]
    return urls, arns
