// #/ (home): is anything wrong? Failed tasks, tasks Sundial paused after failures in a row
// (pause_after_failures: paused_reason set), dead letters not redriven yet, failed jobs; each a
// count and its first few, linked. Every list comes from a filtered list route (an index query,
// never a scan), whose pages may come back short with a cursor: the count follows the cursors for
// a few pages and says "at least" when it stopped before the end. Refreshed every 10 s.
import { html } from "../vendor/htm-preact-3.1.1.module.js";
import { api, query } from "../api.js";
import { Status, letterHref, letterOf, useLoad, when } from "../ui.js";

const PAGES = 5;
const SHOWN = 8;

// The items of a filtered list route that `keep` keeps, up to PAGES pages of 100; `more` when
// the last page read still had a cursor (there may be more than counted).
async function gather(path, params, keep = () => true) {
  const items = [];
  let cursor = null;
  for (let page = 0; page < PAGES; page++) {
    const answer = await api("GET", path + query({ ...params, limit: 100, cursor }));
    items.push(...answer.items.filter(keep));
    cursor = answer.next_cursor;
    if (!cursor) return { items, more: false };
  }
  return { items, more: true };
}

// Each check on its own: one that fails (an API without the filter) says so and the rest show.
const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error }));

function load() {
  return Promise.all([
    settle(gather("v1/tasks", { status: "failed" })),
    settle(gather("v1/tasks", { status: "paused" }, (t) => Boolean(t.paused_reason))),
    settle(gather("v1/dead-letters", { status: "dead_lettered" })),
    settle(gather("v1/jobs", { status: "failed" })),
  ]).then(([failedTasks, selfPaused, deadLetters, failedJobs]) => ({ failedTasks, selfPaused, deadLetters, failedJobs }));
}

const count = (found) => `${found.more ? "at least " : ""}${found.items.length}`;

// One question: its count (red when any, green when none), the first few, a link to all.
function Check({ title, found, testid, link, item, none }) {
  if (!found) return null;
  if (found.error) {
    return html`<section class="check check-unknown" data-testid=${testid}>
      <h2>${title}</h2>
      <p class="error-text">Could not be read: ${found.error.status ? `${found.error.status} ${found.error.code}: ` : ""}${found.error.message}</p>
    </section>`;
  }
  const { items, more } = found.value;
  const bad = items.length > 0;
  return html`<section class=${`check ${bad ? "check-bad" : "check-good"}`} data-testid=${testid}>
    <h2>${title} <span class="count" data-testid="count">${count(found.value)}</span></h2>
    ${!bad && html`<p class="empty">${none}</p>`}
    ${bad &&
    html`<ul>
      ${items.slice(0, SHOWN).map((i) => html`<li>${item(i)}</li>`)}
    </ul>`}
    ${(items.length > SHOWN || more) && html`<p><a href=${link}>All of them</a></p>`}
  </section>`;
}

export function Home() {
  const { data, error } = useLoad(load, [], 10_000);
  const checks = data ? [data.failedTasks, data.selfPaused, data.deadLetters, data.failedJobs] : [];
  const bad = checks.filter((c) => !c.error && c.value.items.length > 0).length;
  const unread = checks.filter((c) => c.error).length;
  let verdict = "Nothing is wrong: no failed task, no task paused after failures, no dead letter waiting, no failed job.";
  if (bad) verdict = `${bad} of ${checks.length} checks need attention (below).`;
  else if (unread) verdict = "Nothing wrong in what could be read, but some checks could not be read (below).";
  return html`<section>
    <h1>Home</h1>
    ${data &&
    html`<p class=${`verdict ${bad ? "verdict-bad" : unread ? "verdict-unknown" : "verdict-good"}`} data-testid="verdict">${verdict}</p>`}
    ${error && html`<p class="error-text">${error.message}</p>`}
    <div class="checks">
      <${Check}
        title="Failed tasks"
        testid="failed-tasks"
        found=${data?.failedTasks}
        link="#/tasks"
        none="No task has failed."
        item=${(t) => html`<a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a> <${Status} status=${t.status} />
          ${t.last_run && html` <span class="hint">last run ${when(t.last_run.scheduled_for)}</span>`}`}
      />
      <${Check}
        title="Paused after failures"
        testid="self-paused"
        found=${data?.selfPaused}
        link="#/tasks"
        none="No task was paused by Sundial."
        item=${(t) => html`<a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a> <span class="hint">${t.paused_reason}</span>`}
      />
      <${Check}
        title="Dead letters waiting"
        testid="dead-letters-waiting"
        found=${data?.deadLetters}
        link="#/dead-letters"
        none="No dead letter waits to be redriven."
        item=${(d) => html`<a href=${letterHref(d)}>${letterOf(d)}</a> <span class="hint">${when(d.failed_at)}: ${d.reason}</span>`}
      />
      <${Check}
        title="Failed jobs"
        testid="failed-jobs"
        found=${data?.failedJobs}
        link="#/jobs"
        none="No job has failed."
        item=${(j) => html`<a href=${`#/jobs/${j.id}`}>${j.name || j.id}</a> <span class="hint">${j.error}</span>`}
      />
    </div>
  </section>`;
}
