// #/ (home): is anything wrong? Five checks: failed tasks, tasks Sundial paused after failures in a
// row (pause_after_failures), dead letters waiting for a redrive, failed jobs, failed workflow runs.
// Each count is exact, from GET /v1/overview (the status index counted: docs/status-index.md); a
// check is red whenever its count is not 0, and lists its first few from its filtered list route,
// linked, with "N shown, more…" and a link to all of them when there are more. Refreshed every 10 s.
import { html } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { Status, letterHref, letterOf, useLoad, when } from "../ui.js";
import { tally } from "./workflows.js";

const SHOWN = 8;

// Each part on its own: one that fails says so and the rest show.
const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error }));

// The checks: where each count is in the overview, the list of its first few, where "all" is.
const CHECKS = [
  {
    testid: "failed-tasks",
    title: "Failed tasks",
    count: (o) => o.tasks?.failed,
    list: ["v1/tasks", { status: "failed" }],
    all: "#/tasks?status=failed",
    none: "No task has failed.",
    item: (t) => html`<a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a> <${Status} status=${t.status} />
      ${t.last_run && html` <span class="hint">last run ${when(t.last_run.scheduled_for)}</span>`}`,
  },
  {
    testid: "self-paused",
    title: "Paused after failures",
    count: (o) => o.tasks?.paused_after_failures,
    list: ["v1/tasks", { status: "paused_after_failures" }],
    all: "#/tasks?status=paused_after_failures",
    none: "No task was paused by Sundial.",
    item: (t) => html`<a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a> <span class="hint" title=${t.paused_reason}>${t.paused_reason}</span>`,
  },
  {
    testid: "dead-letters-waiting",
    title: "Dead letters waiting",
    count: (o) => o.dead_letters?.waiting,
    list: ["v1/dead-letters", { status: "dead_lettered" }],
    all: "#/dead-letters?status=dead_lettered",
    none: "No dead letter waits to be redriven.",
    item: (d) => html`<a href=${letterHref(d)}>${letterOf(d)}</a> <span class="hint" title=${d.reason}>${when(d.failed_at)}: ${d.reason}</span>`,
  },
  {
    testid: "failed-jobs",
    title: "Failed jobs",
    count: (o) => o.jobs?.failed,
    list: ["v1/jobs", { status: "failed" }],
    all: "#/jobs?status=failed",
    none: "No job has failed.",
    item: (j) => html`<a href=${`#/jobs/${j.id}`}>${j.name || j.id}</a> <span class="hint" title=${j.error}>${j.error}</span>`,
  },
  {
    testid: "failed-workflow-runs",
    title: "Failed workflow runs",
    count: (o) => o.workflow_runs?.failed,
    list: ["v1/workflow-runs", { status: "failed" }],
    all: "#/workflow-runs?status=failed",
    none: "No workflow run has failed.",
    item: (r) => html`<a href=${`#/workflows/${r.workflow_id}/runs/${r.run_id}`} title=${`a run of workflow ${r.workflow_id}`}><code>${r.run_id}</code></a>
      <span class="hint">${tally(r)}, ended ${when(r.ended_at)}</span>`,
  },
];

async function load() {
  const [overview, ...lists] = await Promise.all([
    settle(api("GET", "v1/overview")),
    ...CHECKS.map((check) => settle(readPage(check.list[0], check.list[1], SHOWN))),
  ]);
  return CHECKS.map((check, i) => {
    const count = overview.value ? check.count(overview.value) : null;
    return { check, count: Number.isInteger(count) ? count : null, countError: overview.error, list: lists[i] };
  });
}

const reason = (error) => (error ? `${error.status ? `${error.status} ${error.code}: ` : ""}${error.message}` : "no count in the answer");

// One check: its exact count (red when not 0, green when 0), its first few, and a link to all.
function Check({ found }) {
  const { check, count, countError, list } = found;
  if (count === null) {
    return html`<section class="check check-unknown" data-testid=${check.testid}>
      <h2>${check.title} <span class="count" data-testid="count">?</span></h2>
      <p class="error-text">Could not be counted: ${reason(countError)}</p>
    </section>`;
  }
  const items = list.value?.items || [];
  const more = count > items.length || Boolean(list.value?.next_cursor);
  return html`<section class=${`check ${count ? "check-bad" : "check-good"}`} data-testid=${check.testid}>
    <h2>${check.title} <span class="count" data-testid="count">${count}</span></h2>
    ${count === 0 && html`<p class="empty">${check.none}</p>`}
    ${list.error && html`<p class="error-text">The list could not be read: ${reason(list.error)}</p>`}
    ${items.length > 0 &&
    html`<ul>
      ${items.map((i) => html`<li>${check.item(i)}</li>`)}
    </ul>`}
    ${count > 0 &&
    html`<p data-testid="more">${more ? html`${items.length} shown, <a href=${check.all}>more…</a>` : html`<a href=${check.all}>All of them</a>`}</p>`}
  </section>`;
}

export function Home() {
  const { data, error } = useLoad(load, [], 10_000);
  const checks = data || [];
  const bad = checks.filter((c) => c.count).length;
  const unread = checks.filter((c) => c.count === null).length;
  let verdict =
    "Nothing is wrong: no failed task, no task paused after failures, no dead letter waiting, no failed job, no failed workflow run.";
  if (bad) verdict = `${bad} of ${checks.length} checks need attention (below).`;
  else if (unread) verdict = "Nothing wrong in what could be counted, but some checks could not be counted (below).";
  return html`<section>
    <h1>Home</h1>
    ${data &&
    html`<p class=${`verdict ${bad ? "verdict-bad" : unread ? "verdict-unknown" : "verdict-good"}`} data-testid="verdict">${verdict}</p>`}
    ${error && html`<p class="error-text">${error.message}</p>`}
    <div class="checks">${checks.map((found) => html`<${Check} found=${found} key=${found.check.testid} />`)}</div>
  </section>`;
}
