// #/workflows/<id>/runs/<run>[/nodes/<node>]: a workflow run drawn as its graph, each node coloured
// by its status; a node that has a run links to it, shown under the graph (its attempts, lateness,
// last error). Cancel (a running run) and Retry (a failed or cancelled one), each asked first.
// Refreshed every 3 s while the run is running. #/workflow-runs?status=failed: every workflow's
// failed runs, newest first, a page read on until it is full or the list ends.
import { html, useEffect, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { Graph } from "../graph.js";
import { ErrorBox, Pager, Status, useLoad, usePager, when } from "../ui.js";
import { PAGE_SIZE } from "./tasks.js";
import { Runs, tally } from "./workflows.js";

export function WorkflowRuns({ filter }) {
  const status = filter?.get("status") || "failed";
  const pager = usePager();
  const { data, error } = useLoad(() => readPage("v1/workflow-runs", { status, cursor: pager.cursor }, PAGE_SIZE), [status, pager.cursor]);
  return html`<section>
    <p><a href="#/workflows">All workflows</a></p>
    <h1>Workflow runs: ${status}</h1>
    <${ErrorBox} error=${error} />
    <${Runs} runs=${data?.items || []} />
    <${Pager} pager=${pager} data=${data} none=${`No ${status} workflow run.`} />
  </section>`;
}

const ACTIONS = {
  cancel: {
    label: "Cancel run",
    ask: "Cancel this run? Every node not ended is cancelled and no node starts after it.",
    yes: "Yes, cancel it",
    done: "Cancelled.",
  },
  retry: {
    label: "Retry run",
    ask: "Run this run's failed, cancelled and skipped nodes again? Nodes that succeeded do not run again.",
    yes: "Yes, retry it",
    done: "Retried: its failed and cancelled nodes run again.",
  },
};

export function WorkflowRun({ id, runId, node }) {
  const [every, setEvery] = useState(3000);
  const run = useLoad(() => api("GET", `v1/workflows/${id}/runs/${runId}`), [id, runId], every);
  const r = run.data;
  useEffect(() => setEvery(r && r.status !== "running" ? 0 : 3000), [r?.status]);
  const [outcome, setOutcome] = useState(null);
  const [confirming, setConfirming] = useState(null);
  const back = html`<p><a href=${`#/workflows/${id}`}>The workflow</a> · <a href="#/workflows">All workflows</a></p>`;
  if (!r) return html`<section>${back}<h1>Workflow run</h1><${ErrorBox} error=${run.error} /></section>`;

  // the API refuses a run in the wrong state (409 invalid_state): shown as it answered
  const act = (action) => async () => {
    setOutcome(null);
    setConfirming(null);
    try {
      await api("POST", `v1/workflows/${id}/runs/${runId}/${action}`);
      setOutcome({ done: ACTIONS[action].done });
    } catch (error) {
      setOutcome({ error });
    }
    run.reload();
  };
  const offered = [r.status === "running" && "cancel", ["failed", "cancelled"].includes(r.status) && "retry"].filter(Boolean);
  const base = `#/workflows/${id}/runs/${runId}`;
  const href = (n) => (r.nodes[n]?.run_id ? `${base}/nodes/${n}` : null);
  return html`<section>
    ${back}
    <h1>Run <code>${r.run_id}</code></h1>
    <div class="actions" role="group" aria-label="Run actions">
      ${!confirming && offered.map((a) => html`<button type="button" class=${a === "cancel" ? "danger" : ""} onClick=${() => setConfirming(a)}>${ACTIONS[a].label}</button>`)}
      ${confirming &&
      html`<span class="confirm">${ACTIONS[confirming].ask}
        <button type="button" class="danger" onClick=${act(confirming)}>${ACTIONS[confirming].yes}</button>
        <button type="button" onClick=${() => setConfirming(null)}>Keep it as it is</button></span>`}
    </div>
    ${outcome?.done && html`<p role="status" data-testid="outcome">${outcome.done}</p>`}
    <${ErrorBox} error=${outcome?.error || run.error} />
    <dl class="facts">
      <dt>Status</dt><dd data-testid="run-status"><${Status} status=${r.status} /></dd>
      <dt>Nodes</dt><dd data-testid="run-tally">${tally(r)}</dd>
      <dt>Version</dt><dd>${r.version}</dd>
      <dt>Started, ended</dt><dd>${when(r.created_at)}, ${when(r.ended_at)}</dd>
    </dl>
    <${Graph} graph=${r.graph} states=${r.nodes} href=${href} selected=${node} />
    <p class="hint">A node that has run links to its run.</p>
    ${node && html`<${NodeRun} id=${id} runId=${runId} node=${node} state=${r.nodes[node]} close=${base} />`}
    <h2>Nodes</h2>
    <${NodeTable} run=${r} href=${href} />
  </section>`;
}

// A node's run (GET .../nodes/<node>): as a task's run is shown, reloaded when the node moves on
// and every 3 s while it runs (its attempts and last error change under one node status).
function NodeRun({ id, runId, node, state, close }) {
  const started = Boolean(state?.run_id);
  const answer = useLoad(
    () => (started ? api("GET", `v1/workflows/${id}/runs/${runId}/nodes/${node}`) : Promise.resolve(null)),
    [id, runId, node, started, state?.status, state?.attempt],
    state?.status === "running" ? 3000 : 0,
  );
  const n = answer.data;
  return html`<div class="panel" data-testid="node-run">
    <h2>Node <code>${node}</code> <a class="close" href=${close}>close</a></h2>
    ${!state && html`<p class="empty">No node of that id in this run.</p>`}
    ${state && !started && html`<p class="empty">No run: the node is ${state.status}.</p>`}
    <${ErrorBox} error=${answer.error} />
    ${n &&
    html`<dl class="facts">
      <dt>Node</dt><dd data-testid="node-status"><${Status} status=${state.status} /> (attempt ${state.attempt} of the workflow run)</dd>
      <dt>Run</dt><dd><code>${n.run_id}</code>: <span data-testid="node-run-status"><${Status} status=${n.status} /></span></dd>
      <dt>Attempts</dt><dd class="number" data-testid="node-attempts">${n.attempts}</dd>
      <dt>Scheduled for, fired at</dt><dd>${when(n.scheduled_for)}, ${when(n.fired_at)}</dd>
      <dt>Lateness</dt><dd data-testid="node-lateness">${n.lateness_ms != null ? `${n.lateness_ms} ms` : "—"}</dd>
      <dt>Throttled</dt><dd>${n.throttled_ms ? `${n.throttled_ms} ms` : "—"}</dd>
      <dt>Started, ended</dt><dd>${when(state.started_at)}, ${when(state.ended_at)}</dd>
      <dt>Last error</dt><dd class="error-text" data-testid="node-error">${n.last_error || state.error || ""}</dd>
    </dl>`}
  </div>`;
}

function NodeTable({ run, href }) {
  return html`<table data-testid="run-nodes">
    <thead><tr><th>Node</th><th>Status</th><th>Attempt</th><th>Started</th><th>Ended</th><th>Error</th></tr></thead>
    <tbody>
      ${run.graph.nodes.map((n) => {
        const s = run.nodes[n] || {};
        const link = href(n);
        return html`<tr>
          <td>${link ? html`<a href=${link}><code>${n}</code></a>` : html`<code>${n}</code>`}</td>
          <td><${Status} status=${s.status} /></td>
          <td class="number">${s.attempt}</td>
          <td>${when(s.started_at)}</td>
          <td>${when(s.ended_at)}</td>
          <td class="error-text">${s.error || ""}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}
