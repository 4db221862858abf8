"""`python -m local.moto_host.process -H 127.0.0.1 -p PORT`: moto_server with atomic DynamoDB writes,
prompt SQS long polling, and where moto was needlessly slow: its backend lookup remembered per
host, Queries that read one partition, transactions that copy only their items, sends and
receives that do not count the queue per message (nor read its clock through datetimes, nor
build every attribute for one, nor draw a receipt handle letter by letter), index Queries that lag behind writes when
asked to (local.settings.INDEX_LAG_ENV, as a GSI does on AWS), DynamoDB answers serialized without moto's
generic walk, expressions parsed once, botocore's data files parsed once (local/botocore_loader.py),
and its garbage collected in steps (no full collection
but one every ten minutes); and, when the runtime gives it a URL to forward Lambda invocations
to (local/functions.py), Step Functions executing state machines with their Lambda tasks; and,
when the runtime gives it a data folder (local.settings.MOTO_DATA_ENV), its state loaded from
there and kept there (local/moto_host/persist.py), every answered write journaled between two
snapshots (local/moto_host/journal.py); and, when asked to (local.settings.MOTO_CLOCK_ENV),
its SQS on the time the runtime sets (local/moto_patches/clock.py)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from local.botocore_loader import share_data_loader
from local.moto_patches.resources import keep_resources, make_resources_kept

# Before moto's modules: importing them makes botocore sessions (EC2's regions, which Parameter
# Store's models import, make three), each parsing botocore's endpoint files anew, 0.35 s of a start.
share_data_loader()
make_resources_kept()  # before moto's service modules, which read their resource files as they import

from local.functions import install_forwarding  # noqa: E402
from local.moto_host.front import make_dynamodb_direct, serve  # noqa: E402
from local.moto_host.gc import collect_in_steps  # noqa: E402
from local.moto_host.persist import persist  # noqa: E402
from local.moto_patches.atomic import make_dynamodb_writes_atomic  # noqa: E402
from local.moto_patches.clock import make_sqs_follow_clock  # noqa: E402
from local.moto_patches.dispatch import make_actions_remembered, make_dispatch_cached  # noqa: E402
from local.moto_patches.expressions import make_expressions_remembered, make_update_validation_cheap  # noqa: E402
from local.moto_patches.index_lag import make_index_queries_lag  # noqa: E402
from local.moto_patches.kms import make_symmetric_keys_cheap  # noqa: E402
from local.moto_patches.numbers import make_numbers_checked  # noqa: E402
from local.moto_patches.query import make_query_partitioned  # noqa: E402
from local.moto_patches.read_lag import make_reads_lag  # noqa: E402
from local.moto_patches.serialize import make_json_serialization_direct  # noqa: E402
from local.moto_patches.sqs import (  # noqa: E402
    make_batch_keep_trace_headers,
    make_clock_cheap,
    make_long_polling_prompt,
    make_named_attributes_cheap,
    make_pending_groups_safe,
    make_queue_attributes_named_once,
    make_queue_changes_serial,
    make_receipt_handles_cheap,
    make_receive_linear,
    make_send_linear,
    make_sends_throttleable,
)
from local.moto_patches.transact import make_transactions_copy_items  # noqa: E402
from local.moto_server import AWAIT_ARGUMENT  # noqa: E402
from local.settings import (  # noqa: E402
    FUNCTIONS_URL_ENV,
    MOTO_CLOCK_ENV,
    MOTO_DATA_ENV,
    MOTO_FRONT_ENV,
    MOTO_SNAPSHOT_PERIOD_ENV,
    SNAPSHOT_PERIOD_S,
    WERKZEUG_FRONT,
)

PRELOADED = (
    "moto.dynamodb.models",
    "moto.sqs.models",
    "moto.ssm.models",
    "moto.iam.models",
    "moto.s3.models",
    "moto.kms.models",
    "moto.stepfunctions.models",
    "moto.stepfunctions.parser.models",
    "moto.awslambda.models",
    "moto.awslambda_simple.models",
)
"""The models of the services the runtime uses (a kept state's load imports them, and moto's first
request of each): imported by a process started early (``local.moto_server.EarlyMoto``) while it
waits for its configuration."""


def await_configuration() -> None:
    """A process started early: import the services' models while the runtime starts, then take the
    arguments and the environment it sends (one JSON line on standard input; none: exit)."""
    import importlib
    import json

    for module in PRELOADED:
        importlib.import_module(module)
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)  # the runtime stopped before it configured this process
    configuration = json.loads(line)
    sys.argv[1:] = configuration["argv"]
    os.environ.clear()
    os.environ.update(configuration["env"])
    if not configuration["shown"]:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    if sys.argv[1:] == [AWAIT_ARGUMENT]:
        await_configuration()
    make_dispatch_cached()
    make_actions_remembered()
    make_dynamodb_writes_atomic()
    make_query_partitioned()
    make_index_queries_lag()
    make_reads_lag()
    make_numbers_checked()
    make_json_serialization_direct()
    make_expressions_remembered()
    make_update_validation_cheap()
    make_transactions_copy_items()
    make_long_polling_prompt()
    make_receive_linear()
    make_send_linear()
    make_sends_throttleable()
    make_batch_keep_trace_headers()
    make_pending_groups_safe()
    make_queue_changes_serial()
    make_named_attributes_cheap()
    make_queue_attributes_named_once()
    make_receipt_handles_cheap()
    make_clock_cheap()  # before the virtual clock's, which replaces it
    make_symmetric_keys_cheap()
    if os.environ.get(MOTO_CLOCK_ENV):
        make_sqs_follow_clock()
    if os.environ.get(FUNCTIONS_URL_ENV):
        install_forwarding(os.environ[FUNCTIONS_URL_ENV])
    if os.environ.get(MOTO_DATA_ENV):
        persist(Path(os.environ[MOTO_DATA_ENV]), float(os.environ.get(MOTO_SNAPSHOT_PERIOD_ENV) or SNAPSHOT_PERIOD_S))
    keep_resources()  # the resource files moto parsed as it imported (and loaded), for the next start
    collect_in_steps()
    if os.environ.get(MOTO_FRONT_ENV) == WERKZEUG_FRONT:
        from moto.server import main

        # werkzeug logs a line per request (to /dev/null here): about a twentieth of moto's busy time
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        main(sys.argv[1:])
    else:
        make_dynamodb_direct()
        options = argparse.ArgumentParser()
        options.add_argument("-H", "--host", default="127.0.0.1")
        options.add_argument("-p", "--port", type=int, default=5000)
        arguments = options.parse_args()
        serve(arguments.host, arguments.port)
