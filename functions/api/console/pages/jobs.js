// #/jobs and #/jobs/<id>: sharded batch jobs and their progress (refreshed every 3 s). A job's
// page is what a batch scheduler shows: what it runs (processor, sharding), each step with its
// times (pre, every level with its shards done of all, post), and its result, or which step
// failed, on which attempt, with what answer and, when the processor said, what it raised
// ("KeyError: 'user_id'"). A running job is cancelled from its page (after a confirmation), and
// sent a command for its processor.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { ErrorBox, Json, Pager, Status, parseField, useLoad, usePager, when } from "../ui.js";

// Shards done of all; before pre has planned them there is no count to show.
function Progress({ job }) {
  const p = job.progress;
  if (p.total_shards === null || p.total_shards === undefined) {
    const why = job.status === "running" ? "pre has not planned the shards yet" : "pre planned no shards";
    return html`<span class="progress" data-testid="progress">${why}</span>`;
  }
  return html`<span class="progress">
    <progress max="100" value=${p.percent} aria-label="progress"></progress>
    <span data-testid="progress">${p.done_shards}/${p.total_shards} shards, ${p.percent}%</span>
    ${p.total_items === null || p.total_items === undefined
      ? null
      : html`<span data-testid="progress-items">${p.done_items ?? 0}/${p.total_items} items</span>`}
  </span>`;
}

const STATUSES = ["running", "succeeded", "failed", "cancelled"];

// #/jobs (#/jobs?status=failed: filtered), a page read on until it is full or the list ends.
export function Jobs({ filter }) {
  const [status, setStatus] = useState(filter?.get("status") || "");
  const pager = usePager();
  const { data, error } = useLoad(
    () => readPage("v1/jobs", { status, cursor: pager.cursor }, 20),
    [status, pager.cursor],
    3000,
  );
  return html`<section>
    <h1>Jobs</h1>
    <form class="filters" role="search" onSubmit=${(e) => e.preventDefault()}>
      <label>Status
        <select value=${status} onChange=${(e) => (setStatus(e.target.value), pager.reset())}>
          <option value="">any</option>
          ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select>
      </label>
    </form>
    <${ErrorBox} error=${error} />
    <table data-testid="jobs">
      <thead><tr><th>Name</th><th>Status</th><th>Progress</th><th>Created</th><th>Finished</th></tr></thead>
      <tbody>
        ${data?.items.map(
          (j) => html`<tr>
            <td><a href=${`#/jobs/${j.id}`}>${j.name || j.id}</a></td>
            <td><${Status} status=${j.status} />${j.error && html`<div class="error-text" data-testid="job-list-error">${j.error}</div>`}</td>
            <td><${Progress} job=${j} /></td>
            <td>${when(j.created_at)}</td>
            <td>${when(j.finished_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    <${Pager} pager=${pager} data=${data} none="No jobs on this page." />
  </section>`;
}

// How long from one ISO time to another, in words ("2.4 s", "3 min 5 s").
function took(from, to) {
  if (!from || !to) return "";
  const ms = Date.parse(to) - Date.parse(from);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// Which step a failure names, in words.
function where(f) {
  if (f.step === "shard") return f.shard === null ? `level ${f.level}` : `shard ${f.shard} of level ${f.level}`;
  if (f.step === "notify") return `the notify${f.threshold != null ? ` at ${f.threshold} %` : ""}`;
  return `the ${f.step} step`;
}

// What the processor said it raised: "KeyError: 'user_id'" (the receiver kit tells it).
function raised(error) {
  return error.message ? `${error.type}: ${error.message}` : error.type;
}

// A failure member by member: the step, the attempt, the error the processor said it raised,
// what it answered.
function Failure({ failure, testid }) {
  return html`<dl class="facts failure" data-testid=${testid}>
    <dt>Step</dt><dd data-testid="failure-step">${where(failure)}</dd>
    <dt>Attempt</dt><dd data-testid="failure-attempt">${failure.attempt ?? "not known (no processor call reported it)"}</dd>
    ${failure.error && html`<dt>Error</dt><dd><code class="error-text" data-testid="failure-error">${raised(failure.error)}</code></dd>`}
    <dt>Why</dt><dd>${failure.reason}</dd>
    <dt>HTTP status</dt><dd data-testid="failure-status">${failure.status ?? "no answer"}</dd>
    ${failure.answer && html`<dt>Answer</dt><dd><pre class="json" data-testid="failure-answer">${failure.answer}</pre></dd>`}
  </dl>`;
}

// pre, each level (shards done of all), post: when each ran and how long it took.
function Steps({ job }) {
  const row = (name, span, shards, testid) => html`<tr data-testid=${testid}>
    <th scope="row">${name}</th>
    <td>${shards}</td>
    <td>${when(span?.started_at)}</td>
    <td>${when(span?.finished_at)}</td>
    <td class="number">${took(span?.started_at, span?.finished_at)}</td>
  </tr>`;
  const levels = job.levels || [];
  return html`<table data-testid="job-steps">
    <thead><tr><th>Step</th><th>Shards</th><th>Started</th><th>Finished</th><th>Took</th></tr></thead>
    <tbody>
      ${row("pre", job.pre, "", "step-pre")}
      ${levels.map((level) =>
        row(
          `level ${level.level}`,
          level,
          html`<progress max=${Math.max(level.total_shards, 1)} value=${level.total_shards ? level.done_shards : 1} aria-label=${`level ${level.level}`}></progress>
            <span data-testid="level-shards">${level.done_shards}/${level.total_shards}</span>`,
          `step-level-${level.level}`,
        ),
      )}
      ${job.levels === null && html`<tr><th scope="row">levels</th><td colspan="4" class="empty">not planned: pre has not answered</td></tr>`}
      ${row("post", job.post, "", "step-post")}
    </tbody>
  </table>`;
}

// The processor as the job was given it: a secret header's value arrives as "[redacted]".
function processorText(p) {
  if (p.http) return `${p.http.method} ${p.http.url} (timeout ${p.http.timeout_seconds} s)`;
  if (p.lambda) return `Lambda ${p.lambda.function_arn}`;
  return JSON.stringify(p);
}

// A command to the running job's processor (POST /v1/jobs/{id}/commands): a shard's next progress
// report is answered with it, once. The API names what it refuses (a bad name, args that are not
// a JSON object, 20 pending, a job that has ended): shown as is.
function SendCommand({ id }) {
  const [command, setCommand] = useState("");
  const [args, setArgs] = useState("{}");
  const [sent, setSent] = useState(null);
  const [failed, setFailed] = useState(null);
  const send = async (event) => {
    event.preventDefault();
    setSent(null);
    setFailed(null);
    try {
      const body = { command, args: parseField("args", args) };
      setSent(await api("POST", `v1/jobs/${id}/commands`, body));
    } catch (e) {
      setFailed(e);
    }
  };
  return html`<form class="command" onSubmit=${send} aria-label="Send a command">
    <h2>Send a command</h2>
    <p class="hint">The processor gets it in the answer to a shard's next progress report (the receiver kit's ctx.commands()), once.</p>
    <label>Command <input name="command" value=${command} onInput=${(e) => setCommand(e.target.value)} placeholder="rate" /></label>
    <label>Args (JSON object) <textarea name="args" rows="2" value=${args} onInput=${(e) => setArgs(e.target.value)} /></label>
    <button type="submit">Send</button>
    ${sent && html`<p role="status" data-testid="command-sent">Sent ${sent.command} (${sent.id}) at ${when(sent.sent_at)}.</p>`}
    <${ErrorBox} error=${failed} />
  </form>`;
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
  const sharding = job.sharding;
  const headers = job.processor.http?.headers || {};
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
    ${job.status === "failed" &&
    html`<div class="error" role="alert" data-testid="job-error"><strong>Failed: </strong>${job.error}</div>`}
    <dl class="facts">
      <dt>Id</dt><dd><code>${job.id}</code></dd>
      <dt>Status</dt><dd data-testid="job-status"><${Status} status=${job.status} /></dd>
      <dt>Progress</dt><dd><${Progress} job=${job} />${job.levels?.length > 1 && running ? ` (level ${job.progress.level} of ${job.levels.length})` : ""}</dd>
      <dt>Created, finished</dt><dd>${when(job.created_at)}, ${when(job.finished_at)}</dd>
      <dt>Processor</dt><dd data-testid="job-processor"><code>${processorText(job.processor)}</code>
        ${Object.keys(headers).length > 0 &&
        html`<ul class="headers">${Object.entries(headers).map(([name, value]) => html`<li><code>${name}: ${value}</code></li>`)}</ul>`}</dd>
      <dt>Sharding</dt><dd data-testid="job-sharding">${sharding.min_items_per_shard}–${sharding.max_items_per_shard} items a shard, at most ${sharding.max_shards} shards a level</dd>
      <dt>Notify</dt><dd>${job.notify_every_percent ? `every ${job.notify_every_percent} %` : "no"}</dd>
    </dl>
    ${running && html`<${SendCommand} id=${id} />`}
    ${job.failure && html`<h2>What failed</h2><${Failure} failure=${job.failure} testid="job-failure" />`}
    <h2>Steps</h2>
    <${Steps} job=${job} />
    ${job.notify_failure &&
    html`<h2>Last failed notify</h2><p class="hint">A notify that fails does not fail the job.</p><${Failure} failure=${job.notify_failure} testid="notify-failure" />`}
    ${job.result !== null && job.result !== undefined && html`<h2>Result</h2><${Json} value=${job.result} testid="job-result" />`}
    ${job.result_url && html`<h2>Result</h2><p><a href=${job.result_url} data-testid="job-result-link">The result</a> (${job.result_bytes} bytes, kept apart: the link works for an hour)</p>`}
  </section>`;
}
