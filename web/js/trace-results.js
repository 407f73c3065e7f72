// What a trace found, as the Analyze page shows it under the frames: x(t),
// y(t) and speed plots (uPlot, embedded from npm at /vendor/), a table of the
// sampled frames with lost ones marked, the CSV download, and the movie's
// trace history (who traced when, and how it ended). The current frame is
// marked in the plots and the table; a click on either goes to that frame.
import uPlot from '../vendor/uplot.js';
import { asSentence } from './api.js';
import { h } from './dom.js';
import { formatWallTime } from './fleet-format.js';
import { colourOf } from './frame-viewer.js';
import { framesCsvUrl } from './movies-api.js';

const ROWS_SHOWN_FIRST = 300; // table rows drawn before "Show all"
const PLOT_HEIGHT = 170;

const number1 = new Intl.NumberFormat('en', { minimumFractionDigits: 1,
  maximumFractionDigits: 1 });
const number2 = new Intl.NumberFormat('en', { minimumFractionDigits: 2,
  maximumFractionDigits: 2 });
// Times to the millisecond: a frame's time is exact, and 60 fps frames are
// 17 ms apart.
const seconds3 = new Intl.NumberFormat('en', { minimumFractionDigits: 3,
  maximumFractionDigits: 3 });

function speedOf(row) {
  if (row.status !== 'tracked' || row.vx == null || row.vy == null) return null;
  return Math.hypot(row.vx, row.vy);
}

// The rows as uPlot wants them: one x array (the sampled frames' times) and
// one array per marker, null where it was lost or not sampled.
export function plotData(rows, markers, pick) {
  const frames = [...new Set(rows.map((r) => r.frame))].sort((a, b) => a - b);
  const indexOf = new Map(frames.map((f, i) => [f, i]));
  const times = new Array(frames.length).fill(0);
  const ids = markers.map((m) => m.id);
  for (const row of rows) {
    if (!ids.includes(row.marker_id)) ids.push(row.marker_id);
  }
  const series = ids.map(() => new Array(frames.length).fill(null));
  for (const row of rows) {
    const i = indexOf.get(row.frame);
    times[i] = row.time_s;
    series[ids.indexOf(row.marker_id)][i] = row.status === 'tracked' ? pick(row) : null;
  }
  return { frames, ids, data: [times, ...series] };
}

// A line of the sampled frames each marker lost: "Point 2: frames 41–45".
// Consecutive samples (the trace's interval apart) make one span.
export function lostSummary(rows, labelOf) {
  const sampled = [...new Set(rows.map((r) => r.frame))].sort((a, b) => a - b);
  let step = Infinity;
  for (let i = 1; i < sampled.length; ++i) step = Math.min(step, sampled[i] - sampled[i - 1]);
  const lost = new Map();
  for (const row of rows) {
    if (row.status === 'tracked') continue;
    if (!lost.has(row.marker_id)) lost.set(row.marker_id, []);
    lost.get(row.marker_id).push(row.frame);
  }
  return [...lost.entries()].map(([id, frames]) => {
    frames.sort((a, b) => a - b);
    const spans = [];
    for (const f of frames) {
      const last = spans[spans.length - 1];
      if (last && f - last[1] <= step) last[1] = f;
      else spans.push([f, f]);
    }
    const text = spans.map(([a, b]) => (a === b ? `${a}` : `${a}–${b}`)).join(', ');
    return `${labelOf(id)}: ${frames.length} sample${frames.length === 1 ? '' : 's'} lost ` +
      `(frame${frames.length === 1 ? '' : 's'} ${text})`;
  });
}

const EVENTS = {
  'movie.tracing.started': 'Trace started',
  'movie.tracing.completed': 'Trace completed',
  'movie.tracing.failed': 'Trace failed',
  'movie.analysis.broken': 'Editing lease broken',
};

export class TraceResults {
  // onFrame(n): the user picked frame n in a plot or the table.
  constructor(movieId, { onFrame }) {
    this.movieId = movieId;
    this.onFrame = onFrame;
    this.plots = [];
    this.frame = 0;
    this.rowsByFrame = new Map();
    this.resizeObserver = new ResizeObserver(() => this.resizePlots());
    this.element = h('section', { class: 'results', 'aria-labelledby': 'results-title' });
    this.historyList = h('ol', { class: 'history', id: 'trace-history' });
    this.history = h('section', { class: 'results-history', 'aria-labelledby': 'history-title' },
      h('h3', { id: 'history-title', text: 'Trace history' }), this.historyList);
  }

  // rows: every frame row of the latest trace; markers: the movie's.
  show(rows, markers, movie) {
    this.destroyPlots();
    this.rows = rows;
    const labels = new Map(markers.map((m) => [m.id, m.label]));
    for (const row of rows) if (!labels.has(row.marker_id)) labels.set(row.marker_id, row.label);
    const labelOf = (id) => labels.get(id) || id;
    const lost = lostSummary(rows, labelOf);
    const samples = new Set(rows.map((r) => r.frame)).size;
    const head = h('div', { class: 'section-head' },
      h('h2', { id: 'results-title', text: 'Results' }),
      h('a', {
        class: 'button', href: framesCsvUrl(this.movieId), download: `${movie.name}.csv`,
        id: 'download-csv',
      }, 'Download CSV'));
    const summary = h('p', { class: 'results-summary' },
      `${samples} sampled frame${samples === 1 ? '' : 's'} × ${labels.size} ` +
      `marker${labels.size === 1 ? '' : 's'}. `,
      lost.length === 0 ? 'No marker was lost.' : 'Lost (the match scored below 0.6):');
    const lostList = lost.length ? h('ul', { class: 'lost-list' },
      lost.map((text) => h('li', { text }))) : null;

    this.plotArea = h('div', { class: 'plots' });
    const specs = [
      { title: 'x (px)', pick: (r) => r.x, id: 'plot-x' },
      { title: 'y (px, down)', pick: (r) => r.y, id: 'plot-y' },
      { title: 'Speed (px/s)', pick: speedOf, id: 'plot-speed' },
    ];
    this.plotFrames = null;
    for (const spec of specs) {
      const { frames, ids, data } = plotData(rows, markers, spec.pick);
      this.plotFrames = frames;
      const holder = h('figure', { class: 'plot', id: spec.id },
        h('figcaption', { text: `${spec.title} against time (s)` }));
      this.plotArea.append(holder);
      this.plots.push({ holder, ids, data, spec });
    }

    this.tableBody = h('tbody');
    this.table = h('table', { class: 'frames-table', id: 'frames-table' },
      h('caption', { class: 'visually-hidden', text: 'Traced frames' }),
      h('thead', {}, h('tr', {}, ['Frame', 'Time (s)', 'Marker', 'x', 'y', 'Speed (px/s)',
        'Score', 'Status'].map((label) => h('th', { scope: 'col', text: label })))),
      this.tableBody);
    this.rowsByFrame = new Map();
    this.fillTable(rows, labelOf, ROWS_SHOWN_FIRST);
    const tableWrap = h('div', { class: 'frames-table-wrap', tabindex: '0',
      'aria-label': 'Traced frames (scrolls)' }, this.table);
    this.moreButton = rows.length > ROWS_SHOWN_FIRST ? h('button', {
      type: 'button', class: 'button button-small',
      on: { click: () => { this.fillTable(rows, labelOf, rows.length); this.moreButton.remove(); } },
    }, `Show all ${rows.length} rows`) : null;

    this.element.replaceChildren(...[head, summary, lostList, this.plotArea,
      h('h3', { text: 'Frames' }), tableWrap, this.moreButton, this.history].filter(Boolean));
    // The plots need their width: drawn once the section is in the page.
    requestAnimationFrame(() => this.drawPlots());
  }

  fillTable(rows, labelOf, count) {
    this.tableBody.replaceChildren();
    this.rowsByFrame.clear();
    const sorted = [...rows].sort((a, b) => a.frame - b.frame ||
      (a.marker_id < b.marker_id ? -1 : 1));
    for (const row of sorted.slice(0, count)) {
      const speed = speedOf(row);
      const tr = h('tr', { 'data-frame': String(row.frame), 'data-status': row.status,
        on: { click: () => this.onFrame(row.frame) } },
      h('td', { text: String(row.frame) }),
      h('td', { text: seconds3.format(row.time_s) }),
      h('td', { text: labelOf(row.marker_id) }),
      h('td', { text: number1.format(row.x) }),
      h('td', { text: number1.format(row.y) }),
      h('td', { text: speed == null ? '—' : number1.format(speed) }),
      h('td', { text: number2.format(row.score) }),
      h('td', {}, h('span', { class: `tag status-${row.status}`, text: row.status })));
      this.tableBody.append(tr);
      if (!this.rowsByFrame.has(row.frame)) this.rowsByFrame.set(row.frame, []);
      this.rowsByFrame.get(row.frame).push(tr);
    }
    this.markFrame(this.frame, false);
  }

  drawPlots() {
    if (!this.element.isConnected) return;
    const style = getComputedStyle(document.documentElement);
    const muted = style.getPropertyValue('--text-muted').trim() || '#5b6370';
    const grid = style.getPropertyValue('--border').trim() || '#d9dde3';
    const accent = style.getPropertyValue('--text').trim() || '#1a1d23';
    const labels = new Map((this.markers || []).map((m) => [m.id, m.label]));
    for (const plot of this.plots) {
      const width = Math.max(200, plot.holder.clientWidth);
      const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
      const options = {
        width,
        height: PLOT_HEIGHT,
        legend: { show: true },
        cursor: { sync: { key: `trace-${this.movieId}` }, drag: { x: false, y: false } },
        scales: { x: { time: false } },
        axes: [{ ...axis }, { ...axis, size: 56 }],
        series: [
          { label: 'Time (s)', value: (u, v) => (v == null ? '—' : seconds3.format(v)) },
          ...plot.ids.map((id, i) => ({
            label: labels.get(id) || this.labelFor(id),
            stroke: colourOf(i),
            width: 2,
            spanGaps: false,
            points: { show: plot.data[0].length <= 60 },
            value: (u, v) => (v == null ? '—' : number1.format(v)),
          })),
        ],
        hooks: {
          draw: [(u) => {
            // The current frame: a line across the plot at its time.
            const t = this.times ? this.times.seconds(this.frame) : null;
            if (t == null) return;
            const x = u.valToPos(t, 'x', true);
            if (!Number.isFinite(x)) return;
            const { ctx } = u;
            ctx.save();
            ctx.strokeStyle = accent;
            ctx.globalAlpha = 0.6;
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.restore();
          }],
        },
      };
      plot.chart = new uPlot(options, plot.data, plot.holder);
      plot.chart.over.addEventListener('click', () => {
        const index = plot.chart.cursor.idx;
        if (index != null && this.plotFrames) this.onFrame(this.plotFrames[index]);
      });
      this.resizeObserver.observe(plot.holder);
    }
  }

  labelFor(id) {
    const row = this.rows.find((r) => r.marker_id === id);
    return row ? row.label : id;
  }

  // The movie's markers, for the plots' labels.
  context({ markers }) {
    this.markers = markers;
  }

  // Each frame's time (frame-times.js), for the line at the current frame.
  setTimes(times) {
    this.times = times;
    for (const plot of this.plots) plot.chart?.redraw(false, false);
  }

  resizePlots() {
    for (const plot of this.plots) {
      if (!plot.chart) continue;
      const width = Math.max(200, plot.holder.clientWidth);
      if (plot.chart.width !== width) plot.chart.setSize({ width, height: PLOT_HEIGHT });
    }
  }

  // The current frame, marked in the plots and the table.
  markFrame(frame, scroll = true) {
    const previous = this.rowsByFrame.get(this.frame) || [];
    for (const tr of previous) tr.removeAttribute('aria-current');
    this.frame = frame;
    const rows = this.rowsByFrame.get(frame) || [];
    for (const tr of rows) tr.setAttribute('aria-current', 'true');
    if (scroll && rows.length) {
      const wrap = rows[0].closest('.frames-table-wrap');
      if (wrap) {
        const top = rows[0].offsetTop - wrap.clientHeight / 2;
        wrap.scrollTop = Math.max(0, top);
      }
    }
    for (const plot of this.plots) plot.chart?.redraw(false, false);
  }

  // audit: [{event, job_id, user_display_name, at_ms, summary}], oldest first.
  showHistory(audit) {
    const items = [...audit].reverse().map((entry) => {
      const what = EVENTS[entry.event] || entry.event;
      const kind = entry.event.endsWith('failed') ? 'failed'
        : entry.event.endsWith('completed') ? 'completed' : 'other';
      return h('li', { 'data-event': entry.event, class: `history-${kind}` },
        h('span', { class: 'history-what', text: what }),
        h('span', { class: 'muted', text: ` by ${entry.user_display_name} · ` }),
        h('time', { datetime: new Date(entry.at_ms).toISOString(),
          text: formatWallTime(entry.at_ms) }),
        entry.summary ? h('p', { class: 'history-summary', text: asSentence(entry.summary) })
          : null);
    });
    this.historyList.replaceChildren(...(items.length ? items
      : [h('li', { class: 'muted', text: 'This movie has not been traced yet.' })]));
  }

  destroyPlots() {
    this.resizeObserver.disconnect();
    for (const plot of this.plots) plot.chart?.destroy();
    this.plots = [];
  }

  destroy() {
    this.destroyPlots();
  }
}
