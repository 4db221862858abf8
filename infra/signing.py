"""Where the tenants' callback signing secrets' values come from (docs/tenancy.md, sections 1 and
4), by ``sundial:signingKey``, and who may use it. Either way the signers (the triggers and the
job function) read and create the tenant's secret items (``T#<tenant>`` partitions only).

"parameter" (the default, :class:`SigningRoot`): the values are derived from a root key in a
Parameter Store SecureString, ``/<stack name>/signing-root``, which the first function that needs
it creates (CloudFormation cannot create a SecureString): the API (a rotation answers the new
value) and the signers may read it (``ssm:GetParameter``) and create it (``ssm:PutParameter``) but
never overwrite it (a Deny on ``ssm:Overwrite`` true, as "Preventing access to Parameter Store API
operations" shows it,
https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-policy-conditions.html).
It is a standard parameter (no charge) encrypted with the account's AWS managed key ``aws/ssm``,
whose own key policy lets the account's principals use it through Parameter Store ("The AWS
managed key for Parameter Store (aws/ssm) grants Decrypt permission to all IAM principals in the
AWS account", https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-restrict-decryption.html):
no KMS statement here, no KMS key in the template, nothing a month. Not a resource of the stack,
the parameter outlives it: deleting the stack leaves it (docs/tenancy.md, section 4).

"kms" (:class:`SigningKey`): one customer-managed key for the whole deployment, rotated yearly by
KMS ($1 a month):

* the API rotates secrets: ``kms:Encrypt`` of fresh random bytes (it never decrypts);
* the signers sign calls: ``kms:Decrypt``; for a tenant that has no secret yet they make its
  first one with ``kms:GenerateDataKeyWithoutPlaintext`` (KMS makes the key and answers it only
  encrypted: no encrypt permission, no plaintext they did not decrypt).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from shared.store.signing_kms import SIGNING_KEY_DESCRIPTION
from shared.store.signing_parameter import root_parameter_name

from .settings import DeploymentSettings
from .storage import Storage

KEY_ID = "Key"
SIGNER_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKeyWithoutPlaintext")
"""The "kms" mode, the signers': read a secret, make a tenant's first one."""
ROTATOR_KEY_ACTIONS = ("kms:Encrypt",)
"""The "kms" mode, the API's: encrypt a new secret."""
ACCESS_KEY_ACTIONS = ("kms:Decrypt",)
"""The "kms" mode, the API's: read an access key's secret back (it is made with ``kms:Encrypt``)."""
ROOT_ACTIONS = ("ssm:GetParameter", "ssm:PutParameter")
"""The "parameter" mode, the API's and the signers': read the root, create it when there is none."""
ROOT_OVERWRITE_DENIED = {"StringEquals": {"ssm:Overwrite": ["true"]}}
"""The condition of the Deny of ``ssm:PutParameter``: the root is created, never replaced."""
SIGNER_TABLE_ACTIONS = ("dynamodb:Query", "dynamodb:PutItem")
"""Read a tenant's secrets, write its first one (a transaction of two conditional puts)."""
SECRETS_PARTITIONS = "T#*"


class Signing(Construct):
    """The signing key of the deployment's mode: what the functions' settings name, and the
    permissions of the API (:meth:`rotator_statements`) and of the signers (:meth:`signer_statements`)."""

    def resources(self) -> dict[str, str]:
        """The functions' settings naming it (``shared.settings.environment.Settings``)."""
        raise NotImplementedError

    def rotator_statements(self) -> list[iam.PolicyStatement]:
        """The API's: make a new secret and answer its value."""
        raise NotImplementedError

    def value_statements(self) -> list[iam.PolicyStatement]:
        """The signers': read the values, make a tenant's first secret."""
        raise NotImplementedError

    def access_key_statements(self) -> list[iam.PolicyStatement]:
        """The API's, for the EventBridge Scheduler API's access keys (docs/eventbridge.md,
        section 5): a key's secret is made as a rotation makes one and read back to verify SigV4."""
        raise NotImplementedError

    def verifier_statements(self) -> list[iam.PolicyStatement]:
        """What verifying an access key's SigV4 signature needs and nothing more: the key's secret
        read back (the EventBridge Scheduler API's function URL: infra/api.py)."""
        raise NotImplementedError

    def signer_statements(self, storage: Storage) -> list[iam.PolicyStatement]:
        return [
            *self.value_statements(),
            iam.PolicyStatement(
                actions=list(SIGNER_TABLE_ACTIONS),
                resources=[storage.table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [SECRETS_PARTITIONS]}},
            ),
        ]


class SigningRoot(Signing):
    """The "parameter" mode: the root key's parameter, created by the functions, not the stack."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.parameter_name = root_parameter_name(stack.stack_name)
        self.parameter_arn = stack.format_arn(
            service="ssm",
            resource="parameter",
            resource_name=self.parameter_name.removeprefix("/"),
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    def resources(self) -> dict[str, str]:
        return {"signing_root_parameter": self.parameter_name}

    def _root_statements(self) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(actions=list(ROOT_ACTIONS), resources=[self.parameter_arn]),
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=["ssm:PutParameter"],
                resources=[self.parameter_arn],
                conditions=ROOT_OVERWRITE_DENIED,
            ),
        ]

    def rotator_statements(self) -> list[iam.PolicyStatement]:
        return self._root_statements()

    def value_statements(self) -> list[iam.PolicyStatement]:
        return self._root_statements()

    def access_key_statements(self) -> list[iam.PolicyStatement]:
        return []  # derived from the root, which the rotator's statements read already

    def verifier_statements(self) -> list[iam.PolicyStatement]:
        return self._root_statements()  # a key's secret is derived from the root


class SigningKey(Signing):
    """The "kms" mode: a customer-managed key of the stack, rotated yearly."""

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
        return {"signing_key_arn": self.key.key_arn}

    def rotator_statements(self) -> list[iam.PolicyStatement]:
        return [iam.PolicyStatement(actions=list(ROTATOR_KEY_ACTIONS), resources=[self.key.key_arn])]

    def value_statements(self) -> list[iam.PolicyStatement]:
        return [iam.PolicyStatement(actions=list(SIGNER_KEY_ACTIONS), resources=[self.key.key_arn])]

    def access_key_statements(self) -> list[iam.PolicyStatement]:
        return [iam.PolicyStatement(actions=list(ACCESS_KEY_ACTIONS), resources=[self.key.key_arn])]

    def verifier_statements(self) -> list[iam.PolicyStatement]:
        return self.access_key_statements()


def signing(scope: Construct, construct_id: str, *, settings: DeploymentSettings) -> Signing:
    """The signing key of ``sundial:signingKey``."""
    if settings.signing_key == "kms":
        return SigningKey(scope, construct_id, settings=settings)
    return SigningRoot(scope, construct_id)
