"""The signing key modes (``sundial:signingKey``; docs/tenancy.md, section 4) against moto: the
parameter mode's root key (made once, whoever races to make it, read again by a fresh process),
its derived values checked against a reimplementation with the standard library, and what a
deployment that switches modes sees."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
import threading
import time
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from shared.domain.errors import StorageUnavailable
from shared.domain.signing import Signer, secret_key
from tests.integration.conftest import SIGNING_ROOT_PARAMETER

pytestmark = pytest.mark.integration

TENANT = "acme"
HOUR_MS = 3_600_000


def reference_value(root: bytes, tenant: str, secret_id: str) -> str:
    """docs/tenancy.md, section 4, written again with struct and hmac: ``whsec_`` + base64 of
    HMAC-SHA256(root, the label, the tenant, the secret id), each field its 4-byte big-endian
    length then its UTF-8 bytes."""
    message = b"".join(
        struct.pack(">I", len(raw)) + raw
        for raw in (b"sundial signing secret v1", tenant.encode("utf-8"), secret_id.encode("utf-8"))
    )
    return "whsec_" + base64.b64encode(hmac.new(root, message, hashlib.sha256).digest()).decode("ascii")


def stored_root() -> bytes:
    """The root key as Parameter Store holds it (read as an operator would)."""
    parameter = boto3.client("ssm").get_parameter(Name=SIGNING_ROOT_PARAMETER, WithDecryption=True)["Parameter"]
    return base64.b64decode(parameter["Value"], validate=True)


def fresh_store(mode: str = "parameter", key_arn: str = "") -> Any:
    """A new process's DynamoSigningSecrets in ``mode`` (nothing cached: a cold start)."""
    from shared.store.signing import DynamoSigningSecrets
    from shared.store.signing_kms import KmsSecretValues
    from shared.store.signing_parameter import ParameterSecretValues, SigningRoot

    if mode == "kms":
        return DynamoSigningSecrets(KmsSecretValues(key_arn))
    return DynamoSigningSecrets(ParameterSecretValues(SigningRoot(SIGNING_ROOT_PARAMETER)))


@pytest.fixture
def table(aws: None) -> None:
    from shared.settings.environment import from_env
    from shared.store.table import bind_table

    bind_table(from_env().table_name)


# --- the derived values ---------------------------------------------------------------------


def test_the_rotation_answers_the_documented_derivation_of_the_stored_root(api):
    rotated = api("POST", "/v1/signing-secrets:rotate", {})
    assert rotated.status == 201, rotated.body
    assert rotated.body["secret"] == reference_value(stored_root(), "default", rotated.body["id"])
    # and the signers sign with that value: standardwebhooks verifies with what the tenant was given
    (value,) = fresh_store().active("default", 10**13)
    body = b'{"run_id":"01JRUN"}'
    headers = Signer.of([value]).headers("01JRUN", int(time.time()), body)
    assert Webhook(rotated.body["secret"]).verify(body, headers) == {"run_id": "01JRUN"}


def test_a_tenants_first_secret_made_by_a_signer_is_the_derivation_too(table):
    store = fresh_store()
    (value,) = store.active(TENANT, 1_000)
    (info,) = store.infos(TENANT)
    assert value == reference_value(stored_root(), TENANT, info.id)


def test_a_fresh_process_derives_the_same_values(table):
    first = fresh_store()
    made = first.rotate(TENANT, HOUR_MS, 1_000)
    again = first.rotate(TENANT, HOUR_MS, 2_000)
    later = fresh_store()  # another container: its own root cache, read from Parameter Store
    assert later.active(TENANT, 3_000) == [again.secret, made.secret]
    assert first.active(TENANT, 3_000) == [again.secret, made.secret]


def test_the_previous_secret_stops_signing_when_its_grace_ends(table):
    store = fresh_store()
    made = store.rotate(TENANT, 0, 1_000)
    again = store.rotate(TENANT, HOUR_MS, 2_000)
    assert store.active(TENANT, 2_000 + HOUR_MS - 1) == [again.secret, made.secret]
    assert store.active(TENANT, 2_000 + HOUR_MS) == [again.secret]


# --- the root key ---------------------------------------------------------------------------


def test_the_root_is_made_once_a_standard_secure_string_of_32_random_bytes(table):
    ssm = boto3.client("ssm")
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=SIGNING_ROOT_PARAMETER)
    fresh_store().active(TENANT, 1_000)
    fresh_store().active("globex", 1_000)
    (parameter,) = ssm.describe_parameters()["Parameters"]
    assert parameter["Name"] == SIGNING_ROOT_PARAMETER
    assert parameter["Type"] == "SecureString"
    assert parameter["Tier"] == "Standard"
    assert parameter["Version"] == 1
    assert parameter["KeyId"] == "alias/aws/ssm"  # the AWS managed key: no key of our own
    assert len(stored_root()) == 32


def test_two_functions_racing_to_make_the_root_make_one(table):
    """Both read before either writes (a barrier after each one's first GetParameter): one
    PutParameter wins, the other is refused (no overwrite) and reads the winner's root."""
    from shared.store.signing_parameter import SigningRoot

    both_read = threading.Barrier(2, timeout=10)

    class ReadsThenWaits:
        def __init__(self) -> None:
            self.client = boto3.session.Session().client("ssm")
            self.reads = 0
            self.puts: list[str] = []

        def get_parameter(self, **kwargs: Any) -> Any:
            self.reads += 1
            try:
                return self.client.get_parameter(**kwargs)
            finally:
                if self.reads == 1:
                    both_read.wait()

        def put_parameter(self, **kwargs: Any) -> Any:
            try:
                answer = self.client.put_parameter(**kwargs)
            except self.client.exceptions.ParameterAlreadyExists:
                self.puts.append("refused")
                raise
            self.puts.append("made")
            return answer

    clients = [ReadsThenWaits(), ReadsThenWaits()]
    roots: list[bytes] = []
    threads = [
        threading.Thread(target=lambda c=c: roots.append(SigningRoot(SIGNING_ROOT_PARAMETER, c).get())) for c in clients
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert sorted(c.puts[0] for c in clients) == ["made", "refused"]
    assert [c.reads for c in clients if c.puts == ["refused"]] == [2]  # the loser read the winner's
    assert len(roots) == 2
    assert roots[0] == roots[1] == stored_root()
    (parameter,) = boto3.client("ssm").describe_parameters()["Parameters"]
    assert parameter["Version"] == 1


def test_a_root_that_is_not_32_bytes_is_never_derived_from(table):
    from shared.store.signing_parameter import SigningRoot

    ssm = boto3.client("ssm")
    ssm.put_parameter(Name=SIGNING_ROOT_PARAMETER, Value="not a key", Type="SecureString")
    with pytest.raises(StorageUnavailable, match="32 bytes"):
        SigningRoot(SIGNING_ROOT_PARAMETER).get()
    with pytest.raises(StorageUnavailable):
        fresh_store().rotate(TENANT, HOUR_MS, 1_000)
    assert fresh_store().infos(TENANT) == []


def test_parameter_store_refusing_is_storage_unavailable_naming_no_value() -> None:
    from botocore.exceptions import ClientError

    from shared.store.signing_parameter import SigningRoot

    class Refusing:
        def get_parameter(self, **kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetParameter")

    with pytest.raises(StorageUnavailable, match="AccessDeniedException"):
        SigningRoot(SIGNING_ROOT_PARAMETER, Refusing()).get()


def test_a_root_that_exists_but_never_reads_gives_up() -> None:
    """ParameterAlreadyExists, yet GetParameter keeps saying ParameterNotFound: three reads, then
    StorageUnavailable (the caller retries later), never a root of its own."""
    from botocore.exceptions import ClientError

    from shared.store.signing_parameter import ROOT_READS, SigningRoot

    class Phantom:
        reads = 0

        def get_parameter(self, **kwargs: Any) -> Any:
            self.reads += 1
            raise ClientError({"Error": {"Code": "ParameterNotFound", "Message": ""}}, "GetParameter")

        def put_parameter(self, **kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": "ParameterAlreadyExists", "Message": ""}}, "PutParameter")

    phantom = Phantom()
    with pytest.raises(StorageUnavailable, match="could not be read"):
        SigningRoot(SIGNING_ROOT_PARAMETER, phantom).get()
    assert phantom.reads == ROOT_READS


# --- switching modes ------------------------------------------------------------------------


def test_an_item_from_before_the_modes_is_read_with_kms(table):
    """Items written before the parameter mode existed carry a ciphertext and no ``scheme``: the
    "kms" mode reads them as its own, the "parameter" mode as another mode's."""
    from shared.store.models import SigningSecretItem
    from shared.store.signing_kms import create_signing_key

    key_arn = create_signing_key(boto3.client("kms"))
    made = fresh_store("kms", key_arn).rotate(TENANT, HOUR_MS, 1_000)
    (item,) = [i for i in SigningSecretItem.query("T#acme") if i.sk.startswith("S#")]
    item.update(actions=[SigningSecretItem.scheme.remove()])  # as an older version wrote it
    (item,) = [i for i in SigningSecretItem.query("T#acme") if i.sk.startswith("S#")]
    assert item.scheme is None
    assert item.ciphertext is not None
    assert fresh_store("kms", key_arn).active(TENANT, 2_000) == [made.secret]
    with pytest.raises(StorageUnavailable, match="made in the 'kms' signing key mode"):
        fresh_store().active(TENANT, 2_000)


@pytest.mark.parametrize(("before", "after"), [("kms", "parameter"), ("parameter", "kms")])
def test_after_a_switch_a_tenant_is_refused_until_it_rotates_then_signs_with_the_new_secret(table, before, after):
    from shared.store.signing_kms import create_signing_key

    key_arn = create_signing_key(boto3.client("kms"))
    old = fresh_store(before, key_arn)
    first = old.rotate(TENANT, HOUR_MS, 1_000)
    assert old.active(TENANT, 2_000) == [first.secret]

    new = fresh_store(after, key_arn)  # the same table, the deployment redeployed in the other mode
    with pytest.raises(StorageUnavailable, match=f"made in the '{before}' signing key mode.*rotate") as refused:
        new.active(TENANT, 2_000)
    assert first.secret not in str(refused.value)
    assert [info.id for info in new.infos(TENANT)] == [first.info.id]  # nothing new was made

    rotated = new.rotate(TENANT, HOUR_MS, 3_000)  # the old items' values are never read
    infos = new.infos(TENANT)
    assert [(info.id, info.expires_ms) for info in infos] == [(rotated.info.id, None), (first.info.id, 3_000 + HOUR_MS)]
    # within the old secret's grace, the new secret signs alone: the old one's value cannot be made here
    assert new.active(TENANT, 4_000) == [rotated.secret]
    assert secret_key(rotated.secret) != secret_key(first.secret)


def test_a_tenant_with_no_secret_of_this_mode_gets_no_call_but_a_retry_saying_why(api, pipeline, receiver):
    """A deployment switched to the parameter mode, a tenant whose secret was made by KMS: its
    callback is not sent (neither unsigned nor signed with a secret it was not given), and its
    run says to rotate."""
    from shared.settings.environment import from_env
    from shared.store.signing_kms import create_signing_key
    from shared.store.table import bind_table
    from tests.integration.test_pipeline import register, runs

    bind_table(from_env().table_name)
    fresh_store("kms", create_signing_key(boto3.client("kms"))).rotate("default", HOUR_MS, 1_000)
    url = receiver.script("/switched", 200)
    task = register(api, url, schedule={"after_seconds": 1.25})
    assert pipeline.fire(until=lambda: bool(runs(api, task["id"])), timeout=10)
    (run,) = runs(api, task["id"])
    assert receiver.calls_to("/switched") == []
    assert run["status"] == "retrying"
    assert "made in the 'kms' signing key mode" in run["last_error"]
    assert "must rotate its signing secret" in run["last_error"]
