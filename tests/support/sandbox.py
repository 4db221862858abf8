"""Lambda functions as the stack ships them, each in a clean interpreter of its own.

:class:`Sandbox` starts ``python -I -S -B tests/support/lambda_bootstrap.py`` (no site-packages,
no environment variables of this process, no current directory on ``sys.path``, no bytecode
written: Lambda's ``/var/task`` and ``/opt`` are read-only) with only the
function's code directory and a dependency layer on ``sys.path``, as Lambda puts ``/var/task``
and ``/opt/python``; the environment is the one given, plus what Lambda sets itself. The process
stays up between invocations, as a warm execution environment.

:func:`provision` creates, on a moto server, the resources the functions' environment names
(the table, the queues, the KMS key, the admin key's hash, the jobs bucket and state machine),
in a subprocess of this (development) interpreter so that this process's AWS clients and
environment stay untouched.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local.moto_server import FAKE_ENV

SCANNER_FUNCTION = "sundial-sandbox-scanner"
RECOVER_FUNCTION = "sundial-sandbox-recover"
JOB_FUNCTION = "sundial-sandbox-jobs"
"""The job function's name in the API's settings: it invokes it for a notify a report crossed."""
"""The scanner's name in the functions' settings: the tick invokes it through moto's Lambda."""

BOOTSTRAP = Path(__file__).with_name("lambda_bootstrap.py")


class InvocationFailed(AssertionError):
    pass


@dataclass
class Outcome:
    result: Any = None
    error: dict[str, str] | None = None
    foreign: list[str] = field(default_factory=list)


@dataclass
class Sandbox:
    """One function: its handler (``module.attribute``) from ``code`` with ``layer``'s
    ``python/`` directory, in a clean interpreter with exactly ``environment`` (and Lambda's own
    variables)."""

    name: str
    handler: str
    code: Path
    layer: Path
    environment: dict[str, str]
    timeout_s: float = 60
    function_timeout_ms: int = 30_000
    """The function's timeout, which its context counts down from."""
    _process: subprocess.Popen[str] | None = None
    _answers: queue.Queue[str | None] = field(default_factory=queue.Queue)
    stderr: list[str] = field(default_factory=list)

    def start(self) -> None:
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TZ": ":UTC",
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "AWS_EXECUTION_ENV": "AWS_Lambda_sandbox",
            "LAMBDA_TASK_ROOT": str(self.code),
            "_HANDLER": self.handler,
            **self.environment,
        }
        self._process = subprocess.Popen(
            # -B: no bytecode written, as on Lambda's read-only /var/task and /opt
            [
                sys.executable,
                *("-I", "-S", "-B"),
                *(str(BOOTSTRAP), str(self.code), str(self.layer), self.handler, str(self.function_timeout_ms)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self.code,
        )
        threading.Thread(target=self._read, args=(self._process.stdout, self._answers.put), daemon=True).start()
        threading.Thread(target=self._read, args=(self._process.stderr, self.stderr.append), daemon=True).start()

    @staticmethod
    def _read(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line)
        sink(None)

    def invoke(self, event: Any) -> Outcome:
        """The handler's answer to ``event`` (an :class:`Outcome` with ``error`` when it raised)."""
        if self._process is None:
            self.start()
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(event) + "\n")
        self._process.stdin.flush()
        try:
            line = self._answers.get(timeout=self.timeout_s)
        except queue.Empty:
            raise InvocationFailed(f"{self.name}: no answer within {self.timeout_s} s\n{self.log()}") from None
        if line is None:
            raise InvocationFailed(f"{self.name}: the process ended without answering\n{self.log()}")
        answer = json.loads(line)
        return Outcome(answer.get("result"), answer.get("error"), answer.get("foreign", []))

    def succeed(self, event: Any) -> Any:
        """The handler's result; an :class:`InvocationFailed` with its traceback if it raised, or
        if anything it loaded came from outside the code, the layer and the standard library."""
        outcome = self.invoke(event)
        if outcome.error is not None:
            raise InvocationFailed(f"{self.name} ({self.handler}) raised:\n{outcome.error['trace']}\n{self.log()}")
        if outcome.foreign:
            raise InvocationFailed(f"{self.name} loaded modules from outside its package: {outcome.foreign}")
        return outcome.result

    def log(self) -> str:
        return "".join(line for line in self.stderr[-60:] if line)

    def stop(self) -> None:
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def provision(endpoint: str, admin_key: str) -> dict[str, str]:
    """Create the functions' resources on the moto server at ``endpoint``; the functions'
    environment variables naming them (``shared.settings.environment.Settings.to_env``; the admin key is its
    hash in the table, as ``sundial admin-key create`` leaves a deployed stack's)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        **FAKE_ENV,
        "AWS_ENDPOINT_URL": endpoint,
    }
    answer = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.support.sandbox", admin_key],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if answer.returncode != 0:
        raise RuntimeError(f"provisioning moto failed:\n{answer.stdout}{answer.stderr}")
    provisioned: dict[str, str] = json.loads(answer.stdout.strip().splitlines()[-1])
    return provisioned


def _provision_here(admin_key: str) -> dict[str, str]:
    """The resources, created by this process's clients (AWS_ENDPOINT_URL points at moto)."""
    import boto3

    from local.queues import create_queues
    from local.stepfunctions import ACCOUNT, ROLE_ARN
    from shared.domain.tenants import key_hash
    from shared.settings.environment import Settings
    from shared.store.admin_key import AdminKeyStore
    from shared.store.dynamo import ensure_table
    from shared.store.idempotency import ensure_idempotency_table
    from shared.store.signing_parameter import root_parameter_name
    from shared.topology import HIGH_PRIORITY_QUEUE, STRANDED, queues

    urls, _ = create_queues(boto3.client("sqs"), queues(1))
    bucket = "sundial-jobs-sandbox"
    boto3.client("s3").create_bucket(Bucket=bucket)
    done = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    machine = boto3.client("stepfunctions").create_state_machine(
        name="sundial-jobs-sandbox", definition=json.dumps(done), roleArn=ROLE_ARN
    )["stateMachineArn"]
    settings = Settings().with_resources(  # names of their own: to_env leaves out a default one
        table_name="sundial-sandbox",
        idempotency_table="sundial-sandbox-idempotency",
        delay_queue_urls=(urls["delay-0"],),
        high_priority_queue_url=urls[HIGH_PRIORITY_QUEUE],
        dead_letter_queue_url=urls["dead-letters"],
        scanner_function=SCANNER_FUNCTION,
        stranded_queue_url=urls[STRANDED.name],
        recover_function=RECOVER_FUNCTION,
        jobs_bucket=bucket,
        job_state_machine_arn=machine,
        job_function=JOB_FUNCTION,
        account_id=ACCOUNT,
        signing_root_parameter=root_parameter_name("sundial-sandbox"),
    )
    ensure_table(settings.table_name)
    ensure_idempotency_table(settings.idempotency_table)
    # the admin key as `sundial admin-key create` leaves it: its hash in the table
    AdminKeyStore(boto3.client("dynamodb"), settings.table_name).create(key_hash(admin_key))
    return settings.to_env()


if __name__ == "__main__":
    print(json.dumps(_provision_here(sys.argv[1])))
