"""The one place that builds Powertools' logger, tracer and metrics, and names the metrics.

Every handler decorates in the same order: logger -> metrics -> tracer. The trigger publishes
the metrics named here and infra/monitoring.py alarms on and charts the same names.
"""

import logging

from aws_lambda_powertools import Logger, Metrics, Tracer

from shared.domain.claims import Result

SERVICE = "sundial"
NAMESPACE = "Sundial"

logger = Logger(service=SERVICE)
logging.getLogger(SERVICE).propagate = False  # one line per record, even where a root handler exists
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

LATENESS_METRIC = "LatenessMs"
"""Milliseconds from an occurrence's due time to its first attempt's fire."""
CANARY_LATENESS_METRIC = "CanaryLatenessMs"
"""Milliseconds from the canary's due time to its fire, as its target saw them (functions/canary)."""


def runs_metric(result: Result) -> str:
    """The count of occurrences that ended a delivery with ``result``."""
    return f"Runs_{result.value}"
