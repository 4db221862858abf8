// #/jobs and #/jobs/<id>: sharded batch jobs and their progress (refreshed every 3 s); a running
// job is cancelled from its page (after a confirmation).
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
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
  const { data: job, error, reload } = useLoad(() => api("GET", `v1/jobs/${id}`), [id], 3000);
  const [outcome, setOutcome] = useState(null);
  const [confirming, setConfirming] = useState(false);
  if (!job) return html`<section><h1>Job</h1><${ErrorBox} error=${error} /><p><a href="#/jobs">All jobs</a></p></section>`;

  // the API refuses a job that has ended or whose post has begun (409 job_finished): shown as is
  const cancel = async () => {
    setOutcome(null);
    setConfirming(false);
    try {
      await api("POST", `v1/jobs/${id}/cancel`);
      setOutcome({ done: "Cancelled: no shard starts from now on and post is not called." });
    } catch (e) {
      setOutcome({ error: e });
    }
    reload();
  };
  const running = job.status === "running";
  return html`<section>
    <p><a href="#/jobs">All jobs</a></p>
    <h1>${job.name || job.id}</h1>
    ${running &&
    html`<div class="actions" role="group" aria-label="Job actions">
      ${!confirming && html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Cancel job</button>`}
      ${confirming &&
      html`<span class="confirm">Cancel this job? No shard starts after it and post is not called.
        <button type="button" class="danger" onClick=${cancel}>Yes, cancel it</button>
        <button type="button" onClick=${() => setConfirming(false)}>Keep it</button></span>`}
    </div>`}
    ${outcome?.done && html`<p role="status" data-testid="outcome">${outcome.done}</p>`}
    <${ErrorBox} error=${outcome?.error || error} />
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
