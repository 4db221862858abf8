// #/new: register a task. The schedule is previewed before "Create" is allowed. Its target is an
// HTTP call, a Step Functions execution or an ECS task on Fargate (docs/api.md, "Targets").
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api } from "../api.js";
import { ErrorBox, parseField } from "../ui.js";
import { ScheduleField } from "./schedule.js";

const METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"];
const KINDS = [
  ["http", "HTTP"],
  ["stepfunctions", "Step Functions execution"],
  ["ecs", "ECS task (Fargate)"],
];
const list = (text) => text.split(",").map((item) => item.trim()).filter(Boolean);

// The target the form describes, in the API's form (a JSON field that does not parse names itself).
function targetOf(kind, f) {
  if (kind === "stepfunctions") {
    const machine = { state_machine_arn: f.machine };
    const input = parseField("target.stepfunctions.input", f.input, { optional: true });
    if (input !== undefined) machine.input = input;
    return { stepfunctions: machine };
  }
  if (kind === "ecs") {
    const run = {
      cluster_arn: f.cluster,
      task_definition_arn: f.definition,
      launch_type: "FARGATE",
      network: { subnets: list(f.subnets), security_groups: list(f.groups), assign_public_ip: f.publicIp ? "ENABLED" : "DISABLED" },
    };
    const overrides = parseField("target.ecs.overrides", f.overrides, { optional: true });
    if (overrides !== undefined) run.overrides = overrides;
    return { ecs: run };
  }
  return { http: { url: f.url, method: f.method } };
}

export function Editor() {
  const [name, setName] = useState("");
  const [schedule, setSchedule] = useState('{"after_seconds": 5}');
  const [checked, setChecked] = useState(null);
  const [kind, setKind] = useState("http");
  const [url, setUrl] = useState("");
  const [method, setMethod] = useState("POST");
  const [machine, setMachine] = useState("");
  const [input, setInput] = useState("");
  const [cluster, setCluster] = useState("");
  const [definition, setDefinition] = useState("");
  const [subnets, setSubnets] = useState("");
  const [groups, setGroups] = useState("");
  const [publicIp, setPublicIp] = useState(false);
  const [overrides, setOverrides] = useState("");
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
        target: targetOf(kind, { url, method, machine, input, cluster, definition, subnets, groups, publicIp, overrides }),
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
      <legend>Target</legend>
      <label>Target kind
        <select value=${kind} onChange=${(e) => setKind(e.target.value)}>
          ${KINDS.map(([k, label]) => html`<option value=${k}>${label}</option>`)}
        </select>
      </label>
      ${kind === "http" &&
      html`<label>URL <input type="url" required value=${url} onInput=${(e) => setUrl(e.target.value)} /></label>
        <label>Method
          <select value=${method} onChange=${(e) => setMethod(e.target.value)}>
            ${METHODS.map((m) => html`<option value=${m}>${m}</option>`)}
          </select>
        </label>`}
      ${kind === "stepfunctions" &&
      html`<label>State machine ARN <input required value=${machine} onInput=${(e) => setMachine(e.target.value)} /></label>
        <label>Execution input (JSON, optional: Sundial's envelope without it)
          <textarea rows="3" spellcheck="false" value=${input} onInput=${(e) => setInput(e.target.value)}></textarea>
        </label>`}
      ${kind === "ecs" &&
      html`<label>Cluster ARN <input required value=${cluster} onInput=${(e) => setCluster(e.target.value)} /></label>
        <label>Task definition ARN <input required value=${definition} onInput=${(e) => setDefinition(e.target.value)} /></label>
        <label>Subnets (comma-separated) <input required value=${subnets} onInput=${(e) => setSubnets(e.target.value)} /></label>
        <label>Security groups (comma-separated) <input value=${groups} onInput=${(e) => setGroups(e.target.value)} /></label>
        <label><input type="checkbox" checked=${publicIp} onChange=${(e) => setPublicIp(e.target.checked)} /> Public IP</label>
        <label>Overrides (JSON, optional)
          <textarea rows="3" spellcheck="false" value=${overrides} onInput=${(e) => setOverrides(e.target.value)}></textarea>
        </label>`}
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
