// The top of the Fleet page: how the whole fleet streams, from the fleet
// summary (GET /api/fleet/summary, whose cost does not grow with the
// fleet), and the connections that need attention: the STARTED ones that no
// live worker holds, the longest free first (at most 20; the summary says
// when there are more).
//
// Hooks for tests and scripts: #fleet-health[data-health] (down, degraded,
// unknown, healthy, idle), .stat[data-stat] with its .stat-value, and
// tr[data-free-id] with td[data-field] (id, free_for, last_error).
import { h, icon, setText, setTitle } from './dom.js';
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

const HEALTH_ICONS = {
  down: 'alert', degraded: 'alert', unknown: 'clock', healthy: 'fleet', idle: 'fleet',
};

export class SummaryView {
  // onFind(id): the user asked to see connection `id` in the table.
  constructor({ onFind }) {
    this.onFind = onFind;
    this.summary = null;
    this.freeRows = new Map(); // id -> row
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
    this.freeBody = h('tbody');
    this.freeTable = h('table', { class: 'data-table attention-table', id: 'attention-list' },
      h('caption', { class: 'visually-hidden', text: 'Connections that need attention' }),
      h('thead', {}, h('tr', {},
        ['Connection', 'Free for', 'Last error']
          .map((label) => h('th', { scope: 'col', text: label })))),
      this.freeBody);
    this.freeCount = h('span', { class: 'count', id: 'attention-count' });
    this.freeMore = h('p', { class: 'section-note', id: 'attention-more', hidden: true });
    this.allHeld = h('p', { class: 'all-held', id: 'attention-none', hidden: true });
    this.attention = h('section', {
      class: 'fleet-section', id: 'attention', 'aria-labelledby': 'attention-title', hidden: true,
    },
    h('div', { class: 'section-head' },
      h('h2', { id: 'attention-title' }, 'Needs attention', this.freeCount)),
    this.freeNote = h('p', {
      class: 'section-note',
      text: 'Started connections that no live worker holds, the longest free first. A worker ' +
        'with room takes each within seconds; one that stays here has no worker to go to.',
    }),
    this.allHeld,
    h('div', { class: 'table-area' }, this.freeTable),
    this.freeMore);
  }

  // A new summary (nowMs: the server's time, or null before it is known).
  show(summary, nowMs) {
    this.summary = summary;
    this.element.removeAttribute('aria-busy');
    this.showHealth(summary);
    this.showStats(summary);
    this.showFree(summary, nowMs);
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

  showFree(summary, nowMs) {
    const { free } = summary;
    const started = summary.connections.started;
    this.attention.hidden = false;
    const ids = new Set(free.map((f) => f.id));
    for (const [id, row] of this.freeRows) {
      if (!ids.has(id)) {
        row.element.remove();
        this.freeRows.delete(id);
      }
    }
    free.forEach((f, index) => {
      let row = this.freeRows.get(f.id);
      if (!row) {
        row = this.freeRow(f.id);
        this.freeRows.set(f.id, row);
      }
      if (this.freeBody.children[index] !== row.element) {
        this.freeBody.insertBefore(row.element, this.freeBody.children[index] || null);
      }
      row.free = f;
      this.fillFreeError(row, f);
    });
    this.tick(nowMs);
    setText(this.freeCount, free.length === 0 ? '' : `${formatCount(free.length)}` +
      (summary.more_free ? '+' : ''));
    this.freeTable.hidden = free.length === 0;
    this.freeNote.hidden = free.length === 0;
    this.allHeld.hidden = free.length > 0;
    setText(this.allHeld, started === 0
      ? 'Nothing: no connection is started.'
      : 'Nothing: every started connection is held by a live worker.');
    this.freeMore.hidden = !summary.more_free;
    // The live workers' figures say about how many there are.
    const about = Math.max(free.length, started - summary.connections.owned);
    setText(this.freeMore, `More are free (about ${formatCount(about)}): these are the ` +
      `${countOf(free.length, 'connection')} free the longest.`);
  }

  freeRow(id) {
    const link = h('a', {
      href: `/fleet?prefix=${encodeURIComponent(id)}`, class: 'conn-link',
      title: `Show ${id} in the connections below`,
      on: {
        click: (event) => {
          if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
          event.preventDefault();
          this.onFind(id);
        },
      },
    }, h('code', { text: id }));
    const cells = {
      id: h('td', { 'data-field': 'id', 'data-label': 'Connection' }, link),
      freeFor: h('td', { 'data-field': 'free_for', 'data-label': 'Free for' }),
      lastError: h('td', { 'data-field': 'last_error', 'data-label': 'Last error' }),
    };
    const element = h('tr', { 'data-free-id': id }, Object.values(cells));
    return { id, cells, free: null, element };
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
    for (const row of this.freeRows.values()) {
      const since = row.free.free_since_ms;
      setText(row.cells.freeFor, since > 0 ? formatSpan(nowMs - since) : '—');
      setTitle(row.cells.freeFor, since > 0 ? `Free since ${formatWallTime(since)}` : '');
    }
  }
}
