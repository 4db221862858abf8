"""Capacity arithmetic: the quotas of Lambda, SQS and DynamoDB that bound the settings sizing the
trigger, its event sources and the table, and what a claim costs. The CDK context's rules
(:meth:`shared.settings.context.DeploymentSettings.scaling_problems`) are written with these; the
functions never need them."""

from __future__ import annotations

from shared.topology import RECOVER_CONCURRENCY

MAX_TRIGGER_BATCH_SIZE = 1_000
"""The trigger runs a thread per message of its batch (functions/trigger/handler.py: each waits
for its own due time), and a Lambda environment allows 1,024 processes and threads. Lambda's own
bound (10,000) is further."""
FULL_VCPU_MB = 1_769
"""The memory at which a Lambda function has one full vCPU; its CPU is proportional below."""
CLAIM_CPU_MS = 7.0
"""The client CPU of one claim at a full vCPU (pynamodb + botocore: 5.5-8 ms measured by
``make bench ARGS="--ceiling"``, docs/design.md section 4)."""
CLAIM_WRITE_MS = 6.0
"""A claim's conditional write, the round trip inside the Region (an assumption, as in sim/)."""
CLAIMS_PAST_LEAD_MS = 1_000
"""How far past the lead a batch's claims may run: the last ones of a batch due at one moment are
then claimed up to a second late, the lateness `make simulate`'s settings search accepts (p99
under a second; sim/search.py rejects the same batches on paper)."""
MIN_PROVISIONED_POLLERS = 2
"""Provisioned mode of an SQS event source: at least 2 pollers, a minimum of at most 200 and a
maximum of at most 2,000 (Lambda's ProvisionedPollerConfig for SQS, as aws-cdk-lib checks it)."""
MAX_RESERVED_CONCURRENCY = 900
"""Lambda keeps 100 of an account's concurrency unreserved; the default quota is 1,000."""
MIN_EVENT_SOURCE_CONCURRENCY = 2
MAX_EVENT_SOURCE_CONCURRENCY = 1_000
"""An SQS event source's maximum concurrency (ScalingConfig.MaximumConcurrency): 2 to 1,000."""
ACCOUNT_CONCURRENCY = 1_000
"""Lambda's default quota of concurrent executions per account and Region ("Lambda quotas"); new
accounts may start lower, which AWS raises with use."""
OTHER_FUNCTIONS_CONCURRENCY = 100
"""What the account's pool must keep for the API, its authorizer, the tick and the job function
when every trigger lane and the scanners run at their maximum: Lambda itself keeps 100
unreserved ("Lambda function scaling", reserved concurrency), and the API at its default stage
throttle (500 requests a second of ~50 ms) needs about 25."""
MAX_MINIMUM_POLLERS = 200
MAX_MAXIMUM_POLLERS = 2_000
NEW_TABLE_WARM_READS = 12_000
NEW_TABLE_WARM_WRITES = 4_000
"""The warm throughput a new on-demand table starts with (read and write units per second);
a warm throughput below it asks for nothing."""


def claim_ms(memory_mb: int) -> float:
    """About how long one claim takes on a trigger of ``memory_mb``: its CPU at the trigger's share
    of a vCPU, and the write. A batch's claims go one at a time (``ClaimTurn``), so a second vCPU
    does not make them faster."""
    return CLAIM_CPU_MS * FULL_VCPU_MB / min(memory_mb, FULL_VCPU_MB) + CLAIM_WRITE_MS


def other_lanes_concurrency(high_priority_concurrency: int, scanner_max_concurrency: int) -> int:
    """What the account's pool gives at most to all but the delay queues' event sources: the
    high-priority lane, the scanners and the recovering trigger."""
    return high_priority_concurrency + scanner_max_concurrency + RECOVER_CONCURRENCY


def shared_lane_concurrency(account_concurrency: int, other_lanes: int, delay_queues: int) -> int:
    """Each delay queue's event source's share of the account's room (its quota less
    ``other_lanes`` and what the other functions keep), at most Lambda's 1,000."""
    room = account_concurrency - OTHER_FUNCTIONS_CONCURRENCY - other_lanes
    return min(MAX_EVENT_SOURCE_CONCURRENCY, room // delay_queues)
