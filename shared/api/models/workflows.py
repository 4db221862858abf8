"""``POST /v1/workflows`` and ``PATCH /v1/workflows/{id}``: a workflow's nodes, edges and schedule
(docs/workflows.md). The graph's rules (ids, edges, cycles) are the domain's
(``shared.domain.workflows.validated``), which names the member a refusal is about."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from shared.api.models.schedules import ScheduleIn, schedule_to_domain
from shared.api.models.targets import NodeTargetIn, target_to_domain
from shared.api.models.task_members import PAYLOAD, Name, RetryIn, payload_fits, retry_policy
from shared.api.types import Model, Problem, exactly_one_schema
from shared.domain import tasks as t
from shared.domain.secrets import kept
from shared.domain.workflow_defs import NodeDef
from shared.domain.workflows import MAX_EDGES, MAX_NODES, NODE_ID, Edge, Graph, Join, On, validated

NodeTargets = Annotated[list[NodeTargetIn], Field(min_length=1, max_length=t.MAX_TARGETS)]


class NodeIn(Model):
    """A node: called as a task's target is (signed, limited, retried, dead-lettered)."""

    model_config = Model.model_config | {"json_schema_extra": exactly_one_schema("target", "targets")}

    id: str = Field(pattern=rf"^{NODE_ID.pattern}$", description="1-64 of a-z 0-9 _ -, unique in the workflow.")
    target: NodeTargetIn | None = Field(None, description="The one target (exactly one of target and targets).")
    targets: NodeTargets | None = Field(None, description=f"Multicast: 1 to {t.MAX_TARGETS} targets.")
    payload: Any = Field(None, description=PAYLOAD)
    retry: RetryIn | None = Field(None, description="Default: 3 attempts, exponential from 2 s.")
    join: Join = Field(
        Join.ALL,
        description="all: the node starts when every incoming edge is met (and is skipped when one is dead); "
        "any: when one is met (skipped when all are dead).",
    )

    _payload = field_validator("payload")(payload_fits)

    @model_validator(mode="after")
    def _one_target(self) -> NodeIn:
        if (self.target is None) == (self.targets is None):
            raise Problem("target", "give exactly one of target or targets")
        return self

    def to_domain(self, index: int, before: NodeDef | None) -> NodeDef:
        """The node; a secret header sent as ``[redacted]`` keeps the value stored for the node of
        the same id (refused, naming the header, where there is none)."""
        stored = before.targets if before is not None else ()
        if self.targets is not None:
            named = [(f"nodes[{index}].targets[{i}]", target) for i, target in enumerate(self.targets)]
        else:
            named = [(f"nodes[{index}].target", self.target)] if self.target is not None else []
        return NodeDef(
            self.id,
            tuple(kept(target_to_domain(target), stored, field) for field, target in named),
            self.targets is not None,
            self.payload,
            retry_policy(self.retry),
        )


class EdgeIn(Model):
    from_: str = Field(alias="from", description="The parent node's id.")
    to: str = Field(description="The child node's id.")
    on: On = Field(On.SUCCESS, description="When the edge is met: the parent's success, failure, or always.")


Nodes = Annotated[list[NodeIn], Field(min_length=1, max_length=MAX_NODES)]
Edges = Annotated[list[EdgeIn], Field(max_length=MAX_EDGES)]


class WorkflowIn(Model):
    """``POST /v1/workflows``."""

    name: Name | None = None
    nodes: Nodes = Field(description=f"1 to {MAX_NODES} nodes.")
    edges: Edges = Field(default_factory=list, description=f"Up to {MAX_EDGES} edges.")
    schedule: ScheduleIn | None = Field(
        None, description="Start a run at each occurrence (kept as a task whose target is the workflow)."
    )


class WorkflowPatch(Model):
    """``PATCH /v1/workflows/{id}``: what is given replaces what was (``nodes`` and ``edges``
    together, the graph being one); ``"schedule": null`` removes the schedule."""

    name: Name | None = None
    nodes: Nodes | None = Field(None, description=f"1 to {MAX_NODES} nodes; give edges with them.")
    edges: Edges | None = Field(None, description=f"Up to {MAX_EDGES} edges; give nodes with them.")
    schedule: ScheduleIn | None = None

    @model_validator(mode="after")
    def _graph_whole(self) -> WorkflowPatch:
        if (self.nodes is None) != (self.edges is None):
            raise Problem("nodes" if self.nodes is None else "edges", "nodes and edges are changed together")
        return self


def graph_of(
    nodes: Sequence[NodeIn], edges: Sequence[EdgeIn], before: Sequence[NodeDef] = ()
) -> tuple[tuple[NodeDef, ...], Graph]:
    """The nodes and the graph, or :class:`ValidationFailed` naming the members (``nodes[i].id``,
    ``edges[i].to``, ``edges`` for a cycle)."""
    graph = validated(
        [node.id for node in nodes],
        [Edge(edge.from_, edge.to, edge.on) for edge in edges],
        {node.id: node.join for node in nodes if node.join is not Join.ALL},
    )
    stored = {node.id: node for node in before}
    return tuple(node.to_domain(i, stored.get(node.id)) for i, node in enumerate(nodes)), graph


def schedule_of(schedule: ScheduleIn | None) -> Any:
    return schedule_to_domain(schedule) if schedule is not None else None
