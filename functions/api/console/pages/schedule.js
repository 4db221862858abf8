// A schedule typed as JSON (with presets to start from) and previewed before it is saved.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api } from "../api.js";
import { ErrorBox, NextTimes, PRESETS, describe, parseField, zoneOf } from "../ui.js";

// onChecked(text) is called with the text whose preview the API accepted: a form saves a
// schedule only when the text is the one previewed.
export function ScheduleField({ text, setText, onChecked }) {
  const [preview, setPreview] = useState(null);
  const [zone, setZone] = useState(null);
  const [error, setError] = useState(null);
  const change = (value) => {
    setText(value);
    setPreview(null);
    setError(null);
  };
  const run = async () => {
    setError(null);
    setPreview(null);
    try {
      const schedule = parseField("schedule", text);
      setPreview(await api("POST", "v1/schedules:preview", { schedule, count: 5 }));
      setZone(zoneOf(schedule));
      onChecked(text);
    } catch (e) {
      setError(e);
    }
  };
  let words = "";
  try {
    words = describe(JSON.parse(text));
  } catch {
    words = "";
  }
  return html`<fieldset class="schedule">
    <legend>Schedule</legend>
    <div class="presets" role="group" aria-label="Schedule presets">
      Start from:
      ${Object.keys(PRESETS).map(
        (kind) => html`<button type="button" onClick=${() => change(JSON.stringify(PRESETS[kind](), null, 2))}>${kind}</button>`,
      )}
    </div>
    <label>Schedule (JSON)
      <textarea rows="5" spellcheck="false" value=${text} onInput=${(e) => change(e.target.value)}></textarea>
    </label>
    <p class="describe">${words}</p>
    <button type="button" onClick=${run}>Preview</button>
    <${ErrorBox} error=${error} />
    ${preview && html`<p>The next times:</p>`}
    <${NextTimes} preview=${preview} zone=${zone} />
  </fieldset>`;
}
