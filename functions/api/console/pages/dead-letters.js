// #/dead-letters: runs that failed every attempt (#/dead-letters?status=redriven opens it filtered),
// a page read on until it is full or the list ends; inspect one, redrive the selected or all.
import { html, useState } from "../vendor/htm-preact-3.1.1.module.js";
import { api, readPage } from "../api.js";
import { ErrorBox, Json, Pager, Status, letterHref, letterOf, useLoad, usePager, when } from "../ui.js";

export function DeadLetters({ filter }) {
  const [status, setStatus] = useState(filter?.get("status") ?? "dead_lettered");
  const [chosen, setChosen] = useState(new Set());
  const [open, setOpen] = useState(null);
  const [outcome, setOutcome] = useState(null);
  const pager = usePager();
  const list = useLoad(
    () => readPage("v1/dead-letters", { status, cursor: pager.cursor }, 50),
    [status, pager.cursor],
  );
  const toggle = (id) => {
    const next = new Set(chosen);
    next.has(id) ? next.delete(id) : next.add(id);
    setChosen(next);
  };
  const redrive = (body) => async () => {
    setOutcome(null);
    try {
      // "all" goes a step at a time (up to 100 a call): call again with next_cursor until it is null
      let answer = await api("POST", "v1/dead-letters/redrive", body);
      let redriven = answer.redriven;
      while (body.all && answer.next_cursor) {
        answer = await api("POST", "v1/dead-letters/redrive", { all: true, cursor: answer.next_cursor });
        redriven += answer.redriven;
      }
      setOutcome({ done: `Redriven: ${redriven}` });
      setChosen(new Set());
      list.reload();
    } catch (error) {
      setOutcome({ error });
    }
  };
  const items = list.data?.items || [];
  return html`<section>
    <h1>Dead letters</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label>Status
        <select value=${status} onChange=${(e) => (setStatus(e.target.value), pager.reset(), setChosen(new Set()), setOpen(null))}>
          <option value="dead_lettered">dead_lettered</option>
          <option value="redriven">redriven</option>
          <option value="">any</option>
        </select>
      </label>
      <button type="button" disabled=${!chosen.size} onClick=${redrive({ ids: [...chosen] })}>Redrive selected (${chosen.size})</button>
      <button type="button" onClick=${redrive({ all: true })}>Redrive all</button>
    </form>
    ${outcome?.done && html`<p role="status" data-testid="redriven">${outcome.done}</p>`}
    <${ErrorBox} error=${outcome?.error || list.error} />
    <table data-testid="dead-letters">
      <thead><tr><th></th><th>Of</th><th>Scheduled for</th><th>Failed at</th><th>Attempts</th><th>Status</th><th>Reason</th><th></th></tr></thead>
      <tbody>
        ${items.map(
          (d) => html`<tr>
              <td>${d.status === "dead_lettered" &&
              html`<input type="checkbox" aria-label=${`select ${d.id}`} checked=${chosen.has(d.id)} onChange=${() => toggle(d.id)} />`}</td>
              <td><a href=${letterHref(d)}>${letterOf(d)}</a></td>
              <td>${when(d.scheduled_for)}</td>
              <td>${when(d.failed_at)}</td>
              <td class="number">${d.attempts}</td>
              <td><${Status} status=${d.status} /></td>
              <td class="error-text">${d.reason}</td>
              <td><button type="button" aria-expanded=${open === d.id} onClick=${() => setOpen(open === d.id ? null : d.id)}>Inspect</button></td>
            </tr>
            ${open === d.id && html`<tr class="inspect"><td colspan="8"><${Letter} id=${d.id} /></td></tr>`}`,
        )}
      </tbody>
    </table>
    <${Pager} pager=${pager} data=${list.data} none="No dead letters here." />
  </section>`;
}

function Letter({ id }) {
  const { data, error } = useLoad(() => api("GET", `v1/dead-letters/${encodeURIComponent(id)}`), [id]);
  if (!data) return html`<${ErrorBox} error=${error} />`;
  const { reason, task_id, run_id, failed_at, workflow, ...rest } = data;
  return html`<div data-testid="letter">
    <dl class="facts">
      <dt>Reason</dt><dd class="error-text">${reason}</dd>
      ${workflow
        ? html`<dt>Workflow run</dt>
            <dd data-testid="letter-workflow"><a href=${letterHref(data)}><code>${workflow.id}</code> run <code>${workflow.run_id}</code>, node <code>${workflow.node}</code></a>
              (attempt ${workflow.attempt} of the run)</dd>`
        : html`<dt>Task</dt><dd><a href=${letterHref(data)}><code>${task_id}</code></a></dd>`}
      <dt>Run</dt><dd><code>${run_id}</code></dd>
      <dt>Failed at</dt><dd>${when(failed_at)}</dd>
    </dl>
    <${Json} value=${rest} />
  </div>`;
}
