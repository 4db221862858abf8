"""Settings every suite shares: fake AWS credentials, so nothing can ever reach a real account."""

import os

from shared.settings import env_name

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
    env_name("table_name"): "sundial-test",
}.items():
    os.environ[key] = value
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

# Where moto differs from AWS in ways Sundial relies on (atomic conditional writes, prompt long
# polling), make it behave like AWS for every suite.
from local.moto_atomic import make_dynamodb_writes_atomic  # noqa: E402
from local.moto_sqs import make_long_polling_prompt  # noqa: E402

make_dynamodb_writes_atomic()
make_long_polling_prompt()


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    from tests.support.lateness import LATENESS_MS

    if LATENESS_MS:
        ordered = sorted(LATENESS_MS)
        p50, p99 = ordered[len(ordered) // 2][0], ordered[min(len(ordered) - 1, round(len(ordered) * 0.99))][0]
        worst, test = ordered[-1]
        terminalreporter.write_line(
            f"pipeline lateness over {len(ordered)} on-time fires: p50 {p50} ms, p99 {p99} ms, max {worst} ms ({test})"
        )
