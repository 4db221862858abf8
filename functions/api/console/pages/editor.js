// #/new: register a task. The schedule is previewed before "Create" is allowed.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api } from "../api.js";
import { ErrorBox, parseField } from "../ui.js";
import { ScheduleField } from "./schedule.js";

const METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"];

export function Editor() {
  const [name, setName] = useState("");
  const [schedule, setSchedule] = useState('{"after_seconds": 5}');
  const [checked, setChecked] = useState(null);
  const [url, setUrl] = useState("");
  const [method, setMethod] = useState("POST");
  const [attempts, setAttempts] = useState("3");
  const [payload, setPayload] = useState("");
  const [tags, setTags] = useState("");
  const [error, setError] = useState(null);
  const create = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      const spec = {
        schedule: parseField("schedule", schedule),
        target: { http: { url, method } },
        retry: { max_attempts: Number(attempts) },
      };
      if (name) spec.name = name;
      const body = parseField("payload", payload, { optional: true });
      if (body !== undefined) spec.payload = body;
      const tagged = tagsOf(tags);
      if (Object.keys(tagged).length) spec.tags = tagged;
      const task = await api("POST", "v1/tasks", spec);
      location.hash = `#/tasks/${task.id}`;
    } catch (e) {
      setError(e);
    }
  };
  const ready = checked === schedule;
  return html`<form class="editor" onSubmit=${create}>
    <h1>New task</h1>
    <label>Name <input value=${name} onInput=${(e) => setName(e.target.value)} /></label>
    <${ScheduleField} text=${schedule} setText=${setSchedule} onChecked=${setChecked} />
    <fieldset>
      <legend>Target (HTTP)</legend>
      <label>URL <input type="url" required value=${url} onInput=${(e) => setUrl(e.target.value)} /></label>
      <label>Method
        <select value=${method} onChange=${(e) => setMethod(e.target.value)}>
          ${METHODS.map((m) => html`<option value=${m}>${m}</option>`)}
        </select>
      </label>
      <label>Attempts <input type="number" min="1" max="10" value=${attempts} onInput=${(e) => setAttempts(e.target.value)} /></label>
    </fieldset>
    <label>Payload (JSON, optional)
      <textarea rows="4" spellcheck="false" value=${payload} onInput=${(e) => setPayload(e.target.value)}></textarea>
    </label>
    <label>Tags (key:value, one a line, optional)
      <textarea rows="2" spellcheck="false" placeholder="team:orders" value=${tags} onInput=${(e) => setTags(e.target.value)}></textarea>
    </label>
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${!ready}>Create</button>
    ${!ready && html`<span class="hint">Preview the schedule to create the task.</span>`}
  </form>`;
}

// "key:value" lines as a tags map (split at the first colon; the API judges keys and values).
function tagsOf(text) {
  const tags = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf(":");
    tags[at < 0 ? line : line.slice(0, at)] = at < 0 ? "" : line.slice(at + 1);
  }
  return tags;
}
