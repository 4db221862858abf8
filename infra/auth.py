"""API keys: who may call the API, and as which tenant (docs/tenancy.md, section 2).

* **The admin key**: a Secrets Manager secret the stack generates (alphanumeric, no punctuation,
  so it can be pasted into a header as it is) and names in the ``AdminKeySecretArn`` output. It
  is the credential of the admin routes (``/v1/tenants...``); rotating it is a
  ``put-secret-value`` by hand (docs/deploy.md), which the authorizer sees within its own
  5-minute cache of the value.
* **The authorizer function** (``functions/authorizer``): hashes the bearer key of the
  ``Authorization`` header and reads ``K#<sha256>`` (and the tenant's ``T#<tenant>`` item) with
  ``GetItem``, or compares it with the admin key. Its role holds exactly that: ``GetItem`` on the
  task table (no index) and ``GetSecretValue`` on this one secret (AWS managed encryption: no
  KMS permission is needed).
* **The REQUEST authorizer** of the REST API, with the ``Authorization`` header as its identity
  source: API Gateway answers ``401`` itself when the header is absent or empty, and caches each
  key's answer for :data:`RESULTS_CACHE_TTL`.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import names
from infra.bundling import LambdaBundle
from infra.function import ServiceFunction, function_environment
from infra.nag import acknowledge
from infra.settings import DeploymentSettings
from infra.storage import Storage

RESULTS_CACHE_TTL = Duration.seconds(60)
"""How long API Gateway keeps the authorizer's answer for one ``Authorization`` value: the bound
on how long a revoked key (or a tenant's changed limits) keeps working (docs/deploy.md states it),
and why the authorizer runs about once a minute per key in use rather than once per request."""

IDENTITY_HEADER = "Authorization"
ADMIN_KEY_LENGTH = 64
"""Characters of the generated admin key: letters and digits, about 380 random bits."""

AUTHORIZER_TABLE_ACTIONS = ("dynamodb:GetItem",)
"""The authorizer reads a key's item and its tenant's item, one GetItem each."""
AUTHORIZER_SECRET_ACTIONS = ("secretsmanager:GetSecretValue",)
"""The authorizer reads the admin key (cached 5 minutes per container)."""

AUTHORIZER_MEMORY_MB = 256
AUTHORIZER_TIMEOUT = Duration.seconds(5)
"""A GetItem or two and, on a cold container, one GetSecretValue: far below this when healthy;
a timeout is API Gateway's 500 (an ``AUTHORIZER_*`` gateway response), never an Allow."""

ROTATION_BY_HAND = (
    "The admin key is a bearer key for the deployment's operators, not a database password: no "
    "service on the other side of it needs updating, so a rotation Lambda would only write a new "
    "random string. Rotate it by hand when an operator leaves or it may have leaked: "
    "aws secretsmanager put-secret-value --secret-id <AdminKeySecretArn output> --secret-string "
    "<48+ random letters and digits>; the authorizer reads the new value within 5 minutes "
    "(docs/deploy.md, 'Rotating the admin key')."
)


class ApiKeys(Construct):
    """The admin key secret, the authorizer function and the REST API's REQUEST authorizer."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
    ) -> None:
        super().__init__(scope, construct_id)
        self.admin_key = secretsmanager.Secret(
            self,
            names.ADMIN_KEY_ID,
            description="Sundial admin key: Authorization: Bearer <this value> on the /v1/tenants routes",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                exclude_punctuation=True,
                include_space=False,
                password_length=ADMIN_KEY_LENGTH,
            ),
            removal_policy=settings.cdk_removal_policy,
        )
        acknowledge(self.admin_key, "AwsSolutions-SMG4", ROTATION_BY_HAND)

        self.function = ServiceFunction(
            self,
            names.AUTHORIZER_FUNCTION_ID,
            bundle=bundle,
            settings=settings,
            handler=names.AUTHORIZER_HANDLER,
            description="Sundial API authorizer: maps a bearer API key to its tenant, or to the admin",
            statements=[
                *storage.access_statements(actions=AUTHORIZER_TABLE_ACTIONS),
                iam.PolicyStatement(actions=list(AUTHORIZER_SECRET_ACTIONS), resources=[self.admin_key.secret_arn]),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                admin_key_secret_arn=self.admin_key.secret_arn,
            ),
            memory_size=AUTHORIZER_MEMORY_MB,
            timeout=AUTHORIZER_TIMEOUT,
        )

        self.authorizer = apigw.RequestAuthorizer(
            self,
            names.REQUEST_AUTHORIZER_ID,
            handler=self.function.function,
            identity_sources=[apigw.IdentitySource.header(IDENTITY_HEADER)],
            results_cache_ttl=RESULTS_CACHE_TTL,
        )
