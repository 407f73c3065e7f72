// The top of the Fleet page: how the whole fleet streams, from the fleet
// summary (GET /api/fleet/summary, whose cost does not grow with the
// fleet), and the connections that need attention: the STARTED ones that no
// live worker holds, the longest free first (at most 20; the summary says
// when there are more), then those live workers hold that are not streaming
// or stalled, the longest first.
//
// Hooks for tests and scripts: #fleet-health[data-health] (down, degraded,
// unknown, healthy, idle), .stat[data-stat] with its .stat-value,
// tr[data-free-id] (a free connection) and tr[data-held-id][data-owner]
// [data-reason] (a held one: not_streaming or stalled), each with
// td[data-field] (id, why, last_error).
import { h, icon, inPageLink, setText, setTitle, syncRows } from './dom.js';
import {
  countOf, fleetHealth, formatCount, formatSpan, formatWallTime,
} from './fleet-format.js';

// The figures, in the order shown. value(c, workers) and note(c, workers)
// read the summary's connections and workers; level() says how to colour
// the value: '' (plain), 'good', 'warning' or 'danger'.
const STATS = [
  {
    key: 'total', label: 'Connections',
    value: (c) => c.total,
    note: (c) => `${formatCount(c.started)} started · ${formatCount(c.stopped)} stopped`,
  },
  {
    key: 'streaming', label: 'Streaming',
    value: (c) => c.streaming,
    note: (c) => `of ${formatCount(c.started)} started`,
    share: (c) => (c.started > 0 ? c.streaming / c.started : 0),
  },
  {
    key: 'not_streaming', label: 'Not streaming',
    value: (c) => c.not_streaming,
    note: () => 'started, but not streaming',
    level: (c, alive) => {
      if (c.not_streaming === 0) return '';
      return alive === 0 ? 'danger' : 'warning';
    },
  },
  {
    key: 'reconnecting', label: 'Reconnecting',
    value: (c) => c.reconnecting,
    note: () => 'upstream failed; trying again',
    level: (c) => (c.reconnecting > 0 ? 'warning' : ''),
  },
  {
    key: 'stalled', label: 'Stalled',
    value: (c) => c.stalled,
    note: () => 'connected, no recent message',
    level: (c) => (c.stalled > 0 ? 'warning' : ''),
  },
  {
    key: 'erroring', label: 'Erroring',
    value: (c) => c.erroring,
    note: () => 'last upstream attempt failed',
    level: (c) => (c.erroring > 0 ? 'danger' : ''),
  },
];

// Rows of "Needs attention" shown until the user asks for all of them (up
// to 20 free and 20 held), so that the workers and the table stay near.
const ATTENTION_SHOWN = 5;

// What a held connection's reason says.
const REASONS = { not_streaming: 'Not streaming', stalled: 'Stalled' };

const HEALTH_ICONS = {
  down: 'alert', degraded: 'alert', unknown: 'clock', healthy: 'fleet', idle: 'fleet',
};

export class SummaryView {
  // onFind(id): the user asked to see connection `id` in the table.
  constructor({ onFind }) {
    this.onFind = onFind;
    this.summary = null;
    this.rows = new Map(); // 'free <id>' or 'held <owner> <reason> <id>' -> row
    this.attentionExpanded = false;
    this.build();
  }

  build() {
    this.healthIcon = h('span', { class: 'health-icon' });
    this.healthTitle = h('h2', { class: 'health-title', id: 'fleet-health-title' });
    this.healthDetail = h('p', { class: 'health-detail' });
    this.health = h('div', { class: 'fleet-health', id: 'fleet-health', hidden: true },
      this.healthIcon, h('div', { class: 'health-text' }, this.healthTitle, this.healthDetail));
    this.stats = new Map();
    const tiles = STATS.map((stat) => this.statTile(stat.key, stat.label, Boolean(stat.share)));
    tiles.push(this.statTile('workers', 'Workers', true));
    this.figures = h('div', { class: 'stats', id: 'fleet-stats', hidden: true }, tiles);
    this.element = h('section', {
      class: 'fleet-summary', 'aria-labelledby': 'fleet-health-title', 'aria-busy': 'true',
    }, this.health, this.figures);
    this.buildAttention();
  }

  statTile(key, label, withMeter) {
    const value = h('span', { class: 'stat-value' });
    const note = h('span', { class: 'stat-note' });
    const meter = withMeter
      ? h('span', { class: 'meter', 'aria-hidden': 'true' }, h('span', { class: 'meter-fill' }))
      : null;
    const element = h('div', { class: 'stat', 'data-stat': key },
      h('span', { class: 'stat-label', text: label }), value, meter, note);
    this.stats.set(key, { element, value, note, meter });
    return element;
  }

  buildAttention() {
    this.attentionBody = h('tbody');
    this.attentionTable = h('table', { class: 'data-table attention-table', id: 'attention-list' },
      h('caption', { class: 'visually-hidden', text: 'Connections that need attention' }),
      h('thead', {}, h('tr', {},
        ['Connection', 'Why', 'Last error']
          .map((label) => h('th', { scope: 'col', text: label })))),
      this.attentionBody);
    this.attentionCount = h('span', { class: 'count', id: 'attention-count' });
    this.freeMore = h('p', { class: 'section-note', id: 'attention-more', hidden: true });
    this.allHeld = h('p', { class: 'all-held', id: 'attention-none', hidden: true });
    this.attentionToggle = h('button', {
      type: 'button', class: 'button button-small attention-toggle', id: 'attention-all',
      hidden: true, 'aria-controls': 'attention-list', 'aria-expanded': 'false',
      on: {
        click: () => {
          this.attentionExpanded = !this.attentionExpanded;
          if (this.summary) this.showAttention(this.summary, this.nowMs);
        },
      },
    });
    this.attention = h('section', {
      class: 'fleet-section', id: 'attention', 'aria-labelledby': 'attention-title', hidden: true,
    },
    h('div', { class: 'section-head' },
      h('h2', { id: 'attention-title' }, 'Needs attention', this.attentionCount)),
    this.attentionNote = h('p', {
      class: 'section-note',
      text: 'First the started connections that no live worker holds, the longest free ' +
        'first: a worker with room takes each within seconds, so one that stays here has no ' +
        'worker to go to. Then those a live worker holds that have not been connected for ' +
        '5 s or more, or are connected but stalled, the longest first.',
    }),
    this.allHeld,
    h('div', { class: 'table-area' }, this.attentionTable),
    this.attentionToggle,
    this.freeMore);
  }

  // A new summary (nowMs: the server's time, or null before it is known).
  show(summary, nowMs) {
    this.summary = summary;
    this.element.removeAttribute('aria-busy');
    this.showHealth(summary);
    this.showStats(summary);
    this.showAttention(summary, nowMs);
  }

  showHealth(summary) {
    const health = fleetHealth(summary);
    this.health.hidden = false;
    this.health.dataset.health = health.kind;
    if (this.healthIcon.dataset.icon !== HEALTH_ICONS[health.kind]) {
      this.healthIcon.dataset.icon = HEALTH_ICONS[health.kind];
      this.healthIcon.replaceChildren(icon(HEALTH_ICONS[health.kind], 22));
    }
    setText(this.healthTitle, health.title);
    setText(this.healthDetail, health.detail);
  }

  showStats(summary) {
    const c = summary.connections;
    const alive = summary.workers.filter((w) => w.alive);
    this.figures.hidden = false;
    for (const stat of STATS) {
      const tile = this.stats.get(stat.key);
      setText(tile.value, formatCount(stat.value(c)));
      setText(tile.note, stat.note(c));
      tile.element.dataset.level = stat.level ? stat.level(c, alive.length) : '';
      if (stat.share) this.fill(tile.meter, stat.share(c));
    }
    // The figures of streams are the live workers' own: say so when one
    // does not give them.
    this.stats.get('streaming').element.dataset.known = String(c.streams_known);
    const workers = this.stats.get('workers');
    const capacity = alive.reduce((sum, w) => sum + w.capacity, 0);
    const owned = alive.reduce((sum, w) => sum + w.owned, 0);
    const gone = summary.workers.length - alive.length;
    setText(workers.value, `${formatCount(alive.length)} alive`);
    setText(workers.note, `${formatCount(owned)} / ${formatCount(capacity)} capacity` +
      (gone > 0 ? ` · ${formatCount(gone)} gone` : ''));
    workers.element.dataset.level = alive.length === 0 && c.started > 0 ? 'danger' : '';
    this.fill(workers.meter, capacity > 0 ? owned / capacity : 0);
  }

  // CSSOM, not a style attribute: the page's CSP allows only its stylesheet.
  fill(meter, share) {
    meter.firstChild.style.width = `${(Math.min(1, Math.max(0, share)) * 100).toFixed(1)}%`;
  }

  // ---- needs attention ----

  // The free ones first, then those the live workers hold; each in the
  // summary's order (the longest first). A row is kept while its connection
  // stays in the list for the same cause, so that a focused link stays.
  showAttention(summary, nowMs) {
    const free = summary.free;
    const held = summary.attention || [];
    const started = summary.connections.started;
    this.attention.hidden = false;
    const wanted = [
      ...free.map((f) => ({ key: `free ${f.id}`, id: f.id, free: f })),
      ...held.map((t) => ({ key: `held ${t.owner} ${t.reason} ${t.id}`, id: t.id, held: t })),
    ];
    syncRows(this.rows, this.attentionBody, wanted, (want) => want.key,
      (want) => this.attentionRow(want), (row, want) => {
        row.since = want.free ? want.free.free_since_ms : want.held.since_ms;
        if (want.free) this.fillFreeError(row, want.free);
      });
    this.nowMs = nowMs;
    this.tick(nowMs);
    const any = wanted.length > 0;
    const folds = wanted.length > ATTENTION_SHOWN;
    const shown = folds && !this.attentionExpanded ? ATTENTION_SHOWN : wanted.length;
    wanted.forEach((want, i) => {
      this.rows.get(want.key).element.hidden = i >= shown;
    });
    this.attentionToggle.hidden = !folds;
    this.attentionToggle.setAttribute('aria-expanded', String(this.attentionExpanded));
    setText(this.attentionToggle, this.attentionExpanded
      ? `Show the first ${ATTENTION_SHOWN}` : `Show all ${formatCount(wanted.length)}`);
    setText(this.attentionCount, any
      ? `${formatCount(wanted.length)}${summary.more_free ? '+' : ''}` : '');
    this.attentionTable.hidden = !any;
    this.attentionNote.hidden = !any;
    this.allHeld.hidden = any;
    setText(this.allHeld, started === 0
      ? 'Nothing: no connection is started.'
      : 'Nothing: every started connection is held by a live worker, and no worker names ' +
        'one that is not streaming or stalled.');
    this.freeMore.hidden = !summary.more_free;
    // The live workers' figures say about how many there are.
    const about = Math.max(free.length, started - summary.connections.owned);
    setText(this.freeMore, `More are free (about ${formatCount(about)}): these are the ` +
      `${countOf(free.length, 'connection')} free the longest.`);
  }

  // A row of the list: want.free (a free connection of the summary) or
  // want.held (one of its attention list).
  attentionRow(want) {
    const { id } = want;
    const link = inPageLink(`/fleet?prefix=${encodeURIComponent(id)}`,
      `Show ${id} in the connections below`, () => this.onFind(id), h('code', { text: id }));
    // What is wrong, then how long it has been so: "Free for 2 min",
    // "Stalled on worker-1 for 3 min".
    const cause = want.free ? 'Free'
      : `${REASONS[want.held.reason] || want.held.reason} on ${want.held.owner}`;
    const span = h('span', { class: 'attention-for' });
    const cells = {
      id: h('td', { 'data-field': 'id', 'data-label': 'Connection' }, link),
      why: h('td', { 'data-field': 'why', 'data-label': 'Why' }, `${cause} `, span),
      lastError: h('td', { 'data-field': 'last_error', 'data-label': 'Last error' }),
    };
    // A held one's is left blank, not "—": the summary does not carry it
    // (the connection's row in the table does).
    const element = h('tr', want.free
      ? { 'data-free-id': id }
      : { 'data-held-id': id, 'data-owner': want.held.owner, 'data-reason': want.held.reason },
    Object.values(cells));
    return { id, cells, span, since: 0, cause, element };
  }

  fillFreeError(row, f) {
    const cell = row.cells.lastError;
    if (cell.dataset.error === f.last_error) return;
    cell.dataset.error = f.last_error;
    cell.replaceChildren(f.last_error
      ? h('span', { class: 'error-text', text: f.last_error })
      : h('span', { class: 'muted', text: '—' }));
    setTitle(cell, f.last_error);
  }

  // Redraws how long each has been free, at the server's time `nowMs`.
  tick(nowMs) {
    if (nowMs == null) return;
    this.nowMs = nowMs;
    for (const row of this.rows.values()) {
      const { since } = row;
      setText(row.span, since > 0 ? `for ${formatSpan(nowMs - since)}` : '');
      setTitle(row.cells.why, since > 0 ? `${row.cause} since ${formatWallTime(since)}` : '');
    }
  }
}
