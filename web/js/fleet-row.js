// One row of the Fleet page's table of connections (fleet-table.js): its
// cells, filled from a connection as the API gives it, and what changes
// with time alone (the lease's countdown, the last message's age), counted
// on the server's clock. Cells change only when their text does, so that
// a screen reader or a selection is not disturbed by every poll.
//
// A row is {id, cells, element, connection, ...}: tr[data-conn-id] with a
// td[data-field] per column; the table adds the actions' cell.
import { h, setText, setTitle } from './dom.js';
import {
  formatAgo, formatCount, formatRate, formatWallTime, leaseState,
} from './fleet-format.js';

export const STATE_NAMES = { STARTED: 'Started', STOPPED: 'Stopped' };
// A streaming connection without a message for this long is shown as quiet
// (a worker's --stall-after, by default).
const QUIET_AFTER_MS = 60000;

function td(field, label, ...children) {
  return h('td', { 'data-field': field, 'data-label': label }, ...children);
}

export function connectionRow(id) {
  const cells = {
    id: td('id', 'ID', h('code', { text: id, title: id })),
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
  return row;
}

// Fills `row` from connection `c` at the server's time `nowMs` (null before
// it is known); `rate` is its last_seq's rate per second, or null.
export function fillConnectionRow(row, c, nowMs, rate) {
  row.connection = c;
  const { cells } = row;
  setText(row.stateTag, STATE_NAMES[c.desired_state] || c.desired_state);
  row.stateTag.className = `tag state-${c.desired_state.toLowerCase()}`;
  row.element.dataset.state = c.desired_state;
  setText(cells.owner, c.owner || '—');
  setTitle(cells.owner, c.epoch ? `Epoch ${c.epoch}` : '');
  setText(cells.lastSeq, formatCount(c.last_seq));
  setText(cells.rate, formatRate(rate));
  // Reconnects since the owner took it: said only when there were some.
  const reconnects = c.owner ? c.reconnects || 0 : 0;
  setText(row.reconnects,
    reconnects === 0 ? '' : `${formatCount(reconnects)} reconnect${reconnects === 1 ? '' : 's'}`);
  row.reconnects.hidden = reconnects === 0;
  fillError(row, c, nowMs);
  showLease(row, nowMs);
}

function fillError(row, c, nowMs) {
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
  if (cell.dataset.key !== key) {
    cell.dataset.key = key;
    row.errorAgo = c.last_error_at_ms ? h('span', { class: 'muted when' }) : null;
    cell.replaceChildren(h('span', { class: 'error-text', text: c.last_error }), row.errorAgo);
    setTitle(cell, c.last_error_at_ms
      ? `${c.last_error} (${formatWallTime(c.last_error_at_ms)})` : c.last_error);
  }
  if (row.errorAgo && nowMs != null) setText(row.errorAgo, formatAgo(nowMs - c.last_error_at_ms));
}

// Redraws what changes with time alone, at the server's time `nowMs`.
export function showLease(row, nowMs) {
  const c = row.connection;
  if (!c || nowMs == null) return;
  showLastMessage(row, nowMs);
  const lease = leaseState(c, nowMs);
  setText(row.cells.lease, lease.text);
  row.cells.lease.dataset.lease = lease.kind;
  row.cells.owner.dataset.lease = lease.kind;
  // A lapsed lease is a takeover due only if the connection should stream.
  row.cells.lease.dataset.stopped = String(c.desired_state === 'STOPPED');
  setTitle(row.cells.lease, c.expires_at_ms ? formatWallTime(c.expires_at_ms) : '');
  if (row.errorAgo && c.last_error_at_ms) {
    setText(row.errorAgo, formatAgo(nowMs - c.last_error_at_ms));
  }
}

// The last message's age, counted on the server's clock.
function showLastMessage(row, nowMs) {
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
