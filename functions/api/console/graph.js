// A workflow's graph drawn as SVG by hand: each node a box in the column of its longest path from
// a root (within a column, the nodes keep the workflow's order), each edge a curve from its parent's
// right side to its child's left, styled by its `on` (success solid, failure dashed red, always
// dotted). A run's graph colours each box by the node's status and links a node that has a run.
import { html } from "./vendor/htm-preact-3.1.1.module.js";

const BOX = { width: 164, height: 50 };
const GAP = { x: 70, y: 22 };
const PAD = 12;
const LONGEST = 20; // characters of a node id shown in its box (the whole id is its title)

// Each node's column: the longest path to it from a root (a graph without a cycle, as the API keeps
// it). Kahn's order over the edges; a node no edge leads to is a root, in column 0.
export function columns(nodes, edges) {
  const column = Object.fromEntries(nodes.map((n) => [n, 0]));
  const incoming = Object.fromEntries(nodes.map((n) => [n, 0]));
  const out = Object.fromEntries(nodes.map((n) => [n, []]));
  for (const e of edges) {
    if (!(e.from in out) || !(e.to in incoming)) continue;
    out[e.from].push(e.to);
    incoming[e.to] += 1;
  }
  const ready = nodes.filter((n) => incoming[n] === 0);
  while (ready.length) {
    const node = ready.shift();
    for (const child of out[node]) {
      column[child] = Math.max(column[child], column[node] + 1);
      if (--incoming[child] === 0) ready.push(child);
    }
  }
  return column;
}

// Where each box goes: {node: {x, y}}, and the drawing's size.
export function layout(nodes, edges) {
  const column = columns(nodes, edges);
  const rows = [];
  const at = {};
  for (const node of nodes) {
    const c = column[node];
    rows[c] = (rows[c] || 0) + 1;
    at[node] = { x: PAD + c * (BOX.width + GAP.x), y: PAD + (rows[c] - 1) * (BOX.height + GAP.y) };
  }
  const width = PAD * 2 + Math.max(1, rows.length) * (BOX.width + GAP.x) - GAP.x;
  const height = PAD * 2 + Math.max(1, ...rows.filter(Boolean)) * (BOX.height + GAP.y) - GAP.y;
  return { at, width, height };
}

const short = (id) => (id.length > LONGEST ? id.slice(0, LONGEST - 1) + "…" : id);

// Where each edge leaves its parent and reaches its child: the edges of a side spread along it, in
// the order of the boxes at their other end (so they cross as little as they can).
function ports(edges, at) {
  const spread = (end, other) => {
    const by = {};
    edges.forEach((e, i) => at[e.from] && at[e.to] && (by[e[end]] ||= []).push(i));
    const y = {};
    for (const [node, list] of Object.entries(by)) {
      list.sort((a, b) => at[edges[a][other]].y - at[edges[b][other]].y || a - b);
      list.forEach((i, k) => (y[i] = at[node].y + (BOX.height * (k + 1)) / (list.length + 1)));
    }
    return y;
  };
  return { out: spread("from", "to"), in: spread("to", "from") };
}

function Edge({ edge, at, y1, y2 }) {
  const from = at[edge.from];
  const to = at[edge.to];
  if (!from || !to) return null;
  const x1 = from.x + BOX.width;
  const x2 = to.x - 2; // the arrowhead's tip at the box
  const bend = Math.max(24, (x2 - x1) / 2);
  const on = edge.on || "success";
  // the label sits on the curve halfway across the gap after the parent (a long edge's middle
  // would fall in a column of boxes): the curve's point whose x is nearest that
  const curve = (t) => [0, 1].map((k) => {
    const [a, b, c, d] = k ? [y1, y1, y2, y2] : [x1, x1 + bend, x2 - bend, x2];
    return (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t ** 2 * c + t ** 3 * d;
  });
  const samples = Array.from({ length: 41 }, (_, i) => curve(i / 40));
  const [lx, ly] = samples.reduce((best, p) => (Math.abs(p[0] - x1 - GAP.x / 2) < Math.abs(best[0] - x1 - GAP.x / 2) ? p : best));
  return html`<g class=${`edge edge-${on}`} data-testid="graph-edge" data-from=${edge.from} data-to=${edge.to} data-on=${on}>
    <title>${edge.from} → ${edge.to} on ${on}</title>
    <path d=${`M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`} marker-end=${`url(#arrow-${on})`} />
    ${on !== "success" && html`<text x=${lx} y=${ly} text-anchor="middle" dominant-baseline="central">${on}</text>`}
  </g>`;
}

// One box: the node's id and, in a run, its status (and its attempt after the first); a node with
// a run links to it (href(node), null for none).
function Node({ node, at, state, join, href }) {
  const { x, y } = at[node];
  const status = state?.status || "defined";
  const attempt = state?.attempt > 1 ? ` · attempt ${state.attempt}` : "";
  const line = state ? `${status}${attempt}` : join === "any" ? "join any" : "";
  const title = `${node}${state ? `: ${status}${attempt}` : ""}${join === "any" ? " (join any)" : ""}${state?.error ? ` — ${state.error}` : ""}`;
  const box = html`<g class=${`node node-${status}`} data-testid="graph-node" data-node=${node} data-status=${status}>
    <title>${title}</title>
    <rect x=${x} y=${y} width=${BOX.width} height=${BOX.height} rx="6" />
    <text class="node-id" x=${x + 10} y=${y + 21}>${short(node)}</text>
    <text class="node-status" x=${x + 10} y=${y + 39}>${line}</text>
  </g>`;
  const link = href && href(node);
  return link ? html`<a href=${link} aria-label=${title}>${box}</a>` : box;
}

// graph: {nodes: [ids], edges: [{from, to, on}], joins: {node: "any"}}; states: a run's nodes
// (absent: the definition, no status); href(node): the link of a node's box, or null.
export function Graph({ graph, states, href, selected }) {
  const { at, width, height } = layout(graph.nodes, graph.edges);
  const port = ports(graph.edges, at);
  return html`<figure class="graph">
    <svg role="img" aria-label="The workflow's graph" data-testid="graph" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`}>
      <defs>
        ${["success", "failure", "always"].map(
          (on) => html`<marker id=${`arrow-${on}`} class=${`arrow arrow-${on}`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" />
          </marker>`,
        )}
        <pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
          <rect class="hatch-ground" width="8" height="8" />
          <line class="hatch-line" x1="0" y1="0" x2="0" y2="8" />
        </pattern>
      </defs>
      ${graph.edges.map((edge, i) => html`<${Edge} edge=${edge} at=${at} y1=${port.out[i]} y2=${port.in[i]} />`)}
      ${graph.nodes.map(
        (node) => html`<g class=${node === selected ? "selected" : ""}>
          <${Node} node=${node} at=${at} state=${states?.[node]} join=${graph.joins?.[node]} href=${href} />
        </g>`,
      )}
    </svg>
    <figcaption>Edges: <span class="key key-success">on success</span> <span class="key key-failure">on failure</span> <span class="key key-always">always</span></figcaption>
  </figure>`;
}
