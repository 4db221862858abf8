"""The one place that builds Powertools' logger, tracer and metrics.

Every handler decorates in the same order: logger -> metrics -> tracer.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "sundial"
NAMESPACE = "Sundial"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
