"""Secrets in targets stay secret: header values that carry credentials are stored and sent but
never shown back (task, list, batch answer, dead letter), and a PATCH that sends back what a
read showed keeps them. Targets that can never be right (a cloud metadata endpoint as an IP
literal) are refused at registration."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.delivery.envelope import Envelope
from shared.delivery.http import HttpDelivery
from shared.domain.tasks import HttpTarget
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

SECRETS = {
    "Authorization": "Bearer s3cr3t-token",
    "X-Api-Key": "key-123",
    "Cookie": "session=abc",
    "X-Session-Token": "tok-456",
    "x-client-secret": "shh",
}
PLAIN = {"X-Team": "orders"}
REDACTED = "[redacted]"


def _http(url: str, headers: dict[str, str]) -> dict:
    return {"http": {"url": url, "headers": headers, "timeout_seconds": 1}}


def _shown(target: dict) -> dict[str, str]:
    return target["http"]["headers"]


def test_secret_headers_are_sent_but_never_shown(api, pipeline, receiver):
    url = receiver.script("/secret", 400)  # fails at once: a dead letter to read too
    body = {"schedule": {"after_seconds": 1.5}, "target": _http(url, {**SECRETS, **PLAIN}), "name": "secrets"}
    created = api("POST", "/v1/tasks", body)
    assert created.status == 201, created.body
    expected = {**dict.fromkeys(SECRETS, REDACTED), **PLAIN}
    assert _shown(created.body["target"]) == expected
    assert _shown(api("GET", f"/v1/tasks/{created.body['id']}").body["target"]) == expected

    def listed_redacted() -> None:
        listed = api("GET", "/v1/tasks?name_prefix=secrets").body["items"]
        assert [_shown(task["target"]) for task in listed] == [expected]

    eventually(listed_redacted)
    batch = api("POST", "/v1/tasks:batch", {"tasks": [{**body, "schedule": {"after_seconds": 600}}]})
    assert _shown(batch.body["items"][0]["task"]["target"]) == expected

    assert pipeline.fire(until=lambda: len(receiver.calls_to("/secret")) == 1, timeout=10)
    (call,) = receiver.calls_to("/secret")
    for name, value in {**SECRETS, **PLAIN}.items():
        assert call.headers[name] == value  # the receiver gets every value
    assert pipeline.fire(until=lambda: api("GET", "/v1/dead-letters").body["items"], timeout=10)
    (letter,) = api("GET", "/v1/dead-letters").body["items"]
    assert _shown(letter["target"]) == expected
    assert _shown(api("GET", f"/v1/dead-letters/{letter['id']}").body["target"]) == expected
    assert "s3cr3t" not in str(api("GET", f"/v1/tasks/{created.body['id']}").body)


def test_a_patch_sending_back_what_a_read_showed_keeps_the_secrets(api, pipeline, receiver):
    url = receiver.script("/kept", 200)
    body = {"schedule": {"after_seconds": 600}, "target": _http(url, {"Authorization": "Bearer one", **PLAIN})}
    task = api("POST", "/v1/tasks", body).body
    read = api("GET", f"/v1/tasks/{task['id']}").body
    shown = read["target"]
    shown["http"]["headers"]["X-Team"] = "billing"
    changed = api("PATCH", f"/v1/tasks/{task['id']}", {"target": shown, "schedule": {"after_seconds": 1.5}})
    assert changed.status == 200, changed.body
    assert _shown(changed.body["target"]) == {"Authorization": REDACTED, "X-Team": "billing"}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/kept")) == 1, timeout=10)
    (call,) = receiver.calls_to("/kept")
    assert call.headers["Authorization"] == "Bearer one"  # kept, not "[redacted]"
    assert call.headers["X-Team"] == "billing"


def test_a_patch_can_replace_a_secret_and_cannot_keep_one_that_is_not_there(api):
    body = {"schedule": {"after_seconds": 600}, "targets": [_http("https://example.com/a", {"X-Api-Key": "old"})]}
    task = api("POST", "/v1/tasks", body).body
    new = {"targets": [_http("https://example.com/a", {"X-Api-Key": "new"})]}
    assert api("PATCH", f"/v1/tasks/{task['id']}", new).status == 200
    missing = {"targets": [task["targets"][0], _http("https://example.com/b", {"Authorization": REDACTED})]}
    refused = api("PATCH", f"/v1/tasks/{task['id']}", missing)
    assert refused.status == 400, refused.body
    assert [d["field"] for d in refused.body["error"]["details"]] == ["targets[1].http.headers.Authorization"]


def test_a_job_processors_secret_headers_are_not_shown(api):
    job = {"processor": _http("https://example.com/process", {"Authorization": "Bearer job"}), "data": [[1]]}
    created = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 600}, "target": {"job": job}})
    assert created.status == 201, created.body
    assert created.body["target"]["job"]["processor"]["http"]["headers"] == {"Authorization": REDACTED}


@pytest.mark.parametrize(
    "host",
    [
        "169.254.169.254",
        "[fd00:ec2::254]",
        "169.254.170.2",
        "100.100.100.200",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "[::ffff:169.254.169.254]",
        "[64:ff9b::a9fe:a9fe]",
    ],
)
def test_a_metadata_endpoint_as_an_ip_literal_is_refused_at_registration(api, host):
    target = {"target": _http(f"http://{host}/latest/meta-data/", {})}
    answer = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, **target})
    assert answer.status == 400, answer.body
    (detail,) = answer.body["error"]["details"]
    assert detail["field"] == "target.http.url"
    assert "metadata" in detail["message"]
    job = {"processor": _http(f"http://{host}:80/p", {}), "data": [[1]]}
    refused = api("POST", "/v1/jobs", job)
    assert refused.status == 400
    assert refused.body["error"]["details"][0]["field"] == "processor.http.url"


UNICODE_METADATA = [
    "\uff11\uff16\uff19.\uff12\uff15\uff14.\uff11\uff16\uff19.\uff12\uff15\uff14",  # full-width digits
    "169\u3002254\u3002169\u3002254",  # ideographic full stops
    "169\uff0e254\uff0e169\uff0e254",  # full-width full stops
    "169\uff61254\uff61169\uff61254",  # half-width ideographic full stops
    "\u2460\u2465\u2468.\u2461\u2464\u2463.\u2460\u2465\u2468.\u2461\u2464\u2463",  # circled digits
    "\uff11\uff16\uff19\u3002\uff12\uff15\uff14\u3002\uff11\uff17\uff10\u3002\uff12",  # ECS, both
]


@pytest.mark.parametrize("host", UNICODE_METADATA)
def test_a_host_is_judged_as_sundials_http_client_reads_it(api, host):
    """The oracle is the client itself: the HTTP delivery, given the URL, reads its host as a
    metadata address and refuses the call (no resolver is asked: it is an address); registration
    must refuse what the client would read so, as it refuses every ASCII form of it."""

    asked: list[str] = []

    def resolver(name: str, port: int, type: int = 0) -> list:
        asked.append(name)
        raise OSError("no network in this test")

    envelope = Envelope("t", "r", datetime.now(UTC), datetime.now(UTC), 1, None)
    outcome = HttpDelivery(resolver=resolver).call(HttpTarget(f"http://{host}/latest/meta-data/"), envelope)
    assert outcome.final, outcome
    assert "a cloud metadata address" in (outcome.error or ""), outcome.error
    assert asked == []
    answer = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": _http(f"http://{host}/x", {})})
    assert answer.status == 400, answer.body
    (detail,) = answer.body["error"]["details"]
    assert detail["field"] == "target.http.url"
    assert "metadata" in detail["message"]


@pytest.mark.parametrize("port", ["0", "65536", "99999", "00000"])
def test_a_port_outside_1_to_65535_is_refused_at_registration(api, port):
    answer = api(
        "POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": _http(f"http://127.0.0.1:{port}/x", {})}
    )
    assert answer.status == 400, answer.body
    (detail,) = answer.body["error"]["details"]
    assert detail["field"] == "target.http.url"
    assert "a port is 1 to 65535" in detail["message"]
    for fine in ("1", "65535", "08080"):
        body = {"schedule": {"after_seconds": 60}, "target": _http(f"http://127.0.0.1:{fine}/x", {})}
        assert api("POST", "/v1/tasks", body).status == 201


def test_the_deployments_own_resources_are_refused_as_targets(api, monkeypatch):
    from tests.integration.conftest import use_settings

    use_settings(monkeypatch, own_prefix="Sundial-", account_id="123456789012")
    ours = "https://sqs.us-east-1.amazonaws.com/123456789012/Sundial-PipelineQueuesdelay0"
    answer = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": {"sqs": {"queue_url": ours}}})
    assert answer.status == 400, answer.body
    assert [d["field"] for d in answer.body["error"]["details"]] == ["target.sqs.queue_url"]
    batch = api(
        "POST",
        "/v1/tasks:batch",
        {
            "tasks": [
                {
                    "schedule": {"after_seconds": 60},
                    "targets": [{"http": {"url": "https://example.com/ok"}}, {"sqs": {"queue_url": ours}}],
                }
            ]
        },
    )
    assert batch.body["items"][0]["error"]["details"][0]["field"] == "targets[1].sqs.queue_url"
    task = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": {"http": {"url": "https://x.io"}}})
    patched = api("PATCH", f"/v1/tasks/{task.body['id']}", {"target": {"sqs": {"queue_url": ours}}})
    assert patched.status == 400
    assert patched.body["error"]["details"][0]["field"] == "target.sqs.queue_url"
    function = "arn:aws:lambda:us-east-1:123456789012:function:Sundial-JobsHandler"
    job = api("POST", "/v1/jobs", {"processor": {"lambda": {"function_arn": function}}, "data": [[1]]})
    assert job.status == 400
    assert job.body["error"]["details"][0]["field"] == "processor.lambda.function_arn"


def test_a_new_task_cannot_send_redacted_as_a_secret(api):
    """ "[redacted]" stands for a value Sundial keeps; a registration has none to keep, so it was
    stored and sent as the literal text (a task copied from a GET): refused, naming the header,
    in a registration and in a batch item alike (the other items stand)."""
    body = {"schedule": {"after_seconds": 60}, "target": _http("https://example.com/a", {"Authorization": REDACTED})}
    refused = api("POST", "/v1/tasks", body)
    assert refused.status == 400, refused.body
    assert [d["field"] for d in refused.body["error"]["details"]] == ["target.http.headers.Authorization"]
    multicast = {
        "schedule": {"after_seconds": 60},
        "targets": [
            _http("https://example.com/a", {"X-Team": REDACTED}),
            _http("https://example.com/b", {"X-Api-Key": REDACTED}),
        ],
    }
    refused = api("POST", "/v1/tasks", multicast)
    assert [d["field"] for d in refused.body["error"]["details"]] == ["targets[1].http.headers.X-Api-Key"]
    fine = {"schedule": {"after_seconds": 60}, "target": _http("https://example.com/a", {"Authorization": "Bearer x"})}
    batch = api("POST", "/v1/tasks:batch", {"tasks": [body, fine]})
    assert batch.status == 200, batch.body
    first, second = batch.body["items"]
    assert first["error"]["details"][0]["field"] == "target.http.headers.Authorization"
    assert "task" in second
