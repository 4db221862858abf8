// #/jobs and #/jobs/<id>: sharded batch jobs and their progress (refreshed every 3 s).
import { html } from "../vendor/htm-preact-3.1.1.module.js";
import { api, query } from "../api.js";
import { ErrorBox, Json, Pager, Status, useLoad, usePager, when } from "../ui.js";

const Progress = ({ progress }) => html`<span class="progress">
  <progress max="100" value=${progress.percent} aria-label="progress"></progress>
  <span data-testid="progress">${progress.done_shards}/${progress.total_shards} shards, ${progress.percent}%</span>
</span>`;

export function Jobs() {
  const pager = usePager();
  const { data, error } = useLoad(() => api("GET", "v1/jobs" + query({ limit: 20, cursor: pager.cursor })), [pager.cursor], 3000);
  return html`<section>
    <h1>Jobs</h1>
    <${ErrorBox} error=${error} />
    <table data-testid="jobs">
      <thead><tr><th>Name</th><th>Status</th><th>Progress</th><th>Created</th><th>Finished</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (j) => html`<tr>
            <td><a href=${`#/jobs/${j.id}`}>${j.name || j.id}</a></td>
            <td><${Status} status=${j.status} /></td>
            <td><${Progress} progress=${j.progress} /></td>
            <td>${when(j.created_at)}</td>
            <td>${when(j.finished_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${data && !data.items.length && html`<p class="empty">No jobs on this page.</p>`}
    <${Pager} pager=${pager} nextCursor=${data?.next_cursor} />
  </section>`;
}

export function Job({ id }) {
  const { data: job, error } = useLoad(() => api("GET", `v1/jobs/${id}`), [id], 3000);
  if (!job) return html`<section><h1>Job</h1><${ErrorBox} error=${error} /><p><a href="#/jobs">All jobs</a></p></section>`;
  return html`<section>
    <p><a href="#/jobs">All jobs</a></p>
    <h1>${job.name || job.id}</h1>
    <dl class="facts">
      <dt>Id</dt><dd><code>${job.id}</code></dd>
      <dt>Status</dt><dd data-testid="job-status"><${Status} status=${job.status} /></dd>
      <dt>Progress</dt><dd><${Progress} progress=${job.progress} /> (level ${job.progress.level})</dd>
      <dt>Created, finished</dt><dd>${when(job.created_at)}, ${when(job.finished_at)}</dd>
    </dl>
    ${job.error && html`<h2>Error</h2><${Json} value=${job.error} testid="job-error" />`}
    ${job.result !== null && job.result !== undefined && html`<h2>Result</h2><${Json} value=${job.result} testid="job-result" />`}
  </section>`;
}
