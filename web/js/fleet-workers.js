// The Fleet page's table of workers (GET /api/fleet/workers), alive or
// gone: each one's load against its capacity, how its connections stream,
// its rate, its session and its last report. A worker's ID links to its
// connections in the table of connections.
//
// Hooks for tests and scripts: tr[data-worker-id] with td[data-field] for
// each column, and #workers-count.
import { h, inPageLink, loadingState, messageState, setText, setTitle, syncRows } from './dom.js';
import {
  formatAgo, formatCount, formatRate, formatSpan, formatWallTime,
} from './fleet-format.js';

function td(field, label, ...children) {
  return h('td', { 'data-field': field, 'data-label': label }, ...children);
}

// A worker's streams, as its figures say: streaming first, then each kind
// of trouble it has; null for a worker of an older build that does not say.
function streamParts(w) {
  if (w.streaming === undefined) return null;
  const parts = [{ text: `${formatCount(w.streaming)} streaming`, kind: '' }];
  if (w.reconnecting > 0) {
    parts.push({ text: `${formatCount(w.reconnecting)} reconnecting`, kind: 'warning' });
  }
  if (w.stalled > 0) parts.push({ text: `${formatCount(w.stalled)} stalled`, kind: 'warning' });
  if (w.erroring > 0) parts.push({ text: `${formatCount(w.erroring)} erroring`, kind: 'danger' });
  return parts;
}

export class WorkerTable {
  // onFind(id): the user asked to see the worker's connections.
  constructor({ onFind }) {
    this.onFind = onFind;
    this.rows = new Map(); // worker id -> row
    this.workers = null;
    this.body = h('tbody');
    this.table = h('table', { class: 'data-table worker-table', id: 'workers' },
      h('caption', { class: 'visually-hidden', text: 'Workers' }),
      h('thead', {}, h('tr', {},
        ['Worker', 'Status', 'Connections', 'Streams', 'Messages/s', 'Messages', 'Session',
          'Last report'].map((label) => h('th', { scope: 'col', text: label })))),
      this.body);
    this.area = h('div', { class: 'table-area' }, loadingState('Loading workers…'));
    this.count = h('span', { class: 'count', id: 'workers-count' });
    this.element = h('section', { class: 'fleet-section', 'aria-labelledby': 'workers-title' },
      h('div', { class: 'section-head' },
        h('h2', { id: 'workers-title' }, 'Workers', this.count)),
      this.area);
  }

  show(workers, nowMs) {
    this.workers = workers;
    syncRows(this.rows, this.body, workers, (w) => w.id, (w) => this.workerRow(w.id),
      (row, w) => this.fillWorker(row, w, nowMs));
    const alive = workers.filter((w) => w.alive).length;
    setText(this.count,
      workers.length === alive ? String(alive) : `${alive} of ${workers.length} alive`);
    let content = this.table;
    if (workers.length === 0) {
      content = this.noWorkers || (this.noWorkers = messageState({
        iconName: 'fleet',
        boxed: true,
        title: 'No workers have joined',
        body: 'Workers join by writing their membership to the store when they start. ' +
          'Until one does, no connection is streamed.',
      }));
    }
    if (this.area.firstChild !== content) this.area.replaceChildren(content);
  }

  workerRow(id) {
    const link = inPageLink(`/fleet?owner=${encodeURIComponent(id)}`,
      `Show the connections ${id} holds`, () => this.onFind(id), h('code', { text: id }));
    const cells = {
      id: td('id', 'Worker', link),
      alive: td('alive', 'Status'),
      owned: td('owned', 'Connections'),
      streams: td('streams', 'Streams'),
      rate: td('messages_per_s', 'Messages/s'),
      messages: td('messages', 'Messages'),
      lease: td('lease', 'Session'),
      updated: td('updated', 'Last report'),
    };
    const row = { id, cells, worker: null, streamsKey: null };
    row.aliveTag = h('span', { class: 'tag' });
    cells.alive.append(row.aliveTag);
    row.ownedText = h('span', { class: 'owned-text' });
    row.meter = h('span', { class: 'meter', 'aria-hidden': 'true' },
      h('span', { class: 'meter-fill' }));
    cells.owned.append(row.ownedText, row.meter);
    row.expiry = h('span', { 'data-field': 'expiry' });
    row.session = h('span', { class: 'muted when', 'data-field': 'session' });
    cells.lease.append(row.expiry, row.session);
    row.element = h('tr', { 'data-worker-id': id }, Object.values(cells));
    return row;
  }

  fillWorker(row, w, nowMs) {
    row.worker = w;
    row.element.dataset.alive = String(w.alive);
    setText(row.aliveTag, w.alive ? 'Alive' : 'Gone');
    row.aliveTag.className = `tag ${w.alive ? 'state-alive' : 'state-gone'}`;
    setText(row.ownedText, `${formatCount(w.owned)} / ${formatCount(w.capacity)}`);
    const share = w.capacity > 0 ? Math.min(1, w.owned / w.capacity) : 0;
    // CSSOM, not a style attribute: the page's CSP allows only its stylesheet.
    row.meter.firstChild.style.width = `${(share * 100).toFixed(1)}%`;
    this.fillStreams(row, w);
    setText(row.cells.rate, formatRate(w.messages_per_s));
    setText(row.cells.messages, formatCount(w.messages));
    this.showTimes(row, nowMs);
  }

  fillStreams(row, w) {
    // A gone worker's figures are its last: what it streamed then, not now.
    const parts = w.alive ? streamParts(w) : null;
    const key = parts ? JSON.stringify(parts) : String(w.alive);
    if (row.streamsKey === key) return;
    row.streamsKey = key;
    if (!parts) {
      row.cells.streams.replaceChildren(h('span', { class: 'muted', text: '—' }));
      setTitle(row.cells.streams, w.alive ? 'This worker does not say how its connections ' +
        'stream (an older build)' : '');
      return;
    }
    row.cells.streams.replaceChildren(...parts.map((p) => h('span', {
      class: `stream-part${p.kind ? ` is-${p.kind}` : ''}`, text: p.text,
    })));
    setTitle(row.cells.streams, '');
  }

  tick(nowMs) {
    for (const row of this.rows.values()) this.showTimes(row, nowMs);
  }

  showTimes(row, nowMs) {
    const w = row.worker;
    if (!w || nowMs == null) return;
    const remainingMs = w.expires_at_ms - nowMs;
    // A worker that stops gives its lease back: expires_at_ms 0.
    let lease = 'left';
    if (w.expires_at_ms > 0) {
      lease = remainingMs > 0
        ? `expires in ${formatSpan(remainingMs)}`
        : `expired ${formatAgo(-remainingMs)}`;
    }
    setText(row.expiry, lease);
    // Its session: which one, and how long it lasts unrenewed; a worker
    // without one keeps each connection's lease on its own.
    setText(row.session, w.session_ttl_ms > 0
      ? `session #${formatCount(w.session_number)} · ${formatSpan(w.session_ttl_ms)}`
      : 'no session');
    setTitle(row.cells.lease, w.heartbeat_at_ms
      ? `last heartbeat ${formatWallTime(w.heartbeat_at_ms)}` : '');
    setText(row.cells.updated, w.updated_at_ms ? formatAgo(nowMs - w.updated_at_ms) : '—');
    setTitle(row.cells.updated, w.updated_at_ms ? formatWallTime(w.updated_at_ms) : '');
  }
}
