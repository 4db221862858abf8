"""A workflow run moving on (docs/workflows.md, section 3): what happens when a run starts and
when one of its nodes ends, over two ports, so that every step can be repeated (a redelivered
message, a retried recording step) and two triggers can do it at once (B and C of a diamond
ending together) without a node starting twice.

The order is the chains' (docs/chains.md, section 2): a node's end is written on the run, its
children are started, and only then is the node's own run recorded by the trigger, so a crash
anywhere repeats these steps; each is a no-op where it was done. A child is created (its item,
under an id derived from the run, the node and its attempt) before it is marked running on the
run: a crash between them leaves a created child that the repeat finds (a duplicate) and marks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shared.domain.workflows import (
    NodeStatus,
    WorkflowRun,
    node_item_id,
    run_status,
    settle_skips,
)


class WorkflowRunStore(Protocol):
    """The run's item; every write is conditional, so a repeat or a race changes nothing twice."""

    def get(self, run_id: str) -> WorkflowRun | None: ...

    def node_ended(self, run_id: str, node: str, status: NodeStatus) -> WorkflowRun | None:
        """The node's end (from ``running``, or already ``status``: a repeat); the run as it is
        after the write (``ReturnValues=ALL_NEW``), or None when the write was refused (the node
        was not running: another end was recorded, or the run was cancelled)."""

    def node_started(self, run_id: str, node: str, item_id: str) -> bool:
        """``pending`` -> ``running`` (with the node's item id); False when it was not pending."""

    def node_skipped(self, run_id: str, node: str) -> bool:
        """``pending`` -> ``skipped``; False when it was not pending."""

    def run_ended(self, run_id: str, status: NodeStatus) -> bool:
        """``running`` -> ``status``; False when the run had ended or was cancelled."""


class NodeStarter(Protocol):
    def start(self, run: WorkflowRun, node: str, item_id: str) -> bool:
        """Create the one-shot item that calls ``node``'s target (with its parents' outcomes in its
        body), written only if no item has that id; False: it existed (a repeat)."""


@dataclass
class WorkflowRuns:
    store: WorkflowRunStore
    starter: NodeStarter
    shards: int

    def started(self, run: WorkflowRun) -> None:
        """A new run (its item written with every node pending): its roots start."""
        self._advance(run)

    def node_ended(self, run_id: str, node: str, status: NodeStatus) -> None:
        """A node's run has its final outcome: record it on the run, then start what it let start
        and skip what it ruled out. Nothing moves on in a cancelled run."""
        run = self.store.node_ended(run_id, node, status)
        if run is not None and run.status is NodeStatus.RUNNING:
            self._advance(run)

    def _advance(self, run: WorkflowRun) -> None:
        statuses = dict(run.statuses)
        settled, ready = settle_skips(run.graph, statuses)
        for node, status in settled.items():
            if status is NodeStatus.SKIPPED and statuses.get(node, NodeStatus.PENDING) is NodeStatus.PENDING:
                self.store.node_skipped(run.run_id, node)
        for node in sorted(ready):
            item_id = node_item_id(run.run_id, node, run.attempts.get(node, 1), self.shards)
            self.starter.start(run, node, item_id)  # first: a crash after it repeats as a duplicate
            self.store.node_started(run.run_id, node, item_id)
            settled[node] = NodeStatus.RUNNING
        final = run_status(run.graph, settled)
        if final is not NodeStatus.RUNNING:
            self.store.run_ended(run.run_id, final)
