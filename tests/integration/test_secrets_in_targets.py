"""Secrets in targets stay secret: header values that carry credentials are stored and sent but
never shown back (task, list, batch answer, dead letter), and a PATCH that sends back what a
read showed keeps them. Targets that can never be right (a cloud metadata endpoint as an IP
literal) are refused at registration."""

from __future__ import annotations

import pytest

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
