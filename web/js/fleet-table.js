// The Fleet page's table of connections: one page of 100 at a time from
// GET /api/fleet/connections?limit=&after=&state=&prefix=&owner=, whatever
// the size of the fleet, with filters (desired state, owning worker, ID
// prefix), next and previous pages, and for admins the actions on each
// connection (start, stop, remove after a confirmation). The page polls;
// this module says what to ask for (query()) and shows the answers.
//
// The filters are kept in the page's URL (?state=started&owner=w1&prefix=feed),
// so that a filtered view can be shared or reloaded.
//
// Hooks for tests and scripts: tr[data-conn-id] with td[data-field] for each
// column, #conn-search, #conn-state, #conn-owner, and the pager's #conn-prev,
// #conn-next and #conn-range (pager.js).
import {
  ApiError, removeConnection, startConnection, stopConnection,
} from './api.js';
import {
  h, icon, loadingState, messageState, setBusy, setLoading, setText, syncRows,
} from './dom.js';
import { countOf, formatRate, RateTracker } from './fleet-format.js';
import { connectionRow, fillConnectionRow, showLease, STATE_NAMES } from './fleet-row.js';
import { Pager } from './pager.js';

export const PAGE_SIZE = 100;
// The search asks once typing pauses for this long.
const SEARCH_DEBOUNCE_MS = 100;
const ID_CHARS = /^[A-Za-z0-9._~-]*$/;

// The filters a URL's query names; anything it does not know is left out.
function filtersFrom(search) {
  const params = new URLSearchParams(search);
  const state = (params.get('state') || '').toUpperCase();
  return {
    state: STATE_NAMES[state] ? state : '',
    prefix: params.get('prefix') || '',
    owner: params.get('owner') || '',
  };
}

export class ConnectionTable {
  // admin: whether to draw the actions. now(): the server's time, or null
  // before it is known. onQuery(): the filters or the page changed (the
  // page asks at once). onChanged(): an action changed the fleet.
  // onSignedOut(): an action was refused with 401.
  constructor({ admin, now, onQuery, onChanged, onSignedOut }) {
    this.admin = admin;
    this.now = now;
    this.onQuery = onQuery;
    this.onChanged = onChanged;
    this.onSignedOut = onSignedOut;
    this.filters = filtersFrom(window.location.search);
    this.pager = new Pager({
      id: 'conn', pageSize: PAGE_SIZE, onPage: (fromBottom) => this.queryChanged(fromBottom),
    });
    this.rows = new Map(); // id -> row
    this.rates = new RateTracker();
    this.page = null; // the last answer for the shown query, null until it comes
    this.pageKey = null; // its query's key
    this.queryError = null;
    this.counts = null; // the summary's connections counts
    this.workerIds = '';
    this.justAdded = null; // {id, at}: added with the form at performance.now() `at`
    this.build();
  }

  // ---- what to ask ----

  // {key, params}: the page to ask for now, and a key that changes with it;
  // params is null when the filters cannot match any ID (nothing to ask).
  query() {
    const { state, prefix, owner } = this.filters;
    const { after } = this.pager;
    const key = JSON.stringify([state, prefix, owner, after]);
    if (!ID_CHARS.test(prefix) || !ID_CHARS.test(owner)) return { key, params: null };
    return { key, params: { limit: PAGE_SIZE, after, state, prefix, owner } };
  }

  filtered() {
    return Boolean(this.filters.state || this.filters.prefix || this.filters.owner);
  }

  // ---- the frame ----

  build() {
    this.buildToolbar();
    this.body = h('tbody');
    this.table = h('table', { class: 'data-table conn-table', id: 'connections' },
      h('caption', { class: 'visually-hidden', text: 'Connections' }),
      h('thead', {}, h('tr', {},
        ['ID', 'State', 'Owner', 'Lease expires', 'Last seq', 'Rate', 'Last message',
          'Last error']
          .map((label) => h('th', { scope: 'col', text: label })),
        this.admin
          ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Actions' }))
          : null)),
      this.body);
    this.area = h('div', { class: 'table-area' }, loadingState('Loading connections…'));
    this.bottomPager = this.pager.bottom;
    this.actionAlert = h('div', {
      class: 'alert', role: 'alert', id: 'fleet-action-error', hidden: true,
    });
    this.note = h('div', { class: 'note', role: 'status', id: 'conn-note', hidden: true });
  }

  // The filters, the range shown and the page buttons, above the table.
  buildToolbar() {
    this.search = h('input', {
      class: 'input', id: 'conn-search', type: 'search', placeholder: 'Any ID',
      autocomplete: 'off', autocapitalize: 'none', autocorrect: 'off', spellcheck: 'false',
      value: this.filters.prefix,
      on: { input: () => this.searchTyped() },
    });
    this.stateSelect = h('select', {
      class: 'input', id: 'conn-state',
      on: { change: () => this.setFilters({ state: this.stateSelect.value }) },
    }, h('option', { value: '', text: 'All' }), h('option', { value: 'STARTED', text: 'Started' }),
    h('option', { value: 'STOPPED', text: 'Stopped' }));
    this.stateSelect.value = this.filters.state;
    this.ownerSelect = h('select', {
      class: 'input', id: 'conn-owner',
      on: { change: () => this.setFilters({ owner: this.ownerSelect.value }) },
    });
    this.fillOwners([]);
    this.toolbar = h('div', { class: 'conn-toolbar' },
      h('div', { class: 'field field-search' },
        h('label', { for: 'conn-search', text: 'ID starts with' }), this.search),
      h('div', { class: 'field' }, h('label', { for: 'conn-state', text: 'State' }),
        this.stateSelect),
      h('div', { class: 'field' }, h('label', { for: 'conn-owner', text: 'Owner' }),
        this.ownerSelect),
      this.pager.element);
  }

  // ---- filters and pages ----

  searchTyped() {
    window.clearTimeout(this.searchTimer);
    this.searchTimer = window.setTimeout(
      () => this.setFilters({ prefix: this.search.value.trim() }), SEARCH_DEBOUNCE_MS);
  }

  // Changes some filters and goes back to the first page.
  setFilters(changes) {
    const next = { ...this.filters, ...changes };
    if (JSON.stringify(next) === JSON.stringify(this.filters)) return;
    this.filters = next;
    if (this.search.value.trim() !== next.prefix) this.search.value = next.prefix;
    this.stateSelect.value = next.state;
    if (this.ownerSelect.value !== next.owner) this.fillOwners(this.workers || []);
    this.pager.reset();
    this.keepInUrl();
    this.queryChanged();
  }

  // Shows connection `id`: its ID as the search, no other filter.
  find(id) {
    window.clearTimeout(this.searchTimer);
    this.setFilters({ prefix: id, state: '', owner: '' });
    this.toolbar.scrollIntoView({ block: 'start' });
    this.search.focus({ preventScroll: true });
  }

  // Shows what worker `id` holds, and nothing else.
  findOwner(id) {
    window.clearTimeout(this.searchTimer);
    this.setFilters({ prefix: '', state: '', owner: id });
    this.toolbar.scrollIntoView({ block: 'start' });
    this.ownerSelect.focus({ preventScroll: true });
  }

  keepInUrl() {
    const params = new URLSearchParams();
    if (this.filters.state) params.set('state', this.filters.state.toLowerCase());
    if (this.filters.owner) params.set('owner', this.filters.owner);
    if (this.filters.prefix) params.set('prefix', this.filters.prefix);
    const search = params.toString();
    const url = `${window.location.pathname}${search ? `?${search}` : ''}`;
    if (url !== window.location.pathname + window.location.search) {
      window.history.replaceState(window.history.state, '', url);
    }
  }

  // The shown rows are of the last query until the new page comes: they
  // are marked as such, and the buttons wait.
  queryChanged(scroll = false) {
    this.note.hidden = true;
    setLoading(this.area, true);
    this.showPager();
    if (scroll) this.toolbar.scrollIntoView({ block: 'start' });
    this.onQuery();
  }

  // The owners to filter by: every worker the fleet knows, and the one
  // asked for even if it is gone.
  setWorkers(workers) {
    this.workers = workers;
    const ids = workers.map((w) => `${w.id}:${w.alive}`).join(' ');
    if (ids === this.workerIds) return;
    this.workerIds = ids;
    this.fillOwners(workers);
  }

  fillOwners(workers) {
    const options = [h('option', { value: '', text: 'Any worker' })];
    const known = new Set();
    for (const w of workers) {
      known.add(w.id);
      options.push(h('option', { value: w.id, text: w.alive ? w.id : `${w.id} (gone)` }));
    }
    const { owner } = this.filters;
    if (owner && !known.has(owner)) options.push(h('option', { value: owner, text: owner }));
    this.ownerSelect.replaceChildren(...options);
    this.ownerSelect.value = owner;
  }

  // The summary's counts, for "1–100 of 10,001" where the filters allow.
  setCounts(counts) {
    this.counts = counts;
    this.showPager();
  }

  // The number of connections the filters match, if known without reading them.
  matching() {
    const { state, prefix, owner } = this.filters;
    if (!this.counts || prefix || owner) return null;
    if (state === 'STARTED') return this.counts.started;
    if (state === 'STOPPED') return this.counts.stopped;
    return this.counts.total;
  }

  // The pager, for the page on screen: the summary's counts say how many
  // there are in all when the filters allow.
  showPager() {
    if (this.page === null || this.pageKey !== this.query().key) {
      this.pager.show({ waiting: true });
      return;
    }
    const shown = this.page.connections.length;
    this.pager.show({
      waiting: false,
      nextAfter: this.page.next_after,
      shown,
      total: this.matching(),
      single: countOf(shown, this.filtered() ? 'matching connection' : 'connection'),
    });
  }

  // ---- answers ----

  // A new page for the query whose key is `key`, read by the server at
  // `readAtMs` (its rates count from then), shown at `nowMs` (null before
  // the server's clock is known).
  showPage(key, page, nowMs, readAtMs) {
    this.page = page;
    this.pageKey = key;
    this.queryError = null;
    const ids = new Set(page.connections.map((c) => c.id));
    this.rates.keepOnly(ids);
    if (readAtMs != null) {
      for (const c of page.connections) this.rates.add(c.id, readAtMs, c.last_seq);
    }
    syncRows(this.rows, this.body, page.connections, (c) => c.id,
      (c) => this.connectionRow(c.id), (row, c) => this.fillConnection(row, c, nowMs));
    this.showArea();
    this.showPager();
  }

  // The page asked is as it was when the server read it at `readAtMs`: its
  // counters did not move until then.
  unchanged(readAtMs) {
    if (!this.page || readAtMs == null) return;
    for (const c of this.page.connections) this.rates.add(c.id, readAtMs, c.last_seq);
    for (const row of this.rows.values()) {
      setText(row.cells.rate, formatRate(this.rates.rate(row.id)));
    }
  }

  // The filters name something no ID holds, or the server refused them.
  showQueryError(key, message) {
    this.page = { connections: [], next_after: '' };
    this.pageKey = key;
    this.queryError = message;
    for (const row of this.rows.values()) row.element.remove();
    this.rows.clear();
    this.showArea();
    this.showPager();
  }

  showArea() {
    setLoading(this.area, false);
    let content = this.table;
    if (this.page.connections.length === 0) content = this.emptyState();
    if (this.area.firstChild !== content || this.area.childNodes.length !== 1) {
      this.area.replaceChildren(content);
    }
  }

  // The empty table says why it is empty: a filter, a page emptied since,
  // or a fleet without connections. One element per reason, kept.
  emptyState() {
    this.empties = this.empties || {};
    let reason = 'none';
    if (this.queryError) reason = `error:${this.queryError}`;
    else if (this.filtered()) reason = 'filtered';
    else if (!this.pager.onFirstPage()) reason = 'past';
    if (!this.empties[reason]) this.empties[reason] = this.makeEmptyState(reason);
    return this.empties[reason];
  }

  makeEmptyState(reason) {
    const clear = h('button', {
      type: 'button', class: 'button', text: 'Clear the filters',
      on: { click: () => this.clearFilters() },
    });
    if (reason.startsWith('error:') || reason === 'filtered') {
      return messageState({
        iconName: 'compass', boxed: true, title: 'No connection matches',
        body: reason === 'filtered'
          ? 'No connection has this state, owner and ID prefix together.'
          : reason.slice('error:'.length),
        actions: [clear],
      });
    }
    if (reason === 'past') {
      return messageState({
        iconName: 'compass', boxed: true, title: 'This page is empty now',
        body: 'The connections it held were removed since.',
        actions: [h('button', {
          type: 'button', class: 'button', text: 'Go to the first page',
          on: { click: () => this.firstPage() },
        })],
      });
    }
    const state = messageState({
      iconName: 'fleet', boxed: true, title: 'No connections yet',
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

  clearFilters() {
    window.clearTimeout(this.searchTimer);
    this.setFilters({ state: '', prefix: '', owner: '' });
    this.search.focus();
  }

  firstPage() {
    this.pager.reset();
    this.queryChanged(true);
  }

  // ---- rows ----

  connectionRow(id) {
    const row = connectionRow(id);
    if (this.admin) {
      row.cells.actions = h('td', { 'data-field': 'actions', class: 'actions' });
      row.element.append(row.cells.actions);
    }
    return row;
  }

  fillConnection(row, c, nowMs) {
    const previous = row.connection;
    fillConnectionRow(row, c, nowMs, this.rates.rate(c.id));
    const changed = !previous || previous.desired_state !== c.desired_state;
    if (this.admin && !row.busy && (changed || !row.drawn)) this.drawActions(row);
  }

  // Redraws what changes with time alone, at the server's time `nowMs`.
  tick(nowMs) {
    for (const row of this.rows.values()) showLease(row, nowMs);
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
        this.dropRow(row);
      } else {
        const call = action === 'start' ? startConnection : stopConnection;
        const connection = await call(row.id);
        row.confirming = false;
        this.page.connections = this.page.connections.map(
          (c) => (c.id === connection.id ? connection : c));
        this.fillConnection(row, connection, this.now());
        this.drawActions(row);
        row.cells.actions.querySelector('button').focus();
      }
      this.onChanged();
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.onSignedOut();
      this.actionAlert.replaceChildren(icon('alert', 18),
        h('span', { text: `Could not ${action} ${row.id}: ${error.message}` }));
      this.actionAlert.hidden = false;
      row.confirming = false;
      if (row.element.isConnected) this.drawActions(row);
    } finally {
      row.busy = false;
    }
  }

  // A removed connection leaves the page at once; the next answer fills
  // its place from the page after.
  dropRow(row) {
    row.element.remove();
    this.rows.delete(row.id);
    this.page.connections = this.page.connections.filter((c) => c.id !== row.id);
    this.showArea();
    this.showPager();
    // The row and its buttons are gone: focus goes to the section's heading.
    document.getElementById('connections-title').focus();
  }

  // ---- a connection added with the form ----

  added(connection) {
    this.justAdded = { id: connection.id, at: performance.now() };
    this.showNote(`Added ${connection.id}.`);
  }

  // Once a page asked after an addition comes (`sentAt`, performance.now()
  // when it was asked), changed or not: the new row flashes if it is on
  // this page, else the note offers to show it.
  showAdded(sentAt) {
    if (!this.justAdded || sentAt < this.justAdded.at) return;
    const { id } = this.justAdded;
    this.justAdded = null;
    const row = this.rows.get(id);
    if (row) {
      row.element.classList.add('just-added');
      return;
    }
    this.showNote(`Added ${id}. It is not on this page.`, h('button', {
      type: 'button', class: 'button button-small', text: `Show ${id}`,
      on: { click: () => this.find(id) },
    }));
  }

  showNote(text, action = null) {
    this.note.replaceChildren(...[h('span', { text }), action].filter(Boolean));
    this.note.hidden = false;
  }
}
