"""A workflow's graph and the rules of its runs (docs/workflows.md, section 1). Pure: no I/O.

Validation names the member a refusal is about (``nodes[i].id``, ``edges[i].to``, ``edges`` for
a cycle, naming its nodes in order). :func:`decide` says which pending nodes of a run are ready
and which are skipped, from their parents' statuses alone, so any trigger that computes it after
any node's end reaches the same answer, however often."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from shared.domain.errors import FieldError, ValidationFailed
from shared.domain.ids import MAX_SHARDS, new_task_id, parse_task_id

MAX_NODES = 100
MAX_EDGES = 400
NODE_ID = re.compile(r"[a-z0-9_-]{1,64}")


class On(StrEnum):
    """When an edge is met: its parent's end."""

    SUCCESS = "success"
    FAILURE = "failure"
    ALWAYS = "always"


class Join(StrEnum):
    ALL = "all"
    ANY = "any"


class NodeStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


ENDED = frozenset({NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.CANCELLED})


class RunFilter(StrEnum):
    """What ``GET /v1/workflow-runs?status=`` takes: a run status the status index holds
    (docs/status-index.md), ``failed`` for now."""

    FAILED = "failed"


WATCHED_RUNS = (NodeStatus.FAILED,)
"""The run statuses the status index holds: listed tenant-wide from it and counted exactly."""


@dataclass(frozen=True)
class Edge:
    parent: str
    child: str
    on: On = On.SUCCESS

    def state(self, parent_status: NodeStatus) -> bool | None:
        """True: met; False: dead; None: open (the parent has not ended)."""
        if parent_status is NodeStatus.SUCCEEDED:
            return self.on in (On.SUCCESS, On.ALWAYS)
        if parent_status is NodeStatus.FAILED:
            return self.on in (On.FAILURE, On.ALWAYS)
        if parent_status in (NodeStatus.SKIPPED, NodeStatus.CANCELLED):
            return False
        return None


@dataclass(frozen=True)
class Graph:
    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]
    joins: Mapping[str, Join] = field(default_factory=dict)

    def incoming(self, node: str) -> list[Edge]:
        return [edge for edge in self.edges if edge.child == node]

    def roots(self) -> list[str]:
        children = {edge.child for edge in self.edges}
        return [node for node in self.nodes if node not in children]

    def join_of(self, node: str) -> Join:
        return self.joins.get(node, Join.ALL)


def validated(nodes: Sequence[str], edges: Sequence[Edge], joins: Mapping[str, Join] | None = None) -> Graph:
    """The graph, or :class:`ValidationFailed` naming every member that is wrong (a cycle: the
    first one found, its nodes in order)."""
    problems = [*_size_problems(nodes, edges), *_member_problems(nodes, edges, joins or {})]
    graph = Graph(tuple(nodes), tuple(edges), dict(joins or {}))
    if not problems:
        cycle = find_cycle(graph)
        if cycle is not None:
            problems.append(FieldError("edges", f"a cycle: {' -> '.join([*cycle, cycle[0]])}"))
    if problems:
        first = problems[0]
        raise ValidationFailed(
            f"{first.field}: {first.message}" if len(problems) == 1 else "the workflow is not valid", problems
        )
    return graph


def _size_problems(nodes: Sequence[str], edges: Sequence[Edge]) -> list[FieldError]:
    problems = []
    if not nodes:
        problems.append(FieldError("nodes", "a workflow has at least one node"))
    if len(nodes) > MAX_NODES:
        problems.append(FieldError("nodes", f"at most {MAX_NODES} nodes, got {len(nodes)}"))
    if len(edges) > MAX_EDGES:
        problems.append(FieldError("edges", f"at most {MAX_EDGES} edges, got {len(edges)}"))
    return problems


def _member_problems(nodes: Sequence[str], edges: Sequence[Edge], joins: Mapping[str, Join]) -> list[FieldError]:
    """Ids (their form, duplicates), edges naming no node or their own parent, joins of no node.
    A graph without these and without a cycle has a root: a finite acyclic graph has one."""
    problems: list[FieldError] = []
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        if not NODE_ID.fullmatch(node):
            problems.append(FieldError(f"nodes[{i}].id", "1-64 of a-z 0-9 _ -"))
        elif node in seen:
            problems.append(FieldError(f"nodes[{i}].id", f"{node!r} is the id of another node"))
        seen.add(node)
    for i, edge in enumerate(edges):
        problems += [
            FieldError(f"edges[{i}].{end}", f"{name!r} names no node")
            for end, name in (("from", edge.parent), ("to", edge.child))
            if name not in seen
        ]
        if edge.parent == edge.child:
            problems.append(FieldError(f"edges[{i}]", f"an edge from {edge.parent!r} to itself"))
    problems += [FieldError("nodes", f"a join for {node!r}, which is no node") for node in joins if node not in seen]
    return problems


def find_cycle(graph: Graph) -> list[str] | None:
    """The nodes of one cycle, in order, or None (a depth-first search, colours white/grey/black)."""
    children: dict[str, list[str]] = {node: [] for node in graph.nodes}
    for edge in graph.edges:
        children[edge.parent].append(edge.child)
    colour: dict[str, int] = dict.fromkeys(graph.nodes, 0)
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        path.append(node)
        for child in children[node]:
            if colour[child] == 1:
                return path[path.index(child) :]
            if colour[child] == 0 and (found := visit(child)) is not None:
                return found
        colour[node] = 2
        path.pop()
        return None

    for node in graph.nodes:
        if colour[node] == 0 and (found := visit(node)) is not None:
            return found
    return None


@dataclass(frozen=True)
class Decision:
    ready: frozenset[str]
    skipped: frozenset[str]


def decide(graph: Graph, statuses: Mapping[str, NodeStatus]) -> Decision:
    """Which pending nodes are ready to start and which are skipped, from their parents' statuses
    (docs/workflows.md, section 1). Roots are ready while pending."""
    ready, skipped = set(), set()
    for node in graph.nodes:
        if statuses.get(node, NodeStatus.PENDING) is not NodeStatus.PENDING:
            continue
        states = [edge.state(statuses.get(edge.parent, NodeStatus.PENDING)) for edge in graph.incoming(node)]
        if not states:
            ready.add(node)
        elif graph.join_of(node) is Join.ALL:
            if any(state is False for state in states):
                skipped.add(node)
            elif all(state is True for state in states):
                ready.add(node)
        elif any(state is True for state in states):
            ready.add(node)
        elif all(state is False for state in states):
            skipped.add(node)
    return Decision(frozenset(ready), frozenset(skipped))


def settle_skips(graph: Graph, statuses: Mapping[str, NodeStatus]) -> tuple[dict[str, NodeStatus], frozenset[str]]:
    """Apply :func:`decide`'s skips until none is left; the statuses then, and the nodes ready."""
    now = dict(statuses)
    while True:
        decision = decide(graph, now)
        if not decision.skipped:
            return now, decision.ready
        now.update(dict.fromkeys(decision.skipped, NodeStatus.SKIPPED))


def run_status(graph: Graph, statuses: Mapping[str, NodeStatus]) -> NodeStatus:
    """``running`` until every node ended; then ``failed`` if one failed, else ``succeeded``."""
    ended = [statuses.get(node, NodeStatus.PENDING) for node in graph.nodes]
    if not all(status in ENDED for status in ended):
        return NodeStatus.RUNNING
    return NodeStatus.FAILED if NodeStatus.FAILED in ended else NodeStatus.SUCCEEDED


@dataclass(frozen=True)
class NodeRun:
    """What a run's item keeps of a node besides its status: the item that calls it and its
    run's id (once started), when it started and ended, and why it failed."""

    item_id: str | None = None
    run_id: str | None = None
    started_ms: int | None = None
    ended_ms: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class WorkflowRun:
    """A run as its item holds it (docs/workflows.md, section 2)."""

    run_id: str
    workflow_id: str
    tenant: str
    graph: Graph
    statuses: Mapping[str, NodeStatus]
    status: NodeStatus = NodeStatus.RUNNING
    attempts: Mapping[str, int] = field(default_factory=dict)
    """A node's attempt (1 unless a retry of the run set it pending again): part of its run's id."""
    version: int = 1
    """The workflow's version the run follows (its nodes' targets, payloads and retries)."""
    nodes: Mapping[str, NodeRun] = field(default_factory=dict)
    created_ms: int = 0
    ended_ms: int | None = None
    revision: int = 0
    """Bumped by every write of the run's item: a cancel or a retry is conditional on it."""

    def node(self, node: str) -> NodeRun:
        return self.nodes.get(node, NodeRun())

    def status_of(self, node: str) -> NodeStatus:
        return self.statuses.get(node, NodeStatus.PENDING)


def retried(run: WorkflowRun) -> WorkflowRun:
    """The run a retry makes of a failed or cancelled one: its failed and cancelled nodes pending
    again under their next attempt, every skipped node pending (decided again: those skipped
    because of a failure may run now; the others are skipped again), the run running."""
    again = {NodeStatus.FAILED, NodeStatus.CANCELLED, NodeStatus.SKIPPED}
    statuses = dict(run.statuses)
    attempts = dict(run.attempts)
    nodes = dict(run.nodes)
    for node in run.graph.nodes:
        status = run.status_of(node)
        if status not in again:
            continue
        statuses[node] = NodeStatus.PENDING
        started = nodes.pop(node, NodeRun()).item_id is not None
        if status is NodeStatus.FAILED or (status is NodeStatus.CANCELLED and started):
            attempts[node] = attempts.get(node, 1) + 1  # its item exists: the next attempt is a new one
    return replace(run, statuses=statuses, attempts=attempts, nodes=nodes, status=NodeStatus.RUNNING, ended_ms=None)


def cancelled(run: WorkflowRun, now_ms: int) -> tuple[WorkflowRun, list[str]]:
    """The run a cancel makes at ``now_ms``: every node not ended cancelled (ended then); and the
    items of those that were running (to be cancelled, so that none fires again)."""
    statuses = dict(run.statuses)
    nodes = dict(run.nodes)
    running = []
    for node in run.graph.nodes:
        status = run.status_of(node)
        if status in ENDED:
            continue
        statuses[node] = NodeStatus.CANCELLED
        nodes[node] = replace(run.node(node), ended_ms=now_ms)
        item_id = run.node(node).item_id
        if status is NodeStatus.RUNNING and item_id is not None:
            running.append(item_id)
    return replace(run, statuses=statuses, nodes=nodes, status=NodeStatus.CANCELLED, ended_ms=now_ms), running


@dataclass(frozen=True)
class NodeStart:
    """A node whose item was created: its item and run ids, to be marked on the run."""

    node: str
    item_id: str
    run_id: str


@dataclass(frozen=True)
class NodeOutcome:
    """A node's end as its children receive it (``parents`` in their bodies)."""

    node: str
    run_id: str
    status: NodeStatus
    response: Any = None
    """Up to 4 KiB of the answer (shared/domain/chains.py, ``response_of``): JSON when it parses."""
    error: str | None = None
    ended_ms: int = 0

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "node": self.node,
            "run_id": self.run_id,
            "status": self.status.value,
            "response": self.response,
        }
        if self.error is not None:
            body["error"] = self.error
        return body

    def to_dict(self) -> dict[str, Any]:
        return {**self.body(), "ended_ms": self.ended_ms}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeOutcome:
        return cls(
            str(data["node"]),
            str(data["run_id"]),
            NodeStatus(data["status"]),
            data.get("response"),
            data.get("error"),
            int(data.get("ended_ms") or 0),
        )


MAX_PARENT_RESPONSES_BYTES = 32 * 1024
"""What a node's item keeps of its parents' answers in all (each up to 4 KiB): a node joining
more parents than that holds gets ``response: null`` for the later ones, in node order, and
``response_omitted: true``, so its item stays far below DynamoDB's 400 KB item size."""


@dataclass(frozen=True)
class NodeRef:
    """Which workflow run and node a run was started for (its ``attempt``-th time in that run):
    what a node's dead letter names, so that it can be found from the letter."""

    workflow_id: str
    run_id: str
    node: str
    attempt: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.workflow_id, "run_id": self.run_id, "node": self.node, "attempt": self.attempt}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeRef:
        return cls(str(data["id"]), str(data["run_id"]), str(data["node"]), int(data.get("attempt") or 1))


@dataclass(frozen=True)
class NodeLink:
    """What a node's run knows of its workflow run: ``workflow`` in its callback body."""

    workflow_id: str
    run_id: str
    node: str
    attempt: int = 1
    parents: tuple[NodeOutcome, ...] = ()
    omitted: frozenset[str] = frozenset()
    """Parents whose answers did not fit :data:`MAX_PARENT_RESPONSES_BYTES`."""

    def body(self) -> dict[str, Any]:
        parents = []
        for parent in self.parents:
            body = parent.body()
            if parent.node in self.omitted:
                body["response_omitted"] = True
            parents.append(body)
        return {"id": self.workflow_id, "run_id": self.run_id, "node": self.node, "parents": parents}

    @property
    def ref(self) -> NodeRef:
        """The workflow run and node alone."""
        return NodeRef(self.workflow_id, self.run_id, self.node, self.attempt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.workflow_id,
            "run_id": self.run_id,
            "node": self.node,
            "attempt": self.attempt,
            "parents": [parent.to_dict() for parent in self.parents],
            "omitted": sorted(self.omitted),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeLink:
        return cls(
            str(data["id"]),
            str(data["run_id"]),
            str(data["node"]),
            int(data.get("attempt") or 1),
            tuple(NodeOutcome.from_dict(parent) for parent in data.get("parents") or ()),
            frozenset(data.get("omitted") or ()),
        )


def parents_of(graph: Graph, node: str) -> list[str]:
    """A node's parents, each once, in the graph's node order."""
    parents = {edge.parent for edge in graph.incoming(node)}
    return [n for n in graph.nodes if n in parents]


def fitted_parents(outcomes: Sequence[NodeOutcome]) -> tuple[tuple[NodeOutcome, ...], frozenset[str]]:
    """The parents' outcomes with their answers kept while they fit
    :data:`MAX_PARENT_RESPONSES_BYTES` in all; the parents whose answers were left out."""
    kept, omitted, used = [], set(), 0
    for outcome in outcomes:
        size = len(json.dumps(outcome.response, ensure_ascii=False).encode()) if outcome.response is not None else 0
        if used + size > MAX_PARENT_RESPONSES_BYTES:
            kept.append(replace(outcome, response=None))
            omitted.add(outcome.node)
            continue
        used += size
        kept.append(outcome)
    return tuple(kept), frozenset(omitted)


def node_item_id(run_id: str, node: str, attempt: int, shards: int) -> str:
    """The id of the one-shot item that calls ``node`` in run ``run_id`` (its ``attempt``-th
    time): the same for every start of it, as a chained hop's is (its time the run id's, its
    shard and random bits a hash). A second start finds the item and starts nothing."""
    if not 0 < shards <= MAX_SHARDS:
        raise ValueError(f"shards must be in [1, {MAX_SHARDS}]")
    digest = hashlib.sha256(f"workflow|{run_id}|{node}|{attempt}".encode()).digest()
    shard = int.from_bytes(digest[10:14], "big") % shards
    return new_task_id(parse_task_id(run_id).due_ms, shard, lambda n: digest[:n])


def graph_to_dict(graph: Graph) -> dict[str, object]:
    """The graph as its item keeps it (JSON)."""
    return {
        "nodes": list(graph.nodes),
        "edges": [[edge.parent, edge.child, edge.on.value] for edge in graph.edges],
        "joins": {node: join.value for node, join in graph.joins.items()},
    }


def graph_from_dict(data: Mapping[str, object]) -> Graph:
    nodes = data.get("nodes")
    edges = data.get("edges")
    joins = data.get("joins") or {}
    if not isinstance(nodes, list) or not isinstance(edges, list) or not isinstance(joins, dict):
        raise ValueError("a workflow's graph is {nodes: [...], edges: [...], joins: {...}}")
    return Graph(
        tuple(str(node) for node in nodes),
        tuple(Edge(str(parent), str(child), On(on)) for parent, child, on in edges),
        {str(node): Join(join) for node, join in joins.items()},
    )
