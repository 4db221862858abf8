"""API keys: who may call the API, and as which tenant (docs/tenancy.md, section 2).

* **The admin key**: no stack resource. Its SHA-256 is an item of the task table, as a tenant's
  key's is (``K#<sha-256>`` with ``role`` ``admin``, shared/store/admin_key.py): the operator's
  ``sundial admin-key create`` makes the key on their machine, writes the hash with their own AWS
  credentials and prints the key once (``make deploy`` runs it when the table has none); ``rotate``
  replaces it. It was a Secrets Manager secret ($0.40 a month, an idle stack's second-largest line).
* **The authorizer function** (``functions/authorizer``): hashes the bearer key of the
  ``Authorization`` header and reads ``K#<sha256>`` (and, for a tenant's key, the tenant's
  ``T#<tenant>`` item) with ``GetItem``: the admin key is found the same way. Its role holds
  exactly that: ``GetItem`` on the task table (no index).
* **The REQUEST authorizer** of the REST API, with the ``Authorization`` header as its identity
  source: API Gateway answers ``401`` itself when the header is absent or empty, and caches each
  key's answer for :data:`RESULTS_CACHE_TTL`.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from constructs import Construct

from shared.topology import AUTHORIZER_CACHE_TTL_S

from . import names
from .bundling import LambdaBundle
from .function import ServiceFunction, function_environment
from .settings import DeploymentSettings
from .storage import Storage

RESULTS_CACHE_TTL = Duration.seconds(AUTHORIZER_CACHE_TTL_S)
"""How long API Gateway keeps the authorizer's answer for one ``Authorization`` value: the bound
on how long a revoked key (or a tenant's changed limits) keeps working (docs/deploy.md states it),
and why the authorizer runs about once a minute per key in use rather than once per request."""

IDENTITY_HEADER = "Authorization"

AUTHORIZER_TABLE_ACTIONS = ("dynamodb:GetItem",)
"""The authorizer reads a key's item (a tenant's or the admin key's) and its tenant's item, one
GetItem each."""

AUTHORIZER_MEMORY_MB = 256
AUTHORIZER_TIMEOUT = Duration.seconds(5)
"""A GetItem or two: far below this when healthy; a timeout is API Gateway's 500 (an
``AUTHORIZER_*`` gateway response), never an Allow."""


class ApiKeys(Construct):
    """The authorizer function and the REST API's REQUEST authorizer."""

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
        self.function = ServiceFunction(
            self,
            names.AUTHORIZER_FUNCTION_ID,
            bundle=bundle,
            settings=settings,
            handler=names.AUTHORIZER_HANDLER,
            description="Sundial API authorizer: maps a bearer API key to its tenant, or to the admin",
            statements=storage.access_statements(actions=AUTHORIZER_TABLE_ACTIONS),
            environment=function_environment(settings, table_name=storage.table.table_name),
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
