"""The adapters of Sundial's own AWS resources besides the table (shared/store) and a task's
targets (shared/delivery): the delay and dead-letter queues (queues.py), the job state machine's
executions (executions.py), the functions' asynchronous invocations (invoke.py) and those sent
through it (scans.py: the tick's scan requests; stranded.py: the stranded queue's look and drain;
job_notify.py: the job function's notify), and the custom resource's answers to CloudFormation
(custom_resource.py).

Each implements a port of shared/services/ports/, which shared/services/factory.py wires; they
sit in the adapters' layer of pyproject.toml's import contracts, with shared/store and
shared/delivery: below the services, above the shared definitions (shared/messages.py,
shared/topology.py, shared/settings) and the domain."""
