// The Fleet page (/fleet): the stream fleet's connections, which worker owns
// each and until when, how far it has read and how fast; and the workers,
// alive or gone, with their load. It asks the server every second while the
// page is visible (never while it is hidden), counts leases down between
// answers against the server's clock, and says when what it shows is stale.
// Admins also add connections, start, stop and remove them; other users see
// no controls for that (and the server would refuse them).
//
// Rows carry hooks for tests and scripts: tr[data-conn-id] and
// tr[data-worker-id], and td[data-field] for each column.
import {
  ApiError, listConnections, listWorkers, removeConnection, startConnection, stopConnection,
} from './api.js';
import { h, icon, loadingState, messageState, setBusy } from './dom.js';
import { connectionForm } from './fleet-form.js';
import {
  formatAgo, formatCount, formatRate, formatSpan, formatWallTime, leaseState, RateTracker,
  ServerClock,
} from './fleet-format.js';
import { Poller } from './poller.js';

const POLL_EVERY_MS = 1000;
// Without a fresh answer for this long, the page says its data is stale.
const STALE_AFTER_MS = 4000;
// Countdowns and the freshness line are redrawn this often between answers.
const TICK_MS = 250;

const STATE_NAMES = { STARTED: 'Started', STOPPED: 'Stopped' };
// A streaming connection without a message for this long is shown as quiet
// (a worker's --stall-after, by default).
const QUIET_AFTER_MS = 60000;

function td(field, label, ...children) {
  return h('td', { 'data-field': field, 'data-label': label }, ...children);
}

// Sets `element`'s text only when it changed, so that a screen reader or a
// selection is not disturbed by every poll.
function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

function setTitle(element, title) {
  if (title) element.title = title;
  else element.removeAttribute('title');
}

class FleetPage {
  constructor(main, user, goToSignIn) {
    this.main = main;
    this.admin = user.admin;
    this.goToSignIn = goToSignIn;
    this.clock = new ServerClock();
    this.rates = new RateTracker();
    this.rows = new Map(); // connection id -> row
    this.workerRows = new Map(); // worker id -> row
    this.connections = null; // the last answer's list, null before the first
    this.workers = null;
    this.lastAnswerAt = null; // performance.now() of the last complete answer
    this.lastAnswerTime = ''; // the server's time then, as local time of day
    this.lastError = null;
    this.stopped = false;
    this.poller = new Poller({
      everyMs: POLL_EVERY_MS, tickMs: TICK_MS,
      turn: (sentAt) => this.poll(sentAt), tick: () => this.tick(),
    });
  }

  start() {
    this.build();
    this.poller.start();
  }

  stop() {
    this.stopped = true;
    this.poller.stop();
  }

  // ---- polling ----

  async poll(sentAt) {
    try {
      const [connections, workers] = await Promise.all([listConnections(), listWorkers()]);
      if (this.stopped) return;
      this.clock.sync(connections.now_ms, sentAt, performance.now());
      this.lastAnswerAt = performance.now();
      this.lastAnswerTime = new Date(connections.now_ms).toLocaleTimeString();
      this.lastError = null;
      this.showConnections(connections.connections);
      this.showWorkers(workers.workers);
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ApiError && error.status === 401) {
        this.stop();
        this.goToSignIn();
        return;
      }
      this.lastError = error;
      if (!(error instanceof ApiError)) console.error(error);
    }
    this.tick();
  }

  // Redraws what changes with time alone: countdowns and the freshness line.
  tick() {
    this.showFreshness();
    if (!this.clock.known) return;
    const nowMs = this.clock.now();
    for (const row of this.rows.values()) this.showLease(row, nowMs);
    for (const row of this.workerRows.values()) this.showWorkerTimes(row, nowMs);
  }

  // ---- the page's frame ----

  build() {
    this.freshness = h('p', { class: 'freshness', id: 'fleet-freshness' });
    this.staleAlert = h('div', {
      class: 'alert stale-alert', id: 'fleet-stale', role: 'alert', hidden: true,
    });
    this.actionAlert = h('div', {
      class: 'alert', role: 'alert', id: 'fleet-action-error', hidden: true,
    });
    this.buildTables();

    let addButton = null;
    if (this.admin) {
      this.form = connectionForm({
        onAdded: (connection) => this.added(connection),
        onCancel: () => this.toggleForm(false),
      });
      this.form.element.hidden = true;
      addButton = h('button', {
        type: 'button', class: 'button button-primary', id: 'add-connection-toggle',
        'aria-expanded': 'false', 'aria-controls': 'add-connection',
        on: { click: () => this.toggleForm(this.form.element.hidden) },
      }, 'Add connection');
      this.addButton = addButton;
    }

    this.main.replaceChildren(
      h('div', { class: 'page-head page-head-row' },
        h('div', { class: 'page-title' },
          h('h1', { text: 'Fleet' }),
          h('p', {
            class: 'lead',
            text: 'Each upstream connection is owned by one worker at a time. A worker that ' +
              'stops renewing its session loses its connections to the others, which resume ' +
              'after the last checkpointed sequence number.',
          })),
        this.freshness),
      this.staleAlert,
      h('section', { class: 'fleet-section', 'aria-labelledby': 'connections-title' },
        h('div', { class: 'section-head' },
          h('h2', { id: 'connections-title', tabindex: '-1' }, 'Connections', this.connCount),
          addButton),
        this.form ? this.form.element : null,
        this.actionAlert,
        this.connArea),
      h('section', { class: 'fleet-section', 'aria-labelledby': 'workers-title' },
        h('div', { class: 'section-head' },
          h('h2', { id: 'workers-title' }, 'Workers', this.workerCount)),
        this.workerArea),
    );
    this.showFreshness();
  }

  // The two tables, shown once the first answer comes, and their counts.
  buildTables() {
    this.connBody = h('tbody');
    this.connTable = h('table', { class: 'data-table conn-table', id: 'connections' },
      h('caption', { class: 'visually-hidden', text: 'Connections' }),
      h('thead', {}, h('tr', {},
        ['ID', 'State', 'Owner', 'Lease expires', 'Last seq', 'Rate', 'Last message',
          'Last error']
          .map((label) => h('th', { scope: 'col', text: label })),
        this.admin
          ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Actions' }))
          : null)),
      this.connBody);
    this.connArea = h('div', { class: 'table-area' }, loadingState('Loading connections…'));
    this.connCount = h('span', { class: 'count', id: 'connections-count' });

    this.workerBody = h('tbody');
    this.workerTable = h('table', { class: 'data-table worker-table', id: 'workers' },
      h('caption', { class: 'visually-hidden', text: 'Workers' }),
      h('thead', {}, h('tr', {},
        ['Worker', 'Status', 'Connections', 'Messages/s', 'Messages', 'Session',
          'Last report'].map((label) => h('th', { scope: 'col', text: label })))),
      this.workerBody);
    this.workerArea = h('div', { class: 'table-area' }, loadingState('Loading workers…'));
    this.workerCount = h('span', { class: 'count', id: 'workers-count' });
  }

  // The pill beside the title says how fresh the data is; the alert under
  // it, whose text changes only when the reason does (it is announced),
  // says why it is not.
  showFreshness() {
    const ageMs = this.lastAnswerAt === null ? null : performance.now() - this.lastAnswerAt;
    const stale = this.lastError !== null || (ageMs !== null && ageMs >= STALE_AFTER_MS);
    let kind = 'live';
    let text = 'Live';
    if (ageMs === null) {
      kind = this.lastError ? 'stale' : 'waiting';
      text = this.lastError ? 'Not connected' : 'Connecting…';
    } else if (stale) {
      kind = 'stale';
      text = `Updated ${formatAgo(ageMs)}`;
    }
    setText(this.freshness, text);
    this.freshness.dataset.state = kind;
    this.main.classList.toggle('is-stale', stale && ageMs !== null);
    this.staleAlert.hidden = !stale;
    if (!stale) return;
    let why = 'The server is slow to answer.';
    if (this.lastError) {
      why = this.lastError.status === 0 ? 'Could not reach the server.' : this.lastError.message;
    }
    const since = ageMs === null
      ? 'There is nothing to show yet'
      : `What you see is as it was at ${this.lastAnswerTime}`;
    const message = `${why} ${since}; trying again every second.`;
    if (this.staleAlert.dataset.message !== message) {
      this.staleAlert.dataset.message = message;
      this.staleAlert.replaceChildren(icon('alert', 18), h('span', { text: message }));
    }
  }

  // ---- connections ----

  showConnections(connections) {
    this.connections = connections;
    const nowMs = this.clock.now();
    const ids = new Set(connections.map((c) => c.id));
    for (const c of connections) this.rates.add(c.id, nowMs, c.last_seq);
    this.rates.keepOnly(ids);
    for (const [id, row] of this.rows) {
      if (!ids.has(id)) {
        row.element.remove();
        this.rows.delete(id);
      }
    }
    connections.forEach((c, index) => {
      let row = this.rows.get(c.id);
      if (!row) {
        row = this.connectionRow(c.id);
        this.rows.set(c.id, row);
      }
      if (this.connBody.children[index] !== row.element) {
        this.connBody.insertBefore(row.element, this.connBody.children[index] || null);
      }
      this.fillConnection(row, c, nowMs);
    });
    setText(this.connCount, String(connections.length));
    this.showConnectionArea();
  }

  showConnectionArea() {
    let content = this.connTable;
    if (this.connections.length === 0) {
      if (!this.noConnections) this.noConnections = this.emptyConnections();
      content = this.noConnections;
    }
    if (this.connArea.firstChild !== content || this.connArea.childNodes.length !== 1) {
      this.connArea.replaceChildren(content);
    }
  }

  emptyConnections() {
    const state = messageState({
      iconName: 'fleet',
      boxed: true,
      title: 'No connections yet',
      body: this.admin ? '' : 'An administrator adds them. Once there are some, this page ' +
        'shows which worker owns each.',
    });
    if (this.admin) {
      state.querySelector('p').replaceChildren('Add one with “Add connection”, or with ',
        h('code', { text: 'leasehold conn add' }), ' on the command line. A worker with room ' +
        'takes a started connection within seconds.');
    }
    return state;
  }

  connectionRow(id) {
    const cells = {
      id: td('id', 'ID', h('code', { text: id })),
      state: td('state', 'State'),
      owner: td('owner', 'Owner'),
      lease: td('lease', 'Lease expires'),
      lastSeq: td('last_seq', 'Last seq'),
      rate: td('rate', 'Rate'),
      lastMessage: td('last_message', 'Last message'),
      lastError: td('last_error', 'Last error'),
    };
    const row = { id, cells, confirming: false, busy: false, connection: null };
    row.stateTag = h('span', { class: 'tag' });
    row.messageAge = h('span', { class: 'age' });
    row.reconnects = h('span', { class: 'muted when', 'data-field': 'reconnects' });
    cells.lastMessage.append(row.messageAge, row.reconnects);
    cells.state.append(row.stateTag);
    row.element = h('tr', { 'data-conn-id': id }, Object.values(cells));
    if (this.admin) {
      cells.actions = h('td', { 'data-field': 'actions', class: 'actions' });
      row.element.append(cells.actions);
    }
    return row;
  }

  fillConnection(row, c, nowMs) {
    const previous = row.connection;
    row.connection = c;
    const { cells } = row;
    setText(row.stateTag, STATE_NAMES[c.desired_state] || c.desired_state);
    row.stateTag.className = `tag state-${c.desired_state.toLowerCase()}`;
    row.element.dataset.state = c.desired_state;
    setText(cells.owner, c.owner || '—');
    setTitle(cells.owner, c.epoch ? `Epoch ${c.epoch}` : '');
    setText(cells.lastSeq, formatCount(c.last_seq));
    setText(cells.rate, formatRate(this.rates.rate(c.id)));
    // Reconnects since the owner took it: said only when there were some.
    const reconnects = c.owner ? c.reconnects || 0 : 0;
    setText(row.reconnects,
      reconnects === 0 ? '' : `${formatCount(reconnects)} reconnect${reconnects === 1 ? '' : 's'}`);
    row.reconnects.hidden = reconnects === 0;
    this.fillError(row, c, nowMs);
    this.showLease(row, nowMs);
    const changed = !previous || previous.desired_state !== c.desired_state;
    if (this.admin && !row.busy && (changed || !row.drawn)) {
      this.drawActions(row);
    }
  }

  fillError(row, c, nowMs) {
    const cell = row.cells.lastError;
    const key = `${c.last_error}\u0000${c.last_error_at_ms}`;
    if (!c.last_error) {
      if (cell.dataset.key !== '') {
        cell.dataset.key = '';
        cell.replaceChildren(h('span', { class: 'muted', text: '—' }));
        setTitle(cell, '');
      }
      return;
    }
    if (cell.dataset.key === key) {
      if (row.errorAgo) setText(row.errorAgo, formatAgo(nowMs - c.last_error_at_ms));
      return;
    }
    cell.dataset.key = key;
    row.errorAgo = c.last_error_at_ms ? h('span', { class: 'muted when' }) : null;
    cell.replaceChildren(h('span', { class: 'error-text', text: c.last_error }), row.errorAgo);
    if (row.errorAgo) setText(row.errorAgo, formatAgo(nowMs - c.last_error_at_ms));
    setTitle(cell, c.last_error_at_ms
      ? `${c.last_error} (${formatWallTime(c.last_error_at_ms)})` : c.last_error);
  }

  // The last message's age, counted on the server's clock.
  showLastMessage(row, nowMs) {
    const c = row.connection;
    const cell = row.cells.lastMessage;
    if (!c.last_message_at_ms) {
      setText(row.messageAge, '—');
      cell.dataset.quiet = 'false';
      setTitle(cell, c.owner ? `No message since ${c.owner} took it` : '');
      return;
    }
    const ageMs = Math.max(0, nowMs - c.last_message_at_ms);
    setText(row.messageAge, formatAgo(ageMs));
    cell.dataset.quiet = String(c.desired_state === 'STARTED' && ageMs >= QUIET_AFTER_MS);
    setTitle(cell, `${formatWallTime(c.last_message_at_ms)}; ${formatCount(c.messages || 0)} ` +
      `messages since ${c.owner} took it`);
  }

  showLease(row, nowMs) {
    const c = row.connection;
    if (!c) return;
    this.showLastMessage(row, nowMs);
    const lease = leaseState(c, nowMs);
    setText(row.cells.lease, lease.text);
    row.cells.lease.dataset.lease = lease.kind;
    row.cells.owner.dataset.lease = lease.kind;
    // A lapsed lease is a takeover due only if the connection should stream.
    row.cells.lease.dataset.stopped = String(c.desired_state === 'STOPPED');
    setTitle(row.cells.lease, c.expires_at_ms ? formatWallTime(c.expires_at_ms) : '');
  }

  // ---- admin actions ----

  drawActions(row) {
    row.drawn = true;
    const cell = row.cells.actions;
    const c = row.connection;
    if (row.confirming) {
      cell.replaceChildren(
        h('span', { class: 'confirm-text', text: `Remove ${c.id}?` }),
        this.actionButton(row, 'Remove', 'button button-danger confirm-remove',
          () => this.act(row, 'remove')),
        this.actionButton(row, 'Cancel', 'button', () => {
          row.confirming = false;
          this.drawActions(row);
          row.cells.actions.querySelector('.remove')?.focus();
        }));
      cell.querySelector('.confirm-remove').focus();
      return;
    }
    const started = c.desired_state === 'STARTED';
    cell.replaceChildren(
      this.actionButton(row, started ? 'Stop' : 'Start', 'button',
        () => this.act(row, started ? 'stop' : 'start')),
      this.actionButton(row, 'Remove', 'button button-quiet remove', () => {
        row.confirming = true;
        this.drawActions(row);
      }));
  }

  actionButton(row, label, classes, onClick) {
    return h('button', {
      type: 'button', class: `${classes} button-small`, 'aria-label': `${label} ${row.id}`,
      on: { click: onClick },
    }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), label);
  }

  async act(row, action) {
    if (row.busy) return;
    row.busy = true;
    const button = row.cells.actions.querySelector(
      action === 'remove' ? '.confirm-remove' : 'button');
    for (const b of row.cells.actions.querySelectorAll('button')) b.disabled = true;
    setBusy(button, true);
    this.actionAlert.hidden = true;
    try {
      if (action === 'remove') {
        await removeConnection(row.id);
        row.element.remove();
        this.rows.delete(row.id);
        this.connections = this.connections.filter((c) => c.id !== row.id);
        setText(this.connCount, String(this.connections.length));
        this.showConnectionArea();
        // The row and its buttons are gone: focus goes to the section's heading.
        document.getElementById('connections-title').focus();
      } else {
        const call = action === 'start' ? startConnection : stopConnection;
        const connection = await call(row.id);
        row.confirming = false;
        this.replaceConnection(connection);
        this.fillConnection(row, connection, this.clock.now());
        this.drawActions(row);
        row.cells.actions.querySelector('button').focus();
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      const verb = { start: 'start', stop: 'stop', remove: 'remove' }[action];
      this.actionAlert.replaceChildren(icon('alert', 18),
        h('span', { text: `Could not ${verb} ${row.id}: ${error.message}` }));
      this.actionAlert.hidden = false;
      row.confirming = false;
      if (row.element.isConnected) this.drawActions(row);
    } finally {
      row.busy = false;
    }
  }

  replaceConnection(connection) {
    this.connections = this.connections.map((c) => (c.id === connection.id ? connection : c));
  }

  toggleForm(open) {
    this.form.element.hidden = !open;
    this.addButton.setAttribute('aria-expanded', String(open));
    this.addButton.hidden = open;
    if (open) this.form.focus();
    else this.addButton.focus();
  }

  added(connection) {
    this.toggleForm(false);
    if (!this.connections) return;
    if (!this.connections.some((c) => c.id === connection.id)) {
      const list = [...this.connections, connection].sort((a, b) => (a.id < b.id ? -1 : 1));
      this.showConnections(list);
    }
    const row = this.rows.get(connection.id);
    row?.element.classList.add('just-added');
  }

  // ---- workers ----

  showWorkers(workers) {
    this.workers = workers;
    const nowMs = this.clock.now();
    const ids = new Set(workers.map((w) => w.id));
    for (const [id, row] of this.workerRows) {
      if (!ids.has(id)) {
        row.element.remove();
        this.workerRows.delete(id);
      }
    }
    workers.forEach((w, index) => {
      let row = this.workerRows.get(w.id);
      if (!row) {
        row = this.workerRow(w.id);
        this.workerRows.set(w.id, row);
      }
      if (this.workerBody.children[index] !== row.element) {
        this.workerBody.insertBefore(row.element, this.workerBody.children[index] || null);
      }
      this.fillWorker(row, w, nowMs);
    });
    const alive = workers.filter((w) => w.alive).length;
    setText(this.workerCount,
      workers.length === alive ? String(alive) : `${alive} of ${workers.length} alive`);
    let content = this.workerTable;
    if (workers.length === 0) {
      content = this.noWorkers || (this.noWorkers = messageState({
        iconName: 'fleet',
        boxed: true,
        title: 'No workers have joined',
        body: 'Workers join by writing their membership to the store when they start. ' +
          'Until one does, no connection is streamed.',
      }));
    }
    if (this.workerArea.firstChild !== content) this.workerArea.replaceChildren(content);
  }

  workerRow(id) {
    const cells = {
      id: td('id', 'Worker', h('code', { text: id })),
      alive: td('alive', 'Status'),
      owned: td('owned', 'Connections'),
      rate: td('messages_per_s', 'Messages/s'),
      messages: td('messages', 'Messages'),
      lease: td('lease', 'Session'),
      updated: td('updated', 'Last report'),
    };
    const row = { id, cells, worker: null };
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
    setText(row.cells.rate, formatRate(w.messages_per_s));
    setText(row.cells.messages, formatCount(w.messages));
    this.showWorkerTimes(row, nowMs);
  }

  showWorkerTimes(row, nowMs) {
    const w = row.worker;
    if (!w) return;
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

export function fleetView(main, { user, goToSignIn }) {
  const page = new FleetPage(main, user, goToSignIn);
  page.start();
  return () => page.stop();
}
