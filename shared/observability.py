"""The one place that builds Powertools' logger, tracer and metrics.

Every handler decorates in the same order: logger -> metrics -> tracer.
"""

import logging

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "sundial"
NAMESPACE = "Sundial"

logger = Logger(service=SERVICE)
logging.getLogger(SERVICE).propagate = False  # one line per record, even where a root handler exists
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
