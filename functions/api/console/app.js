// The Sundial console: sign in with an API key (kept in this tab's sessionStorage), then the
// tenant's home (is anything wrong?), tasks, dead letters, jobs and workflows, each page at a hash
// route (#/, #/tasks, #/tasks/<id>, #/new, #/dead-letters, #/jobs, #/jobs/<id>, #/workflows,
// #/workflows/<id>, #/workflows/<id>/runs/<run>[/nodes/<node>], #/workflow-runs) so the server
// serves one page for all of them. A list's route may name its filter (#/tasks?status=failed):
// the home links each of its checks to the list it counts.
import { html, render, useEffect, useState } from "./vendor/htm-preact-3.1.1.module.js";
import { endSession, onSession, signIn, signedInKey, signedOutBecause } from "./api.js";
import { DeadLetters } from "./pages/dead-letters.js";
import { Editor } from "./pages/editor.js";
import { Home } from "./pages/home.js";
import { Job, Jobs } from "./pages/jobs.js";
import { Task } from "./pages/task.js";
import { Tasks } from "./pages/tasks.js";
import { WorkflowRun, WorkflowRuns } from "./pages/workflow-run.js";
import { Workflow, Workflows } from "./pages/workflows.js";

const ROUTES = [
  [/^tasks\/([^/]+)$/, (id) => html`<${Task} id=${id} key=${id} />`, "tasks"],
  [/^$/, () => html`<${Home} />`, ""],
  [/^tasks$/, (filter) => html`<${Tasks} filter=${filter} key=${filter.toString()} />`, "tasks"],
  [/^new$/, () => html`<${Editor} />`, "new"],
  [/^dead-letters$/, (filter) => html`<${DeadLetters} filter=${filter} key=${filter.toString()} />`, "dead-letters"],
  [/^jobs\/([^/]+)$/, (id) => html`<${Job} id=${id} key=${id} />`, "jobs"],
  [/^jobs$/, (filter) => html`<${Jobs} filter=${filter} key=${filter.toString()} />`, "jobs"],
  [/^workflow-runs$/, (filter) => html`<${WorkflowRuns} filter=${filter} key=${filter.toString()} />`, "workflows"],
  [
    /^workflows\/([^/]+)\/runs\/([^/]+)(?:\/nodes\/([^/]+))?$/,
    (id, run, node) => html`<${WorkflowRun} id=${id} runId=${run} node=${node} key=${`${id}/${run}`} />`,
    "workflows",
  ],
  [/^workflows\/([^/]+)$/, (id) => html`<${Workflow} id=${id} key=${id} />`, "workflows"],
  [/^workflows$/, () => html`<${Workflows} />`, "workflows"],
];
const NAV = [
  ["", "Home"],
  ["tasks", "Tasks"],
  ["new", "New task"],
  ["dead-letters", "Dead letters"],
  ["jobs", "Jobs"],
  ["workflows", "Workflows"],
];

function SignIn() {
  const [key, setKey] = useState("");
  const submit = (event) => {
    event.preventDefault();
    if (!location.hash) location.hash = "#/";
    signIn(key.trim());
  };
  return html`<form class="sign-in" onSubmit=${submit}>
    <h1>Sundial</h1>
    ${signedOutBecause && html`<p class="error" role="alert" data-testid="signed-out">${signedOutBecause}</p>`}
    <label>API key
      <input type="password" autocomplete="off" value=${key} onInput=${(e) => setKey(e.target.value)} />
    </label>
    <button type="submit" class="primary">Sign in</button>
    <p class="hint">The key stays in this tab only. On <code>make run</code> an empty key is tenant <code>default</code>.</p>
  </form>`;
}

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash.replace(/^#\/?/, "");
}

function App() {
  const [, setTurn] = useState(0);
  useEffect(() => onSession(() => setTurn((n) => n + 1)), []);
  const [path, search = ""] = useHash().split("?");
  const filter = new URLSearchParams(search);
  if (signedInKey() === null) return html`<${SignIn} />`;
  let page = html`<section><h1>No such page</h1><p><a href="#/">Home</a></p></section>`;
  let section = null;
  for (const [pattern, view, name] of ROUTES) {
    const match = pattern.exec(path);
    if (match) {
      page = view(...match.slice(1).map((part) => decodeURIComponent(part || "")), filter);
      section = name;
      break;
    }
  }
  return html`<header class="bar">
      <strong class="brand">Sundial</strong>
      <nav aria-label="Console">
        ${NAV.map(([name, label]) => html`<a href=${`#/${name}`} aria-current=${section === name ? "page" : undefined}>${label}</a>`)}
      </nav>
      <button type="button" onClick=${() => endSession("Signed out.")}>Sign out</button>
    </header>
    <main>${page}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));
