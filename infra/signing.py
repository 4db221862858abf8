"""The KMS key the tenants' callback signing secrets are encrypted with (docs/tenancy.md,
sections 1 and 4): one customer-managed key for the whole deployment, rotated yearly by KMS.

Who may do what with it:

* the API rotates secrets: ``kms:Encrypt`` of fresh random bytes (it never decrypts);
* the trigger and the job function sign calls: ``kms:Decrypt``; for a tenant that has no secret
  yet they make its first one with ``kms:GenerateDataKeyWithoutPlaintext`` (KMS makes the key
  and answers it only encrypted: no encrypt permission, no plaintext they did not decrypt),
  and read and create the tenant's secret items (``T#<tenant>`` partitions only).
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.settings import DeploymentSettings
from infra.storage import Storage
from shared.store.signing_kms import SIGNING_KEY_DESCRIPTION

KEY_ID = "Key"
SIGNER_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKeyWithoutPlaintext")
"""The trigger's and the job function's: read a secret, make a tenant's first one."""
ROTATOR_KEY_ACTIONS = ("kms:Encrypt",)
"""The API's: encrypt a new secret."""
SIGNER_TABLE_ACTIONS = ("dynamodb:Query", "dynamodb:PutItem")
"""Read a tenant's secrets, write its first one (a transaction of two conditional puts)."""
SECRETS_PARTITIONS = "T#*"


class SigningKey(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploymentSettings) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            KEY_ID,
            description=SIGNING_KEY_DESCRIPTION,
            enable_key_rotation=True,
            removal_policy=settings.cdk_removal_policy,
        )

    def resources(self) -> dict[str, str]:
        """The key, for a function's settings (``shared.settings.Settings``)."""
        return {"signing_key_arn": self.key.key_arn}

    def rotator_statements(self) -> list[iam.PolicyStatement]:
        return [iam.PolicyStatement(actions=list(ROTATOR_KEY_ACTIONS), resources=[self.key.key_arn])]

    def signer_statements(self, storage: Storage) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(actions=list(SIGNER_KEY_ACTIONS), resources=[self.key.key_arn]),
            iam.PolicyStatement(
                actions=list(SIGNER_TABLE_ACTIONS),
                resources=[storage.table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [SECRETS_PARTITIONS]}},
            ),
        ]
