// #/workflows and #/workflows/<id>: workflows (tasks joined in a graph) a page at a time, and one
// workflow: its definition (drawn, then node by node and edge by edge), its runs newest first
// (refreshed every 3 s) and Run now.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { Graph } from "../graph.js";
import { ErrorBox, Json, Pager, Status, describe, useLoad, usePager, when } from "../ui.js";
import { PAGE_SIZE } from "./tasks.js";

export function Workflows() {
  const pager = usePager();
  const { data, error } = useLoad(
    () => readPage("v1/workflows", { cursor: pager.cursor }, PAGE_SIZE),
    [pager.cursor],
  );
  return html`<section>
    <h1>Workflows</h1>
    <${ErrorBox} error=${error} />
    <table data-testid="workflows">
      <thead><tr><th>Name</th><th>Id</th><th>Version</th><th>Schedule</th><th>Nodes</th><th>Created</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (w) => html`<tr>
            <td><a href=${`#/workflows/${w.id}`}>${w.name || w.id}</a></td>
            <td><code>${w.id}</code></td>
            <td class="number">${w.version}</td>
            <td>${w.schedule ? describe(w.schedule) : html`<span class="empty">none: run now only</span>`}</td>
            <td class="number" data-testid="node-count">${w.nodes.length}</td>
            <td>${when(w.created_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    <${Pager} pager=${pager} data=${data} none=${html`No workflows on this page. Workflows are registered with <code>POST /v1/workflows</code>.`} />
  </section>`;
}

// The graph's form a run carries ({nodes: [ids], edges, joins}), from a workflow's definition.
const graphOf = (w) => ({
  nodes: w.nodes.map((n) => n.id),
  edges: w.edges,
  joins: Object.fromEntries(w.nodes.filter((n) => n.join === "any").map((n) => [n.id, "any"])),
});

function targetText(n) {
  const targets = n.targets || [n.target];
  return targets.map((t) => (t.http ? `${t.http.method} ${t.http.url}` : Object.keys(t)[0])).join(", ");
}

// How many nodes of a run stand in each status: "2 succeeded, 1 running".
export function tally(run) {
  const counts = {};
  for (const n of Object.values(run.nodes)) counts[n.status] = (counts[n.status] || 0) + 1;
  return Object.entries(counts)
    .map(([status, n]) => `${n} ${status}`)
    .join(", ");
}

export function Workflow({ id }) {
  const workflow = useLoad(() => api("GET", `v1/workflows/${id}`), [id]);
  const pager = usePager();
  const runs = useLoad(() => readPage(`v1/workflows/${id}/runs`, { cursor: pager.cursor }, PAGE_SIZE), [id, pager.cursor], 3000);
  const [outcome, setOutcome] = useState(null);
  const w = workflow.data;
  if (!w) return html`<section><h1>Workflow</h1><${ErrorBox} error=${workflow.error} /><p><a href="#/workflows">All workflows</a></p></section>`;

  const runNow = async () => {
    setOutcome(null);
    try {
      setOutcome({ started: (await api("POST", `v1/workflows/${id}/run`)).run_id });
      pager.reset();
      runs.reload();
    } catch (error) {
      setOutcome({ error });
    }
  };
  return html`<section>
    <p><a href="#/workflows">All workflows</a></p>
    <h1 data-testid="workflow-name">${w.name || w.id}</h1>
    <div class="actions" role="group" aria-label="Workflow actions">
      <button type="button" onClick=${runNow}>Run now</button>
    </div>
    ${outcome?.started &&
    html`<p role="status" data-testid="outcome">Run started: <a href=${`#/workflows/${id}/runs/${outcome.started}`}><code>${outcome.started}</code></a></p>`}
    <${ErrorBox} error=${outcome?.error || workflow.error} />
    <dl class="facts">
      <dt>Id</dt><dd><code>${w.id}</code></dd>
      <dt>Version</dt><dd>${w.version} (a run follows the version it started with)</dd>
      <dt>Schedule</dt><dd data-testid="workflow-schedule">${w.schedule
        ? html`${describe(w.schedule)}${w.schedule_task_id && html` — its task <a href=${`#/tasks/${w.schedule_task_id}`}><code>${w.schedule_task_id}</code></a>`}`
        : "none: runs start with Run now (POST .../run)"}</dd>
      <dt>Created, updated</dt><dd>${when(w.created_at)}, ${when(w.updated_at)}</dd>
    </dl>
    <h2>Runs</h2>
    <${ErrorBox} error=${runs.error} />
    <${Runs} id=${id} runs=${runs.data?.items || []} />
    <${Pager} pager=${pager} data=${runs.data} none="No runs on this page." />
    <h2>Graph</h2>
    <${Graph} graph=${graphOf(w)} />
    <div class="columns">
      <div>
        <h2>Nodes</h2>
        <table data-testid="workflow-nodes">
          <thead><tr><th>Node</th><th>Target</th><th>Join</th><th>Retry</th></tr></thead>
          <tbody>
            ${w.nodes.map(
              (n) => html`<tr>
                <td><code>${n.id}</code></td>
                <td><code>${targetText(n)}</code></td>
                <td>${n.join}</td>
                <td>${n.retry.max_attempts} attempt${n.retry.max_attempts === 1 ? "" : "s"}, ${n.retry.backoff} from ${n.retry.interval_seconds} s</td>
              </tr>`,
            )}
          </tbody>
        </table>
      </div>
      <div>
        <h2>Edges</h2>
        <table data-testid="workflow-edges">
          <thead><tr><th>From</th><th>To</th><th>On</th></tr></thead>
          <tbody>
            ${w.edges.map((e) => html`<tr><td><code>${e.from}</code></td><td><code>${e.to}</code></td><td>${e.on}</td></tr>`)}
          </tbody>
        </table>
      </div>
    </div>
    <details class="change">
      <summary>The definition as JSON (targets, payloads)</summary>
      <${Json} value=${{ nodes: w.nodes, edges: w.edges }} testid="workflow-json" />
    </details>
  </section>`;
}

// Runs as a table, each linked to its page: one workflow's (`id`), or any workflow's (each run's
// workflow_id, shown in a column of its own).
export function Runs({ id, runs }) {
  if (!runs.length) return null;
  return html`<table data-testid="workflow-runs">
    <thead><tr><th>Run</th>${!id && html`<th>Workflow</th>`}<th>Status</th><th>Nodes</th><th>Version</th><th>Started</th><th>Ended</th></tr></thead>
    <tbody>
      ${runs.map(
        (r) => html`<tr>
          <td><a href=${`#/workflows/${id || r.workflow_id}/runs/${r.run_id}`}><code>${r.run_id}</code></a></td>
          ${!id && html`<td><a href=${`#/workflows/${r.workflow_id}`}><code>${r.workflow_id}</code></a></td>`}
          <td><${Status} status=${r.status} /></td>
          <td>${tally(r)}</td>
          <td class="number">${r.version}</td>
          <td>${when(r.created_at)}</td>
          <td>${when(r.ended_at)}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}
