// Each run's lateness (fired_at - scheduled_for, ms) by its scheduled time, drawn by uPlot (the
// classic script vendor/uPlot-*.iife.min.js, loaded before the modules, defines it globally).
// Times are written as everywhere on the page: UTC, ISO order, 24-hour clock.
import { html, useEffect, useRef } from "./vendor/htm-preact-3.1.1.module.js";

// The x axis's labels (ticks in seconds): the time of day, with the date where it changes (and on
// the first tick), and seconds only when the ticks are less than a minute apart.
export function isoTicks(ticks, increment) {
  let day = "";
  return ticks.map((tick) => {
    const iso = new Date(tick * 1000).toISOString();
    const time = increment < 60 ? iso.slice(11, 19) : iso.slice(11, 16);
    if (iso.slice(0, 10) === day) return time;
    day = iso.slice(0, 10);
    return `${time}\n${day}`;
  });
}

// Each axis as wide as its labels: uPlot gives an axis a fixed room (its `size`) and cuts what
// does not fit at the canvas's edge ("12,345 ms" on a 70 px y axis). `size` as a function is
// uPlot's own way to fit it (its demos/axis-autosize.html): called with the axis's labels, again
// on each redraw, and held once its cycles have converged.
function fitLabels(u, values, axisIdx, cycle) {
  const axis = u.axes[axisIdx];
  if (cycle > 1) return axis._size;
  u.ctx.font = axis.font[0];
  const widest = Math.max(0, ...(values || []).flatMap((v) => String(v).split("\n")).map((line) => u.ctx.measureText(line).width));
  return Math.ceil(axis.ticks.size + axis.gap + widest / window.uPlot.pxRatio + LABEL_MARGIN);
}

// The room right of the plot: half the widest time label, which the last x tick centres on the
// plot's right edge (uPlot's default, half a y axis's default size, is 25 px: "08:00:02" is wider).
function rightRoom(u) {
  u.ctx.font = u.axes[0].font[0];
  const widest = Math.max(...["00:00:00", "0000-00-00"].map((text) => u.ctx.measureText(text).width));
  return Math.ceil(widest / window.uPlot.pxRatio / 2 + LABEL_MARGIN);
}

const LABEL_MARGIN = 4;

const TICK_SECONDS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

export function LatenessChart({ runs }) {
  const box = useRef(null);
  const plot = useRef(null);
  const measured = runs
    .filter((r) => r.lateness_ms !== null && r.lateness_ms !== undefined)
    .sort((a, b) => a.scheduled_for.localeCompare(b.scheduled_for));
  const data = [measured.map((r) => Date.parse(r.scheduled_for) / 1000), measured.map((r) => r.lateness_ms)];
  useEffect(() => {
    if (!window.uPlot || !box.current || !measured.length) return;
    if (plot.current) {
      plot.current.setData(data);
      return;
    }
    plot.current = new window.uPlot(
      {
        width: box.current.clientWidth || 640,
        height: 220,
        tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"), // every time shown is UTC
        legend: { show: false }, // one series, named in the caption: a legend would be an empty box
        padding: [null, rightRoom, null, null], // null: uPlot's own
        series: [{}, { label: "lateness", stroke: "#2563eb", width: 2, points: { show: true, size: 6 } }],
        axes: [
          // whole seconds at least between ticks, far enough apart for "HH:MM:SS"
          { values: (u, ticks, axis, space, increment) => isoTicks(ticks, increment), incrs: TICK_SECONDS, space: 80, size: 50 },
          { values: (u, ticks) => ticks.map((v) => `${v.toLocaleString("en-US")} ms`), size: fitLabels },
        ],
        scales: {
          // one run: a minute either side of it (uPlot's own range for a single time spans years)
          x: { time: true, range: (u, min, max) => (u.data[0].length === 1 ? [u.data[0][0] - 60, u.data[0][0] + 60] : [min, max]) },
          y: { range: (u, min, max) => [0, Math.max(10, max * 1.2)] },
        },
      },
      data,
      box.current,
    );
  }, [JSON.stringify(data)]);
  useEffect(() => () => plot.current?.destroy(), []);
  return html`<figure class="chart">
    <figcaption>Lateness of each run (ms), by its scheduled time</figcaption>
    <div ref=${box} data-testid="lateness-chart"></div>
    ${!measured.length && html`<p class="empty">No run has fired yet.</p>`}
  </figure>`;
}
