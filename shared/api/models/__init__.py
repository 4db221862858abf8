"""The HTTP API's request models (pydantic): they are the contract the OpenAPI document shows.
One module per route (``tasks``, ``task_patches``, ``jobs``, ``schedules``, ``tenants``,
``limits``, ``signing``, ``dead_letters``), and the pieces several share (``schedules``,
``rules``, ``calls``, ``targets``, ``alerts``, ``task_members``, ``fields``, ``headers``).

"Exactly one of" is a union with a discriminator (``oneOf`` in the document); rules across
fields are model validators raising :class:`~shared.api.types.Problem` with the member they are
about; the domain's own checks (a cron expression, a calendar rule, a job's sharding) run in
those validators, so a model that validates converts to the domain without another error. The
schedule and target models are also how tasks are answered: whatever the API returns, it
accepts back.
"""
