// #/tasks: the tenant's tasks, newest first, filtered by status, name prefix or tag, a page at a
// time (#/tasks?status=failed opens it filtered); each with how its last run went (red when it
// failed: a failed task never looks green). A filtered page is read on until it is full or the list
// ends. With exactly one filter set, a bulk action pauses, resumes or cancels every task it selects:
// counted first by a dry run, then done a step at a time (POST /v1/tasks:pause... and next_cursor).
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { ErrorBox, Pager, Status, describe, useLoad, usePager, when } from "../ui.js";

// The API's status filter: a task's status, or paused_after_failures (those Sundial paused itself).
const STATUSES = ["scheduled", "paused", "paused_after_failures", "completed", "failed", "cancelled"];

// The task's last run: its status (coloured as every status is) and when it was scheduled.
export const LastRun = ({ run }) =>
  run
    ? html`<span data-testid="last-run"><${Status} status=${run.status} /> <span class="hint">${when(run.scheduled_for)}</span></span>`
    : html`<span data-testid="last-run" class="empty">not run yet</span>`;
export const PAGE_SIZE = 20;

// A task's tags, as small labels (nothing when it has none).
export const Tags = ({ tags }) =>
  Object.entries(tags || {}).map(([k, v]) => html`<span class="tag" data-testid="tag">${k}:${v}</span> `);

export function Tasks({ filter }) {
  const [status, setStatus] = useState(filter?.get("status") || "");
  const [prefix, setPrefix] = useState("");
  const [tag, setTag] = useState(filter?.get("tag") || "");
  const pager = usePager();
  const list = useLoad(
    () => readPage("v1/tasks", { status, name_prefix: prefix, tag, cursor: pager.cursor }, PAGE_SIZE),
    [status, prefix, tag, pager.cursor],
  );
  const { data, error } = list;
  const filtered = (set) => (e) => {
    set(e.target.value);
    pager.reset();
  };
  return html`<section>
    <h1>Tasks</h1>
    <form class="filters" role="search" onSubmit=${(e) => e.preventDefault()}>
      <label>Status
        <select value=${status} onChange=${filtered(setStatus)}>
          <option value="">any</option>
          ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select>
      </label>
      <label>Name starts with <input type="search" value=${prefix} onInput=${filtered(setPrefix)} /></label>
      <label>Tag (key:value) <input type="search" value=${tag} placeholder="team:orders" onInput=${filtered(setTag)} /></label>
      <a class="button" href="#/new">New task</a>
    </form>
    <${Bulk} selector=${selectorOf(status, prefix, tag)} done=${list.reload} />
    <${ErrorBox} error=${error} />
    <table data-testid="tasks">
      <thead><tr><th>Name</th><th>Status</th><th>Last run</th><th>Schedule</th><th>Next fire</th><th>Created</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (t) => html`<tr>
            <td><a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a> <${Tags} tags=${t.tags} /></td>
            <td><${Status} status=${t.status} />${t.paused_reason && html`<div class="hint">${t.paused_reason}</div>`}</td>
            <td><${LastRun} run=${t.last_run} /></td>
            <td>${describe(t.schedule)}</td>
            <td>${t.status === "paused" ? html`<span class="empty">none while paused</span>` : when(t.next_fire_at)}</td>
            <td>${when(t.created_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    <${Pager} pager=${pager} data=${data} none="No tasks on this page." />
  </section>`;
}

// The selector of a bulk action: the one filter set (null: none, or more than one).
function selectorOf(status, prefix, tag) {
  const given = [];
  if (status) given.push({ status });
  if (prefix) given.push({ name_prefix: prefix });
  if (tag) {
    const at = tag.indexOf(":");
    given.push(at > 0 ? { tag: { [tag.slice(0, at)]: tag.slice(at + 1) } } : { tag: { [tag]: "" } });
  }
  return given.length === 1 ? given[0] : null;
}

const ACTIONS = { pause: "paused", resume: "resumed", cancel: "cancelled" };

// Every step of a bulk action (a dry run or not) from the start to the end: their counts added up.
async function allSteps(action, selector, dryRun, progress) {
  const total = { changed: 0, unchanged: 0, errors: [], steps: 0 };
  let cursor = null;
  do {
    const step = await api("POST", `v1/tasks:${action}`, { selector, dry_run: dryRun, ...(cursor && { cursor }) });
    total.changed += step.changed;
    total.unchanged += step.unchanged;
    total.errors.push(...step.errors);
    total.steps++;
    cursor = step.next_cursor;
    progress({ ...total });
  } while (cursor);
  return total;
}

// Pause, resume or cancel every task the list's one filter selects: "Count" runs the dry run to the
// end (how many would change), then the button that names that count does it.
function Bulk({ selector, done }) {
  const [action, setAction] = useState("pause");
  const [state, setState] = useState(null); // {phase: "counting" | "counted" | "doing" | "done", ...totals}
  const [error, setError] = useState(null);
  const key = JSON.stringify([selector, action]);
  const [shownFor, setShownFor] = useState(key);
  if (shownFor !== key) {
    setShownFor(key);
    setState(null);
    setError(null);
  }
  if (!selector) {
    return html`<p class="hint bulk" data-testid="bulk-hint">Set exactly one filter (status, name or tag) to pause, resume or cancel all its tasks.</p>`;
  }
  const run = (dryRun) => async () => {
    setError(null);
    setState({ phase: dryRun ? "counting" : "doing", changed: 0, unchanged: 0, errors: [] });
    try {
      const total = await allSteps(action, selector, dryRun, (t) => setState({ phase: dryRun ? "counting" : "doing", ...t }));
      setState({ phase: dryRun ? "counted" : "done", ...total });
      if (!dryRun) done();
    } catch (e) {
      setError(e);
      setState(null);
    }
  };
  const busy = state?.phase === "counting" || state?.phase === "doing";
  return html`<div class="bulk" role="group" aria-label="Act on every task of this filter">
    <label>Bulk action
      <select value=${action} disabled=${busy} onChange=${(e) => setAction(e.target.value)}>
        ${Object.keys(ACTIONS).map((a) => html`<option value=${a}>${a}</option>`)}
      </select>
    </label>
    <button type="button" disabled=${busy} onClick=${run(true)}>Count (dry run)</button>
    ${state?.phase === "counting" && html`<span class="hint">counting… ${state.changed} so far</span>`}
    ${state?.phase === "counted" &&
    html`<span data-testid="bulk-count">${state.changed} would be ${ACTIONS[action]}${state.unchanged ? `, ${state.unchanged} left as they are` : ""}.</span>
      ${state.changed > 0 && html`<button type="button" class=${action === "cancel" ? "danger" : "primary"} onClick=${run(false)}>
        ${action[0].toUpperCase() + action.slice(1)} ${state.changed} task${state.changed === 1 ? "" : "s"}</button>`}`}
    ${state?.phase === "doing" && html`<span class="hint">working… ${state.changed} ${ACTIONS[action]} so far</span>`}
    ${state?.phase === "done" &&
    html`<span role="status" data-testid="bulk-done">${state.changed} ${ACTIONS[action]}${state.unchanged ? `, ${state.unchanged} left as they were` : ""}${state.errors.length ? `, ${state.errors.length} failed` : ""}.</span>`}
    ${state?.errors?.length > 0 &&
    html`<ul class="error-text" data-testid="bulk-errors">${state.errors.map((e) => html`<li><code>${e.task_id}</code>: ${e.error.code}: ${e.error.message}</li>`)}</ul>`}
    <${ErrorBox} error=${error} />
  </div>`;
}
