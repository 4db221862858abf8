"""A job's result kept in the jobs bucket is answered as a presigned link, signed when the job is
read: every read (GET /v1/jobs/{id}, the jobs list) signs a new one, whose hour counts from that
read, never a link stored with the job. It is signed with Signature Version 4: botocore presigns
S3 with Signature Version 2 unless told otherwise, in the Regions that once took it, and a bucket
created after June 24, 2020 refuses Signature Version 2 ("Amazon S3 Update - SigV2 Deprecation
Period Extended & Modified", AWS News Blog,
https://aws.amazon.com/blogs/aws/amazon-s3-update-sigv2-deprecation-period-extended-modified/):
the stack's bucket is one.

Signed with the API function's role, the link carries that role's session token and dies with
those temporary credentials, possibly before its hour (a URL presigned with temporary credentials
expires when they do, even when it was made to last longer: "Sharing objects with presigned URLs",
Amazon S3 user guide, https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html).
docs/api.md and the job's ``result_url`` description say so. Presigning is botocore's work on this machine: no
call is made."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from shared.domain.jobs import RESULT_LINK_SECONDS, JobStatus, JobView
from shared.services.jobs import JobService
from shared.store.jobs import S3Blobs

pytestmark = pytest.mark.unit

RESULT_KEY = "jobs/job-1/result.json"


class Records:
    """The one job, succeeded, its result in the bucket (what the job's item holds: the key)."""

    def __init__(self) -> None:
        self.reads = 0

    def view(self, tenant: str, job_id: str) -> JobView | None:
        self.reads += 1
        return JobView(
            job_id, None, JobStatus.SUCCEEDED, 1, 1, 0, None, None, 0, 1, result_ref=RESULT_KEY, result_bytes=500_000
        )


@pytest.fixture(autouse=True)
def lambda_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What a Lambda function's environment gives it: its Region, and its role's temporary
    credentials, a session token with them ("Using Lambda environment variables", reserved
    variables). The S3 client is the jobs store's own, built for them."""
    from shared.store import jobs

    for name, value in {
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "ASIAEXAMPLEEXAMPLE00",
        "AWS_SECRET_ACCESS_KEY": "example-secret",
        "AWS_SESSION_TOKEN": "example-session-token",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    # boto3's default session keeps the credentials it first found: a new one reads these (a test
    # before this one in the same process made it with the suites' own)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    jobs._s3.cache_clear()
    yield
    jobs._s3.cache_clear()


def _query(url: str) -> dict[str, str]:
    return {name: values[-1] for name, values in parse_qs(urlsplit(url).query).items()}


def test_each_read_of_the_job_signs_a_new_link_for_an_hour_from_that_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth

    now = [datetime(2026, 11, 26, 10, 0, 0, tzinfo=UTC)]
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: now[0])
    records = Records()
    service = JobService(records, S3Blobs("sundial-jobs"), None, lambda: 0, str)  # type: ignore[arg-type]

    first = service.get("acme", "job-1").result_url
    now[0] += timedelta(minutes=50)
    second = service.get("acme", "job-1").result_url

    assert first is not None
    assert second is not None
    assert first != second
    assert records.reads == 2  # nothing kept between the reads: each signs its own
    for url, signed in ((first, "20261126T100000Z"), (second, "20261126T105000Z")):
        assert urlsplit(url).path.endswith(RESULT_KEY)
        query = _query(url)
        assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"  # Signature Version 4
        assert query["X-Amz-Credential"].endswith("/eu-west-1/s3/aws4_request")
        assert (query["X-Amz-Date"], query["X-Amz-Expires"]) == (signed, str(RESULT_LINK_SECONDS))
        # the role's session: the link lives no longer than these credentials
        assert query["X-Amz-Security-Token"] == "example-session-token"
        assert query["X-Amz-Credential"].startswith("ASIAEXAMPLEEXAMPLE00/")


def test_the_jobs_list_signs_its_links_at_the_read_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth

    from shared.domain.jobs import JobPage

    now = [datetime(2026, 11, 26, 10, 0, 0, tzinfo=UTC)]
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: now[0])

    class Listed(Records):
        def views(self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None) -> JobPage:
            view = self.view(tenant, "job-1")
            assert view is not None
            return JobPage([view], None)

    service = JobService(Listed(), S3Blobs("sundial-jobs"), None, lambda: 0, str)  # type: ignore[arg-type]
    [first] = service.list("acme", 10, None).items
    now[0] += timedelta(seconds=1)
    [second] = service.list("acme", 10, None).items
    assert first.result_url != second.result_url
    assert second.result_url is not None
    assert _query(second.result_url)["X-Amz-Date"] == "20261126T100001Z"
