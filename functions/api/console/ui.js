// Small pieces every page uses: loading a route, errors, times, schedules, paging.
import { html, useCallback, useEffect, useRef, useState } from "./vendor/htm-preact-3.1.1.module.js";

// Calls load() when deps change (and every `every` ms when given); a late answer to an older
// call never overwrites a newer one.
export function useLoad(load, deps, every = 0) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const turn = useRef(0);
  const reload = useCallback(() => {
    const mine = ++turn.current;
    return load().then(
      (data) => mine === turn.current && setState({ data, error: null, loading: false }),
      (error) => mine === turn.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(() => {
    reload();
    if (!every) return undefined;
    const timer = setInterval(reload, every);
    return () => clearInterval(timer);
  }, [reload, every]);
  return { ...state, reload };
}

// Paging over next_cursor: the cursors of the pages before this one are kept, so "Previous" works.
export function usePager() {
  const [stack, setStack] = useState([]);
  const cursor = stack.length ? stack[stack.length - 1] : null;
  return {
    cursor,
    page: stack.length + 1,
    next: (nextCursor) => setStack([...stack, nextCursor]),
    previous: () => setStack(stack.slice(0, -1)),
    reset: () => setStack([]),
  };
}

// Under a list: Previous / Next, and what this page is: "N shown, more…" while a cursor is left
// (a page read as far as its reads' bound may hold fewer than its size, or none: it is never said
// to be empty, nor the end), `none` when the list has nothing from here on.
export function Pager({ pager, data, none }) {
  const nextCursor = data?.next_cursor;
  const shown = data?.items.length ?? 0;
  let said = null;
  if (data && nextCursor) {
    said = shown
      ? `${shown} shown, more…`
      : "None found in the part of the list read so far, and the list goes on: more…";
  } else if (data && !shown) {
    said = none;
  } else if (data) {
    said = `${shown} shown, no more.`;
  }
  return html`<nav class="pager" aria-label="pages">
    <button type="button" disabled=${pager.page === 1} onClick=${pager.previous}>Previous</button>
    <span data-testid="page">page ${pager.page}</span>
    <button type="button" disabled=${!nextCursor} onClick=${() => pager.next(nextCursor)}>Next</button>
    ${said && html`<span class=${nextCursor ? "more" : "empty"} data-testid="more">${said}</span>`}
  </nav>`;
}

// An API error (or any error): its message, and each field the API named.
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert" data-testid="error">
    <strong>${error.status ? `${error.status} ${error.code}: ` : ""}</strong>${error.message}
    ${error.details?.length > 0 &&
    html`<ul>
      ${error.details.map((d) => html`<li><code data-testid="error-field">${d.field}</code>: ${d.message}</li>`)}
    </ul>`}
  </div>`;
}

// Where a dead letter's run is shown: a workflow node's letter (it has `workflow`) on its
// workflow run's page, with the node open; any other on its task's page.
export function letterHref(letter) {
  const w = letter.workflow;
  if (!w) return `#/tasks/${encodeURIComponent(letter.task_id)}`;
  const path = [w.id, "runs", w.run_id, "nodes", w.node].map(encodeURIComponent).join("/");
  return `#/workflows/${path}`;
}

// What a dead letter is of, in words: its task's name (or id), or its workflow's and node's.
export function letterOf(letter) {
  const w = letter.workflow;
  if (!w) return letter.name || letter.task_id;
  return `node ${w.node} of workflow ${letter.name || w.id}`;
}

// Ids that share long runs of characters, shown by the part that tells each from the others: a
// task's run ids are ULIDs of their due times with the task's own random part, so its occurrences
// share their last 16 characters and the first ones of their time, and differ in between (a run
// now, with a random part of its own, at the end too). Each id's label is what lies between the
// start and the end all of them share, widened to the left to SHORT_ID characters at least, with
// "…" where characters are left out; one id alone is shown whole. A map id -> label.
export function shortIds(ids) {
  const unique = [...new Set(ids)];
  if (unique.length < 2) return new Map(unique.map((id) => [id, id]));
  const length = Math.min(...unique.map((id) => id.length));
  const same = (at) => unique.every((id) => at(id) === at(unique[0]));
  let start = 0;
  while (start < length - 1 && same((id) => id[start])) start++;
  let end = 0; // characters all of them share at their end
  while (end < length - start - 1 && same((id) => id[id.length - 1 - end])) end++;
  return new Map(
    unique.map((id) => {
      const to = id.length - end;
      const from = Math.max(0, Math.min(start, to - SHORT_ID));
      return [id, `${from > 0 ? "…" : ""}${id.slice(from, to)}${to < id.length ? "…" : ""}`];
    }),
  );
}

const SHORT_ID = 6;

export const when = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "Z") : "—");
export const Json = ({ value, testid }) => html`<pre class="json" data-testid=${testid}>${JSON.stringify(value, null, 2)}</pre>`;
export const Status = ({ status }) => html`<span class="status status-${status}">${status}</span>`;

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const WEEKDAYS = ["", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

// A schedule in words (the JSON is shown next to it).
export function describe(schedule) {
  if (!schedule) return "";
  const tz = schedule.timezone && schedule.timezone !== "UTC" ? ` (${schedule.timezone})` : "";
  if (schedule.at) return `once, at ${when(schedule.at)}`;
  if (schedule.after_seconds !== undefined) return `once, ${schedule.after_seconds} s after registration`;
  if (schedule.cron) return `cron ${schedule.cron}${tz}`;
  if (schedule.every_seconds !== undefined && schedule.after === "end") return `${plural(schedule.every_seconds, "second")} after each run ends`;
  if (schedule.every_seconds !== undefined) return `every ${plural(schedule.every_seconds, "second")}`;
  const r = schedule.repeat;
  if (!r) return JSON.stringify(schedule);
  const days = r.days?.length ? (r.level === "week" ? r.days.map((d) => WEEKDAYS[d]) : r.days).join(", ") : "";
  const at = r.time ? ` at ${r.time.slice(0, 5)}` : "";
  const zone = r.timezone && r.timezone !== "UTC" ? ` (${r.timezone})` : "";
  const calendar = r.calendar ? ` in ${r.calendar}'s calendar` : "";
  return `every ${plural(r.interval || 1, r.level)}${days ? ` on ${days}` : ""}${at}${zone}${calendar}`;
}

// Schedule presets for the editors.
export const PRESETS = {
  at: () => ({ at: new Date(Date.now() + 60_000).toISOString() }),
  after_seconds: () => ({ after_seconds: 5 }),
  cron: () => ({ cron: "*/5 * * * *", timezone: "UTC" }),
  every_seconds: () => ({ every_seconds: 60 }),
  repeat: () => ({ repeat: { level: "week", days: [1, 3, 5], time: "09:00", timezone: "UTC" } }),
};

// A JSON field typed by hand: its value, or an error naming the field as the API would.
export function parseField(field, text, { optional = false } = {}) {
  if (optional && !text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw Object.assign(new Error(`${field} is not valid JSON`), { details: [{ field, message: e.message }] });
  }
}

// The zone a schedule is written in, when it is not UTC (a cron's timezone, a repeat rule's).
export function zoneOf(schedule) {
  const zone = schedule?.timezone || schedule?.repeat?.timezone;
  return zone && zone !== "UTC" && zone !== "Etc/UTC" ? zone : null;
}

// An instant in a zone, written as the page writes UTC (ISO order, 24-hour clock) with the
// zone's offset then: "2026-03-02 09:00:00 (UTC+01:00)".
export function inZone(iso, zone) {
  const format = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "longOffset",
  });
  const part = Object.fromEntries(format.formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
  const offset = part.timeZoneName === "GMT" ? "UTC+00:00" : part.timeZoneName.replace("GMT", "UTC");
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second} (${offset})`;
}

// The next times of a schedule, as POST /v1/schedules:preview answers them: in UTC and, for a
// schedule written in a zone, in that zone beside it.
export function NextTimes({ preview, zone }) {
  if (!preview) return null;
  return html`${preview.times.length > 0 &&
    html`<table class="times" data-testid="next-times">
      <thead><tr><th>UTC</th>${zone && html`<th>${zone}</th>`}</tr></thead>
      <tbody>
        ${preview.times.map((t) => html`<tr><td>${when(t)}</td>${zone && html`<td data-testid="zoned">${inZone(t, zone)}</td>`}</tr>`)}
      </tbody>
    </table>`}
    ${preview.notes.map((n) => html`<p class="note">${n}</p>`)}`;
}
