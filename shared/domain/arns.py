"""ARNs read and written: an SQS queue's ARN and its URL (the form SQS's API takes), and the
EventBridge Scheduler API's schedule and schedule group ARNs. Nothing here does I/O."""

from __future__ import annotations

SCHEDULE = "schedule"
SCHEDULE_GROUP = "schedule-group"


def queue_url(arn: str) -> str:
    """The URL of the SQS queue ``arn:aws:sqs:<region>:<account>:<name>``: the form SQS's API takes."""
    _, _, _, region, account, name = arn.split(":", 5)
    return f"https://sqs.{region}.amazonaws.com/{account}/{name}"


def queue_arn(url: str) -> str:
    """The ARN of the SQS queue at ``url`` (as :func:`queue_url` writes it)."""
    host, account, name = url.split("/")[2:5]
    return f"arn:aws:sqs:{host.split('.')[1]}:{account}:{name}"


def region_and_account(arn: str) -> tuple[str, str] | None:
    """The Region and account an ARN names (its fourth and fifth parts); None: not an ARN."""
    parts = arn.split(":")
    return (parts[3], parts[4]) if len(parts) >= 6 and parts[0] == "arn" else None


def schedule_arn(region: str, account: str, group: str, name: str) -> str:
    """``arn:aws:scheduler:<region>:<account>:schedule/<group>/<name>``."""
    return f"arn:aws:scheduler:{region}:{account}:{SCHEDULE}/{group}/{name}"


def schedule_group_arn(region: str, account: str, group: str) -> str:
    """``arn:aws:scheduler:<region>:<account>:schedule-group/<group>``."""
    return f"arn:aws:scheduler:{region}:{account}:{SCHEDULE_GROUP}/{group}"


def schedule_of_arn(arn: str) -> tuple[str, str]:
    """The group and name of the schedule ``arn`` (as :func:`schedule_arn` writes it)."""
    group, _, name = arn.partition(f":{SCHEDULE}/")[2].partition("/")
    return group, name
