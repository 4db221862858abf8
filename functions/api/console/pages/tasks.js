// #/tasks: the tenant's tasks, newest first, filtered by status and name prefix, a page at a time
// (#/tasks?status=failed opens it filtered); each with how its last run went (red when it failed:
// a failed task never looks green). A filtered page is read on until it is full or the list ends.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { readPage } from "../api.js";
import { ErrorBox, Pager, Status, describe, useLoad, usePager, when } from "../ui.js";

// The API's status filter: a task's status, or paused_after_failures (those Sundial paused itself).
const STATUSES = ["scheduled", "paused", "paused_after_failures", "completed", "failed", "cancelled"];

// The task's last run: its status (coloured as every status is) and when it was scheduled.
export const LastRun = ({ run }) =>
  run
    ? html`<span data-testid="last-run"><${Status} status=${run.status} /> <span class="hint">${when(run.scheduled_for)}</span></span>`
    : html`<span data-testid="last-run" class="empty">not run yet</span>`;
export const PAGE_SIZE = 20;

export function Tasks({ filter }) {
  const [status, setStatus] = useState(filter?.get("status") || "");
  const [prefix, setPrefix] = useState("");
  const pager = usePager();
  const { data, error } = useLoad(
    () => readPage("v1/tasks", { status, name_prefix: prefix, cursor: pager.cursor }, PAGE_SIZE),
    [status, prefix, pager.cursor],
  );
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
      <a class="button" href="#/new">New task</a>
    </form>
    <${ErrorBox} error=${error} />
    <table data-testid="tasks">
      <thead><tr><th>Name</th><th>Status</th><th>Last run</th><th>Schedule</th><th>Next fire</th><th>Created</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (t) => html`<tr>
            <td><a href=${`#/tasks/${t.id}`}>${t.name || t.id}</a></td>
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
