"""The ports the services own: every adapter they call implements one of these structurally, so
no service imports an adapter and no adapter imports a service (shared/services/factory.py is
the one place that wires the real ones: shared/store, shared/delivery, shared/adapters/queues.py,
shared/adapters/executions.py; the tests wire fakes from tests/support/fakes.py).

One module per concern; this package imports none of them (import the one that holds a port):

* tasks.py: TaskRepository, DeadLetters, TaskCounts, WorkflowLookup.
* pipeline.py: Stager, DelayQueues, ScanRequester, StrandedQueue, PipelineStore, QueueSender,
  Chains, Delivery, CanaryResources.
* scheduler_api.py: ScheduleNames, Schedules, ScheduleEnds.
* tenants.py: AccessKeyStore, SigningSecrets, Tenants, RateLimiter, LimitStore, Throttle, LimitSource.
* jobs.py: JobStore, JobRecords, JobNotifier, Blobs, Processor, ExecutionStarter, JobCounts.
* workflows.py: WorkflowEnds, WorkflowRunStore, NodeStarter, NodeItems, Definitions, RunPages,
  DefinitionVersions, ScheduleTasks, RunCounts.
"""
