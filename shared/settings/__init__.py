"""Sundial's settings, defined once: their defaults, their bounds and the rules between them, one
module per job. Import the module you need; this package imports none of them, so that a Lambda
function loads its environment's settings only.

* shared/settings/environment.py: the functions' environment. :class:`Settings` is what one
  function runs with; ``Settings.to_env`` writes it and ``from_env`` reads it back at cold start
  (each variable named by ``env_name``).
* shared/settings/context.py: the CDK context. :class:`DeploymentSettings` is what a deployment
  sets under the ``sundial:*`` context keys (``context_key``), read and validated at synth
  (``DeploymentSettings.from_context``), and :data:`AWS`, the stack's platform.
* shared/settings/capacity.py: capacity arithmetic. The Lambda, SQS and DynamoDB quotas that
  bound the trigger's, its event sources' and the table's sizes, and what a claim costs
  (``claim_ms``), which the context's rules use.
* shared/settings/tuning.py: what both carry. :class:`Tuning` (shards, retention, the default
  tenant, the pipeline's clock), the bounds they share and the :class:`Platform` the clock's
  rules are checked against.
* shared/settings/model.py: how settings are read and their errors told (:class:`SettingsModel`,
  :class:`SettingsError`, the readers ``Int``, ``Flag``, ``Text``).
"""
