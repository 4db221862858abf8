"""Settings every suite shares: fake AWS credentials, so nothing can ever reach a real account."""

import os

for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "Sundial",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "SUNDIAL_TABLE_NAME": "sundial-test",
}.items():
    os.environ[key] = value
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

# DynamoDB's conditional writes are atomic, moto's are not: make them so for every suite.
from local.moto_atomic import make_dynamodb_writes_atomic  # noqa: E402

make_dynamodb_writes_atomic()
