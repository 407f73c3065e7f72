// The Fleet page (/fleet): how the stream fleet is doing, at a cost that
// does not grow with it. From the top: the fleet's health and figures (the
// fleet summary), the connections that need attention (the started ones no
// live worker holds, then those live workers hold that are not streaming or
// stalled), the workers with their load, and one page of 100 connections at
// a time, with filters (fleet-summary.js, fleet-workers.js, fleet-table.js).
//
// It asks for what it shows only: the summary, the page of connections on
// screen (both with If-None-Match: a 304 keeps what is shown) and the
// workers, whose answer carries the server's clock. It asks every second
// after a change, and backs off while nothing changes (2 s, 4 s, up to
// 8 s); a user's action or the page showing again brings it back to a
// second, and it never asks while the page is hidden. Between answers it
// counts leases down against the server's clock, and it says when what it
// shows is stale. Admins also add connections, start, stop and remove them;
// other users see no controls for that (and the server would refuse them).
import {
  ApiError, listWorkers, pollConnectionPage, pollFleetSummary,
} from './api.js';
import { h, icon, setText, setTitle } from './dom.js';
import { connectionForm } from './fleet-form.js';
import { formatAgo, formatSpan, ServerClock } from './fleet-format.js';
import { SummaryView } from './fleet-summary.js';
import { ConnectionTable } from './fleet-table.js';
import { WorkerTable } from './fleet-workers.js';
import { Poller } from './poller.js';

const POLL_EVERY_MS = 1000;
const POLL_EVERY_MAX_MS = 8000;
// Without an answer for two periods and this much more, the page says its
// data is stale (4 s while it asks every second, 18 s at 8 s).
const STALE_MARGIN_MS = 2000;
// Countdowns and the freshness line are redrawn this often between answers.
const TICK_MS = 250;
// Why a filter with other characters matches nothing (it is not asked).
const NO_SUCH_ID = 'IDs hold only letters, digits, “.”, “_”, “~” and “-”.';

class FleetPage {
  constructor(main, user, goToSignIn) {
    this.main = main;
    this.admin = user.admin;
    this.goToSignIn = goToSignIn;
    this.clock = new ServerClock();
    this.summaryTag = null;
    this.pageTag = null;
    this.pageKey = null; // the query the page's tag belongs to
    this.lastAnswerAt = null; // performance.now() of the last complete answer
    this.lastAnswerTime = ''; // the server's time then, as local time of day
    this.lastError = null;
    this.stopped = false;
    this.poller = new Poller({
      everyMs: POLL_EVERY_MS, maxEveryMs: POLL_EVERY_MAX_MS, tickMs: TICK_MS,
      turn: (sentAt) => this.poll(sentAt), tick: () => this.tick(),
    });
    this.summary = new SummaryView({ onFind: (id) => this.table.find(id) });
    this.table = new ConnectionTable({
      admin: this.admin,
      now: () => (this.clock.known ? this.clock.now() : null),
      onQuery: () => this.poller.now(),
      onChanged: () => this.poller.now(),
      onSignedOut: () => this.signedOut(),
    });
    this.workers = new WorkerTable({ onFind: (id) => this.table.findOwner(id) });
  }

  start() {
    this.build();
    this.poller.start();
  }

  stop() {
    this.stopped = true;
    this.poller.stop();
    this.main.classList.remove('is-stale');
  }

  signedOut() {
    this.stop();
    this.goToSignIn();
  }

  // ---- polling ----

  // One turn: the summary, the page on screen and the workers, asked at
  // once, each drawn as it comes (a filter's page does not wait for the
  // others). Resolves true when the summary or the page changed (the
  // poller backs off while they do not).
  async poll(sentAt) {
    const query = this.table.query();
    const tag = query.key === this.pageKey ? this.pageTag : null;
    const nowMs = () => (this.clock.known ? this.clock.now() : null);
    // A page the server refuses (a bad filter) is the table's to say, not a
    // failure of the whole turn.
    const pageRead = query.params
      ? pollConnectionPage(query.params, tag).catch((error) => {
        if (error instanceof ApiError && error.status === 400) return { refused: error };
        throw error;
      })
      : Promise.resolve({ refused: { message: NO_SUCH_ID } });
    const pageShown = pageRead.then(
      (page) => !this.stopped && this.showPage(query.key, page, nowMs()));
    const workersRead = listWorkers().then((data) => {
      if (!this.stopped) this.clock.sync(data.now_ms, sentAt, performance.now());
      return data;
    });
    let changed = false;
    try {
      const [summary, pageChanged, workers] =
        await Promise.all([pollFleetSummary(this.summaryTag), pageShown, workersRead]);
      if (this.stopped) return false;
      changed = pageChanged;
      if (summary.changed && summary.etag !== this.summaryTag) {
        changed = true;
        this.summaryTag = summary.etag;
        this.summary.show(summary.data, nowMs());
        this.table.setCounts(summary.data.connections);
      }
      this.workers.show(workers.workers, nowMs());
      this.table.setWorkers(workers.workers);
      if (query.key === this.table.query().key) this.table.showAdded(sentAt);
      this.lastAnswerAt = performance.now();
      this.lastAnswerTime = new Date(workers.now_ms).toLocaleTimeString();
      this.lastError = null;
    } catch (error) {
      if (this.stopped) return false;
      if (error instanceof ApiError && error.status === 401) {
        this.signedOut();
        return false;
      }
      this.lastError = error;
      if (!(error instanceof ApiError)) console.error(error);
    }
    this.tick();
    return changed;
  }

  // Shows the page's answer if it is still the one on screen (the filters
  // may have changed while it was asked: another turn follows at once).
  // Its rates count over the times the server read it (readAtMs).
  showPage(key, page, nowMs) {
    if (key !== this.table.query().key) return false;
    if (page.refused) {
      this.pageKey = null;
      this.table.showQueryError(key, page.refused.message);
      return false;
    }
    const readAtMs = page.readAtMs ?? nowMs;
    if (!page.changed && key === this.pageKey) {
      this.table.unchanged(readAtMs);
      return false;
    }
    this.pageKey = key;
    this.pageTag = page.etag;
    this.table.showPage(key, page.data, nowMs, readAtMs);
    return true;
  }

  // Redraws what changes with time alone: countdowns and the freshness line.
  tick() {
    this.showFreshness();
    if (!this.clock.known) return;
    const nowMs = this.clock.now();
    this.summary.tick(nowMs);
    this.table.tick(nowMs);
    this.workers.tick(nowMs);
  }

  // ---- the page's frame ----

  build() {
    this.freshness = h('p', { class: 'freshness', id: 'fleet-freshness' });
    this.retryButton = h('button', {
      type: 'button', class: 'button button-small', id: 'fleet-retry',
      on: { click: () => this.poller.now() },
    }, 'Try again now');
    this.staleText = h('span', { class: 'stale-text' });
    this.staleAlert = h('div', {
      class: 'alert stale-alert', id: 'fleet-stale', role: 'alert', hidden: true,
    }, icon('alert', 18), this.staleText, this.retryButton);

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
    const table = this.table;
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
      this.summary.element,
      this.summary.attention,
      this.workers.element,
      h('section', { class: 'fleet-section', 'aria-labelledby': 'connections-title' },
        h('div', { class: 'section-head' },
          h('h2', { id: 'connections-title', tabindex: '-1' }, 'Connections'),
          addButton),
        this.form ? this.form.element : null,
        table.note,
        table.actionAlert,
        table.toolbar,
        table.area,
        table.bottomPager),
    );
    this.showFreshness();
  }

  // The pill beside the title says how fresh the data is; the alert under
  // it, whose text changes only when the reason does (it is announced),
  // says why it is not. Stale means two periods without an answer, so that
  // the back-off alone never makes the page stale.
  showFreshness() {
    const ageMs = this.lastAnswerAt === null ? null : performance.now() - this.lastAnswerAt;
    const staleAfterMs = 2 * this.poller.periodMs + STALE_MARGIN_MS;
    const stale = this.lastError !== null || (ageMs !== null && ageMs >= staleAfterMs);
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
    setTitle(this.freshness, kind === 'live'
      ? `Asks the server every ${formatSpan(this.poller.periodMs)}, more often after a change`
      : '');
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
    setText(this.staleText, `${why} ${since}; the page keeps trying.`);
  }

  // ---- adding ----

  toggleForm(open) {
    this.form.element.hidden = !open;
    this.addButton.setAttribute('aria-expanded', String(open));
    this.addButton.hidden = open;
    if (open) this.form.focus();
    else this.addButton.focus();
  }

  added(connection) {
    this.toggleForm(false);
    this.table.added(connection);
    this.poller.now();
  }
}

export function fleetView(main, { user, goToSignIn }) {
  const page = new FleetPage(main, user, goToSignIn);
  page.start();
  return () => page.stop();
}
