// #/tasks/<id>: one task, its next times, its runs and their lateness; pause, resume, run now,
// cancel, and a new schedule (previewed before it is saved). Refreshes every 3 s. Its runs come 100
// a page, newest first, with Next / Previous and "more" while there are older ones. A recurring
// task can be backfilled (its occurrences in a past window fired at a pace), and its backfills are
// listed with their progress and a Cancel.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { LatenessChart } from "../chart.js";
import { ErrorBox, Json, NextTimes, Pager, Status, describe, inZone, parseField, shortIds, useLoad, usePager, when, zoneOf } from "../ui.js";
import { ScheduleField } from "./schedule.js";
import { LastRun, Tags } from "./tasks.js";

const LIVE = ["scheduled", "paused"];
const RUNS_PAGE = 100;

const ONE_SHOT = (s) => "at" in s || "after_seconds" in s;
// A fixed delay (after: end) has one time ahead: the rest depend on its runs.
const FIXED_DELAY = (s) => `Then ${s.every_seconds} s after each run ends (after: end): the later times depend on the runs.`;

// The task's next five times from `from` (an instant on its schedule, or any instant for a cron or
// calendar rule): a one-shot has its one time, and so has a fixed delay; a fixed rate steps from its next_fire_at, which is
// on its grid, to the first step at or after `from`; a cron or calendar rule is previewed from
// `from` (the preview's "after" is inclusive).
function timesFrom(t, from) {
  const s = t.schedule;
  if (ONE_SHOT(s)) return Promise.resolve({ times: t.next_fire_at ? [t.next_fire_at] : [], notes: [] });
  if (s.after === "end") return Promise.resolve({ times: t.next_fire_at ? [t.next_fire_at] : [], notes: [FIXED_DELAY(s)] });
  if ("every_seconds" in s && t.next_fire_at) {
    const period = s.every_seconds * 1000;
    const armed = Date.parse(t.next_fire_at);
    const first = armed + Math.max(0, Math.ceil((Date.parse(from) - armed) / period)) * period;
    const times = [0, 1, 2, 3, 4].map((k) => new Date(first + k * period).toISOString());
    return Promise.resolve({ times: times.filter((time) => !s.end || time <= s.end), notes: [] });
  }
  return api("POST", "v1/schedules:preview", { schedule: s, count: 5, ...(from && { after: from }) });
}

// What the page lists under "Next times". A scheduled task: its times from next_fire_at. A paused
// task fires nothing; the API answers as its next_fire_at when a resume now would fire it (its
// armed occurrence if still ahead; once that went by, misfire fire_now: at once; skip: the
// schedule's first time from now on; null for a one-shot skipped, which resuming completes), so
// its times are listed from there, "at once" when that is now.
async function nextTimes(t, readAt) {
  if (!LIVE.includes(t.status)) return null;
  const paused = t.status === "paused";
  if (!paused) return { paused, ...(await timesFrom(t, t.next_fire_at)) };
  if (!t.next_fire_at) return { paused, times: [], notes: ["None: its time went by while paused and its misfire is skip, so resuming completes it."] };
  const atOnce = firesAtOnce(t, readAt);
  if (!atOnce) return { paused, ...(await timesFrom(t, t.next_fire_at)) };
  const was = "an occurrence went by while paused and its misfire is fire_now";
  if (ONE_SHOT(t.schedule)) return { paused, times: [], notes: [`At once: ${was}.`] };
  if (t.schedule.after === "end") return { paused, times: [], notes: [`At once (${was}).`, FIXED_DELAY(t.schedule)] };
  if ("every_seconds" in t.schedule) return { paused, times: [], notes: [`At once (${was}), then every ${t.schedule.every_seconds} s on its grid.`] };
  const ahead = await timesFrom(t, new Date(Date.parse(t.next_fire_at) + 1).toISOString());
  return { paused, times: ahead.times, notes: [`At once (${was}), then:`, ...ahead.notes] };
}

// A paused task's next_fire_at this close to when it was read is the read's own moment: at once.
const AT_ONCE_MS = 1000;
// Only fire_now fires a missed occurrence at once; with skip, a time this close is the schedule's
// next one (an every_seconds: 2 task's is never more than 2 s ahead), listed as any other.
const firesAtOnce = (t, readAt) => t.misfire === "fire_now" && Date.parse(t.next_fire_at) <= readAt + AT_ONCE_MS;

export function Task({ id }) {
  const task = useLoad(() => api("GET", `v1/tasks/${id}`).then((t) => ({ ...t, readAt: Date.now() })), [id], 3000);
  const pager = usePager();
  const runs = useLoad(() => readPage(`v1/tasks/${id}/runs`, { cursor: pager.cursor }, RUNS_PAGE), [id, pager.cursor], 3000);
  const t = task.data;
  const schedule = JSON.stringify(t?.schedule);
  const next = useLoad(() => (t ? nextTimes(t, t.readAt) : Promise.resolve(null)), [schedule, t?.status, t?.next_fire_at, t?.misfire]);
  const [outcome, setOutcome] = useState(null);
  const [confirming, setConfirming] = useState(false);
  if (!t) return html`<section><h1>Task</h1><${ErrorBox} error=${task.error} /><p><a href="#/tasks">All tasks</a></p></section>`;

  const act = (done, method, path, body) => async () => {
    setOutcome(null);
    setConfirming(false);
    try {
      const answer = await api(method, path, body);
      setOutcome({ done: done + (answer?.run_id ? ` (run ${answer.run_id})` : "") });
      task.reload();
      runs.reload();
    } catch (error) {
      setOutcome({ error });
    }
  };
  const live = LIVE.includes(t.status);
  const actionable = live || t.status === "failed"; // a failed task is run again, or cancelled to put it aside
  return html`<section class="task">
    <p><a href="#/tasks">All tasks</a></p>
    <h1 data-testid="task-name">${t.name || t.id}</h1>
    <p data-testid="task-status"><${Status} status=${t.status} />${t.paused_reason && html` — ${t.paused_reason}`}</p>
    <div class="actions" role="group" aria-label="Task actions">
      ${t.status === "scheduled" && html`<button type="button" onClick=${act("Paused", "POST", `v1/tasks/${id}/pause`)}>Pause</button>`}
      ${t.status === "paused" && html`<button type="button" onClick=${act("Resumed", "POST", `v1/tasks/${id}/resume`)}>Resume</button>`}
      ${actionable && html`<button type="button" onClick=${act("Run started", "POST", `v1/tasks/${id}/run`)}>Run now</button>`}
      ${actionable && !confirming && html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Cancel task</button>`}
      ${confirming &&
      html`<span class="confirm">Cancel this task for good?
        <button type="button" class="danger" onClick=${act("Cancelled", "DELETE", `v1/tasks/${id}`)}>Yes, cancel it</button>
        <button type="button" onClick=${() => setConfirming(false)}>Keep it</button></span>`}
    </div>
    ${outcome?.done && html`<p role="status" data-testid="outcome">${outcome.done}</p>`}
    <${ErrorBox} error=${outcome?.error || task.error} />
    <dl class="facts">
      <dt>Id</dt><dd><code>${t.id}</code></dd>
      <dt>Schedule</dt><dd data-testid="task-schedule">${describe(t.schedule)}</dd>
      <dt>Last run</dt><dd><${LastRun} run=${t.last_run} /></dd>
      <dt>Next fire</dt><dd data-testid="next-fire">${t.status === "paused"
        ? html`none while paused${t.next_fire_at ? html` (a resume now fires it ${firesAtOnce(t, t.readAt) ? "at once" : `at ${when(t.next_fire_at)}`})` : " (a resume now completes it)"}`
        : html`${when(t.next_fire_at)}${zoneOf(t.schedule) && t.next_fire_at ? html`, ${inZone(t.next_fire_at, zoneOf(t.schedule))} in ${zoneOf(t.schedule)}` : ""}`}</dd>
      <dt>Misfire, priority</dt><dd>${t.misfire}, ${t.priority}</dd>
      <dt>Tags</dt><dd data-testid="task-tags">${Object.keys(t.tags || {}).length ? html`<${Tags} tags=${t.tags} />` : html`<span class="empty">none</span>`}</dd>
      <dt>Retry</dt><dd>${t.retry.max_attempts} attempts, ${t.retry.backoff} from ${t.retry.interval_seconds} s${t.retry.max_age_seconds ? `, none after ${t.retry.max_age_seconds} s` : ""}</dd>
      <dt>Failures in a row</dt><dd>${t.consecutive_failures}</dd>
      <dt>Created, updated</dt><dd>${when(t.created_at)}, ${when(t.updated_at)} (version ${t.version})</dd>
      ${(t.on_success || t.on_failure) &&
      html`<dt>Chains</dt><dd data-testid="chains">
        ${t.on_success && html`<span>on success: <${TaskLinks} ids=${t.on_success} /></span> `}
        ${t.on_failure && html`<span>on failure: <${TaskLinks} ids=${t.on_failure} /></span>`}
      </dd>`}
    </dl>
    <div class="columns">
      <div>
        <h2>Next times</h2>
        ${!live && html`<p class="empty">None: the task is ${t.status}.</p>`}
        ${next.data?.paused && html`<p data-testid="next-times-heading"><strong>Paused</strong> — next times once resumed:</p>`}
        ${next.data?.paused && !next.data.times.length && !next.data.notes.length && html`<p class="empty">None.</p>`}
        <${NextTimes} preview=${next.data} zone=${zoneOf(t.schedule)} />
        <${ErrorBox} error=${next.error} />
        <h2>Schedule</h2>
        <${Json} value=${t.schedule} />
      </div>
      <div>
        <h2>Targets</h2>
        <${Json} value=${t.targets || [t.target]} testid="targets" />
        <h2>Payload</h2>
        <${Json} value=${t.payload} />
      </div>
    </div>
    ${live && html`<${ChangeSchedule} task=${t} saved=${() => (task.reload(), next.reload())} />`}
    ${!ONE_SHOT(t.schedule) && html`<${Backfills} task=${t} started=${runs.reload} />`}
    <h2>Runs</h2>
    <${LatenessChart} runs=${runs.data?.items || []} />
    <${ErrorBox} error=${runs.error} />
    <${Runs} runs=${runs.data?.items || []} />
    <${Pager} pager=${pager} data=${runs.data} none="No runs yet." />
  </section>`;
}

function ChangeSchedule({ task, saved }) {
  const [text, setText] = useState(JSON.stringify(task.schedule, null, 2));
  const [checked, setChecked] = useState(null);
  const [error, setError] = useState(null);
  const [done, setDone] = useState(false);
  const save = async () => {
    setError(null);
    setDone(false);
    try {
      await api("PATCH", `v1/tasks/${task.id}`, { schedule: parseField("schedule", text) });
      setDone(true);
      saved();
    } catch (e) {
      setError(e);
    }
  };
  return html`<details class="change">
    <summary>Change the schedule</summary>
    <${ScheduleField} text=${text} setText=${setText} onChecked=${setChecked} />
    <button type="button" class="primary" disabled=${checked !== text} onClick=${save}>Save schedule</button>
    ${checked !== text && html`<span class="hint">Preview it to save it.</span>`}
    ${done && html`<p role="status">Saved: the task is re-armed on its new schedule.</p>`}
    <${ErrorBox} error=${error} />
  </details>`;
}

const TaskLinks = ({ ids }) => ids.map((id, i) => html`${i ? ", " : ""}<a href=${`#/tasks/${id}`}><code>${id}</code></a>`);

function Runs({ runs }) {
  if (!runs.length) return null;
  const short = shortIds(runs.map((r) => r.run_id)); // the part of each id that differs; the whole on hover
  return html`<table data-testid="runs">
    <thead><tr><th>Run</th><th>Scheduled for</th><th>Fired at</th><th>Status</th><th>Attempts</th><th>Lateness</th><th>Throttled</th><th>Last error</th><th>Started</th><th>Parent</th></tr></thead>
    <tbody>
      ${runs.map(
        (r) => html`<tr>
          <td><code data-testid="run-id" title=${r.run_id}>${short.get(r.run_id)}</code></td>
          <td>${when(r.scheduled_for)}</td>
          <td>${when(r.fired_at)}</td>
          <td><${Status} status=${r.status} /></td>
          <td class="number">${r.attempts}</td>
          <td class="number" data-testid="lateness">${r.lateness_ms ?? "—"}${r.lateness_ms != null ? " ms" : ""}</td>
          <td class="number">${r.throttled_ms ? `${r.throttled_ms} ms` : "—"}</td>
          <td class="error-text">${r.last_error || ""}</td>
          <td data-testid="started">${(r.started || []).map((arn) => html`<code title=${arn}>${arn.split(/[:/]/).pop()}</code> `)}</td>
          <td data-testid="parent">${r.parent
            ? html`<a href=${`#/tasks/${r.parent.task_id}`} title=${`${r.parent.status} run of ${r.parent.task_id}`}><code>${r.parent.run_id}</code></a>`
            : ""}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

const BACKFILLS_PAGE = 10;

// A past window's occurrences fired at a pace (POST v1/tasks/<id>/backfill), and the task's
// backfills, newest first, each with its progress (read by id) and, while it runs, a Cancel.
function Backfills({ task, started }) {
  const hour = new Date(Date.now() - 3600_000).toISOString().slice(0, 19) + "Z";
  const [from, setFrom] = useState(hour);
  const [to, setTo] = useState(new Date().toISOString().slice(0, 19) + "Z");
  const [perSecond, setPerSecond] = useState("1");
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  const pager = usePager();
  const list = useLoad(
    () => readPage(`v1/tasks/${task.id}/backfills`, { cursor: pager.cursor }, BACKFILLS_PAGE),
    [task.id, pager.cursor],
    3000,
  );
  const start = async () => {
    setError(null);
    setDone(null);
    try {
      const b = await api("POST", `v1/tasks/${task.id}/backfill`, { from, to, per_second: Number(perSecond) });
      setDone(`Backfill ${b.backfill_id}: ${b.occurrences} occurrence${b.occurrences === 1 ? "" : "s"} to fire`);
      pager.reset();
      list.reload();
      started();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section class="backfills">
    <details class="change">
      <summary>Backfill past occurrences</summary>
      <p class="hint">Every occurrence of the schedule from <em>from</em> (included) to <em>to</em> (excluded, not after now) is fired once, oldest first, at most <em>per second</em> a second; those the task fired itself, or another backfill took, are left out.</p>
      <div class="filters">
        <label>From <input value=${from} onInput=${(e) => setFrom(e.target.value)} /></label>
        <label>To <input value=${to} onInput=${(e) => setTo(e.target.value)} /></label>
        <label>Per second <input type="number" min="0.01" max="100" step="any" value=${perSecond} onInput=${(e) => setPerSecond(e.target.value)} /></label>
        <button type="button" class="primary" onClick=${start}>Backfill</button>
      </div>
      ${done && html`<p role="status" data-testid="backfill-started">${done}</p>`}
      <${ErrorBox} error=${error} />
    </details>
    ${list.data && (list.data.items.length > 0 || pager.page > 1) &&
    html`<h2>Backfills</h2>
      <table data-testid="backfills">
        <thead><tr><th>Backfill</th><th>Window</th><th>Occurrences</th><th>Left out</th><th>Progress</th><th></th></tr></thead>
        <tbody>${list.data.items.map((b) => html`<${BackfillRow} key=${b.backfill_id} task=${task} backfill=${b} />`)}</tbody>
      </table>
      <${Pager} pager=${pager} data=${list.data} none="No backfills on this page." />`}
    <${ErrorBox} error=${list.error} />
  </section>`;
}

const PROGRESS = ["waiting", "firing", "succeeded", "failed", "skipped", "cancelled"];

function BackfillRow({ task, backfill }) {
  const path = `v1/tasks/${task.id}/backfills/${backfill.backfill_id}`;
  // Its progress is read from up to 1,000 runs (strongly consistent reads): polled only until a read
  // says it ended (done or cancelled), whose counts are then final.
  const [live, setLive] = useState(true);
  const read = useLoad(
    () =>
      api("GET", path).then((answer) => {
        if (answer.status !== "running") setLive(false);
        return answer;
      }),
    [path],
    live ? 3000 : 0,
  );
  const [error, setError] = useState(null);
  const b = read.data || backfill;
  const cancel = async () => {
    setError(null);
    try {
      await api("POST", `${path}/cancel`);
      read.reload();
    } catch (e) {
      setError(e);
    }
  };
  const left = Object.entries(b.left_out).map(([why, n]) => `${why}: ${n}`).join(", ");
  const progress = b.progress ? PROGRESS.filter((k) => b.progress[k]).map((k) => `${b.progress[k]} ${k}`).join(", ") : "";
  return html`<tr data-testid="backfill">
    <td><code>${b.backfill_id}</code><div><${Status} status=${b.status} /></div></td>
    <td>${when(b.from)} – ${when(b.to)}<div class="hint">${b.per_second} a second</div></td>
    <td class="number">${b.occurrences}</td>
    <td>${left || html`<span class="empty">none</span>`}</td>
    <td data-testid="backfill-progress">${progress || "—"}${b.next_fire_at ? html`<div class="hint">next at ${when(b.next_fire_at)}</div>` : ""}</td>
    <td>${b.status === "running" && html`<button type="button" class="danger" onClick=${cancel}>Cancel backfill</button>`}<${ErrorBox} error=${error} /></td>
  </tr>`;
}
