"""The CDK app (see app.py): one construct per concern, composed by infra/stack.py.

names       every id, handler path and context key
settings    deployment settings from the CDK context (cdk.json)
app         builds the app: the context, the stack, cdk-nag on every synth
bundling    Lambda code and the dependency layer, built without Docker, cached in .build/
storage     the DynamoDB tables: the task table, shaped by the PynamoDB models, and the
            idempotency table
signing     where the tenants' callback signing secrets come from (sundial:signingKey: a root key
            in Parameter Store, or a KMS key) and its grants
function    the baseline of every function: own role, own log group, tracing
auth        API keys: the authorizer function, the REQUEST authorizer
api         API Gateway (API keys through the authorizer; the OpenAPI document public),
            its own errors in the API's error format, the API function, and the EventBridge
            Scheduler API's function URL (sundial:schedulerFunctionUrl)
pipeline    the firing pipeline: minute rule, tick, scanners, triggers (and the recovering one),
            and the queues of shared/topology.py
canary      a task due every minute, fired through the pipeline and timed, and its alarms
jobs        the state machine of sharded batch jobs (docs/jobs.md)
job_runner  what jobs run on: the jobs bucket, the job function and the state machine of jobs
monitoring  alarms (dead letters, lateness, errors, API 5xx) and the dashboard, each when asked for
targets     where user-registered targets may be (the trigger's and the job processors' grants)
nag         cdk-nag acknowledgments, one resource and one reason each
stack       composes the constructs
synth_check `make synth`: synthesizes, then fails on any cdk-nag finding or cfn-lint problem

tests/unit/test_infra_module_map.py checks that this map names every module of infra/.
"""
