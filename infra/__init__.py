"""The CDK app (see app.py): one construct per concern, composed by infra/stack.py.

names      every id, handler path and context key
settings   deployment settings from the CDK context (cdk.json)
bundling   Lambda code and the dependency layer, built without Docker, cached in .build/
storage    the DynamoDB table, shaped by the PynamoDB models
function   the baseline of every function: own role, own log group, tracing
api        API Gateway (IAM-authorized) and the API function
pipeline   the firing pipeline: minute rule, tick, scanners, trigger, and the queues of
           shared/topology.py
monitoring alarms (dead letters, lateness, errors) and the dashboard
targets    where user-registered targets may be (the trigger's and the job processors' grants)
nag        cdk-nag acknowledgments, one resource and one reason each
stack      composes the constructs; app builds the app with cdk-nag; synth_check is `make synth`
"""
