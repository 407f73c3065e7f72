// The movie list (/movies): the movies, the newest first, one page of 100
// at a time with next and previous pages (pager.js), each with its status
// (a trace's frames as they are written), length, size, owner and who
// holds it now; and the uploads (movies-upload.js), each shown at once at
// the top of the first page. Its owner or an admin may delete a movie that
// nobody holds.
//
// It asks for the page on screen only, with that page's ETag, so an
// unchanged page costs a 304 and redraws nothing, however many movies there
// are: every 2 seconds after a change, backing off to 8 seconds while
// nothing changes, and every 2 seconds again after an upload, a deletion, a
// page change or the page showing again; never while it is hidden. It says
// when what it shows is stale. The summaries lack a movie's size, length
// and owner: each movie on screen is read once (and again when its status
// changes), a few at a time.
//
// Rows carry hooks for tests and scripts: tr[data-movie-id] (with
// data-status) and td[data-field] for each column; the pager's are
// #movies-range, #movies-prev and #movies-next, and the note of an upload
// made on another page is #movies-note, with #movies-note-first.
import { ApiError, asSentence } from './api.js';
import {
  h, icon, loadingState, messageState, setBusy, setLoading, setText, setTitle, syncRows,
} from './dom.js';
import { countOf, formatAgo, formatSpan, formatWallTime } from './fleet-format.js';
import { formatFrames, formatLength, formatRate, formatSince } from './movies-format.js';
import { getMovie, pollMoviePage, removeMovie, videoUrl } from './movies-api.js';
import { Uploader } from './movies-upload.js';
import { Pager } from './pager.js';
import { Poller } from './poller.js';

const PAGE_SIZE = 100;
const POLL_EVERY_MS = 2000;
const POLL_EVERY_MAX_MS = 8000;
// Without an answer for two periods and this much more, the page says its
// data is stale (6 s while it asks every 2 s, 18 s at 8 s).
const STALE_MARGIN_MS = 2000;
// The freshness line is redrawn this often between answers.
const TICK_MS = 1000;
// Movies read at once for their details, and how long a read that failed
// waits before it is tried again.
const DETAIL_READS_MAX = 4;
const DETAIL_RETRY_MS = 10_000;
// A movie just uploaded is shown before the list names it, for this long.
const PENDING_MS = 30_000;

const STATUS_NAMES = {
  processing: 'Processing',
  ready: 'Ready',
  invalid: 'Invalid',
  queued: 'Queued',
  tracing: 'Tracing',
  traced: 'Traced',
  'tracing failed': 'Tracing failed',
  deleting: 'Deleting',
};
// Statuses that are work under way: their tag has a spinner.
const BUSY_STATUSES = new Set(['processing', 'tracing', 'deleting']);
const LOCK_NAMES = { analysis: 'Editing', tracing: 'Tracing' };

function td(field, label, ...children) {
  return h('td', { 'data-field': field, 'data-label': label }, ...children);
}

// Sets an attribute only when it changed: a write of the same value is a
// change to a MutationObserver (and to assistive technology watching one).
function setAttr(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

// A value that is not known (yet): a muted dash.
function dash(element, title = '') {
  if (element.dataset.empty !== 'true') {
    element.dataset.empty = 'true';
    element.replaceChildren(h('span', { class: 'muted', text: '—' }));
  }
  setTitle(element, title);
}

function filled(element) {
  if (element.dataset.empty === 'true') {
    element.dataset.empty = 'false';
    element.replaceChildren();
  }
}

class MoviesPage {
  constructor(main, user, goToSignIn) {
    this.main = main;
    this.user = user;
    this.goToSignIn = goToSignIn;
    this.rows = new Map(); // movie id -> row
    // The last answer for the page on screen, {movies, nextAfter}, as the
    // server orders it; null before the first.
    this.page = null;
    this.pageKey = null; // the `after` the page and its tag belong to
    this.pageTag = null;
    this.pending = new Map(); // id -> {summary, at}: uploaded, not yet listed
    this.details = new Map(); // id -> {movie, status, reading, failedAt}
    this.detailQueue = new Set();
    this.detailReads = 0;
    this.lastAnswerAt = null;
    this.lastAnswerTime = '';
    this.lastError = null;
    this.stopped = false;
    this.poller = new Poller({
      everyMs: POLL_EVERY_MS, maxEveryMs: POLL_EVERY_MAX_MS, tickMs: TICK_MS,
      turn: () => this.poll(), tick: () => this.showFreshness(),
    });
    this.pager = new Pager({
      id: 'movies', pageSize: PAGE_SIZE, label: 'Movies',
      onPage: (fromBottom) => this.pageChanged(fromBottom),
    });
    this.uploader = new Uploader({
      onUploaded: (movie) => this.uploaded(movie),
      announce: (text) => this.announce(text),
      goToSignIn: () => this.signedOut(),
    });
  }

  start() {
    this.build();
    this.uploader.attach();
    this.poller.start();
  }

  stop() {
    this.stopped = true;
    this.poller.stop();
    this.uploader.stop();
    this.main.classList.remove('is-stale');
  }

  signedOut() {
    this.stop();
    this.goToSignIn();
  }

  // ---- polling ----

  // One turn: the page on screen, with its tag. Resolves true when it
  // changed (the poller backs off while it does not).
  async poll() {
    const after = this.pager.after;
    let changed = false;
    try {
      const answer = await pollMoviePage(after, PAGE_SIZE,
        after === this.pageKey ? this.pageTag : null);
      if (this.stopped) return false;
      this.lastAnswerAt = performance.now();
      this.lastAnswerTime = new Date().toLocaleTimeString();
      this.lastError = null;
      // Another page was asked for meanwhile: its turn follows at once.
      if (after !== this.pager.after) return false;
      if (answer.changed || after !== this.pageKey) {
        changed = true;
        this.pageKey = after;
        this.pageTag = answer.etag;
        this.page = { movies: answer.data, nextAfter: answer.nextAfter };
        this.showMovies();
      }
      this.readDetails();
    } catch (error) {
      if (this.stopped) return false;
      if (error instanceof ApiError && error.status === 401) {
        this.signedOut();
        return false;
      }
      if (error instanceof ApiError && error.status === 400 && after === this.pager.after &&
          after !== '') {
        return this.resume(after);
      }
      this.lastError = error;
      if (!(error instanceof ApiError)) console.error(error);
      if (this.page === null) this.showLoadFailed();
    }
    this.showFreshness();
    return changed;
  }

  // The movie the page on screen starts after was removed, and its place
  // in the order with it (the server refuses `after`): the page is now the
  // one that follows the page before it, which says where that starts. A
  // page before it refused as well starts the list again; any other
  // failure is the turn's, and the next turn tries again.
  async resume(after) {
    const before = this.pager.previous.at(-1);
    try {
      const answer = await pollMoviePage(before, PAGE_SIZE);
      if (this.stopped || this.pager.after !== after) return false;
      if (answer.nextAfter) this.pager.after = answer.nextAfter;
      else this.pager.after = this.pager.previous.pop();
    } catch (error) {
      if (this.stopped) return false;
      if (!(error instanceof ApiError) || error.status !== 400) {
        this.lastError = error;
        this.showFreshness();
        return false;
      }
      if (this.pager.after === after) this.pager.reset();
    }
    this.pollNow();
    return true;
  }

  // Asks again now (a retry, an upload done), not at the next turn.
  pollNow() {
    this.poller.now();
  }

  // Next or Previous: the rows shown are the last page's until the new one
  // comes; they are marked as such, and the pager waits.
  pageChanged(fromBottom) {
    this.note.hidden = true;
    setLoading(this.area, true);
    this.showPager();
    if (fromBottom) this.pagerHead.scrollIntoView({ block: 'start' });
    this.pollNow();
  }

  // ---- the page's frame ----

  build() {
    this.freshness = h('p', { class: 'freshness', id: 'movies-freshness' });
    this.retryButton = h('button', {
      type: 'button', class: 'button button-small', on: { click: () => this.pollNow() },
    }, 'Try again now');
    this.staleText = h('span', { class: 'stale-text' });
    this.staleAlert = h('div', {
      class: 'alert stale-alert', id: 'movies-stale', role: 'alert', hidden: true,
    }, icon('alert', 18), this.staleText, this.retryButton);
    this.actionAlert = h('div', {
      class: 'alert', role: 'alert', id: 'movies-action-error', hidden: true,
    });
    this.note = h('div', { class: 'note', role: 'status', id: 'movies-note', hidden: true });
    this.announcer = h('p', { class: 'visually-hidden', role: 'status', id: 'movies-announce' });
    this.body = h('tbody');
    this.table = h('table', { class: 'data-table movie-table', id: 'movies' },
      h('caption', { class: 'visually-hidden', text: 'Movies' }),
      h('thead', {}, h('tr', {},
        ['Name', 'Status', 'Length', 'Size', 'Owner', 'Held by']
          .map((label) => h('th', { scope: 'col', text: label })),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Actions' })))),
      this.body);
    this.area = h('div', { class: 'table-area' }, loadingState('Loading movies…'));
    this.pagerHead = h('div', { class: 'section-head' },
      h('h2', { id: 'movies-title', tabindex: '-1' }, 'All movies'),
      this.pager.element);

    this.main.replaceChildren(
      h('div', { class: 'page-head page-head-row' },
        h('div', { class: 'page-title' },
          h('h1', { text: 'Movies' }),
          h('p', {
            class: 'lead',
            text: 'Open a movie to mark points on it and trace them through its frames. One ' +
              'person edits a movie at a time, and a trace holds it until it ends; the list ' +
              'shows who has each.',
          })),
        this.freshness),
      this.staleAlert,
      this.uploader.element,
      h('section', { class: 'movies-section', 'aria-labelledby': 'movies-title' },
        this.pagerHead,
        this.note,
        this.actionAlert,
        this.area,
        this.pager.bottom),
      this.announcer,
    );
    this.showPager();
    this.showFreshness();
  }

  announce(text) {
    // Cleared first, so that the same sentence twice is said twice.
    this.announcer.textContent = '';
    window.setTimeout(() => {
      this.announcer.textContent = text;
    }, 50);
  }

  // The pill beside the title says how fresh the list is; the alert under
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
    // Before the first answer, the list's own error state says it.
    this.staleAlert.hidden = !stale || this.page === null;
    if (this.staleAlert.hidden) return;
    let why = 'The server is slow to answer.';
    if (this.lastError) {
      why = this.lastError.status === 0 ? 'Could not reach the server.' : this.lastError.message;
    }
    setText(this.staleText,
      `${why} What you see is as it was at ${this.lastAnswerTime}; the page keeps trying.`);
  }

  showLoadFailed() {
    const error = this.lastError;
    const state = messageState({
      kind: 'error',
      boxed: true,
      title: 'The movies could not be loaded',
      body: [
        error.status === 0 ? 'Could not reach the server. Check your connection.' : error.message,
        'The page keeps trying.',
      ],
      actions: [h('button', {
        type: 'button', class: 'button button-primary', id: 'movies-retry',
        on: { click: () => this.pollNow() },
      }, 'Try again now')],
    });
    const key = `${error.status} ${error.message}`;
    if (this.area.dataset.failed === key) return;
    this.area.dataset.failed = key;
    this.area.replaceChildren(state);
  }

  // ---- the list ----

  // Whether the page on screen is the first one, as its last answer says:
  // where a movie just uploaded will be listed.
  onFirstPage() {
    return this.page !== null && this.pageKey === this.pager.after && this.pager.onFirstPage();
  }

  // The page's movies, and before them, on the first page, those uploaded
  // that it does not list yet, the newest first. The page keeps its size:
  // the movies they push off its end are the next page's once the list
  // names them.
  shownMovies() {
    const { movies } = this.page;
    const listed = new Set(movies.map((m) => m.id));
    const nowMs = performance.now();
    for (const [id, { at }] of this.pending) {
      if (listed.has(id) || nowMs - at > PENDING_MS) this.pending.delete(id);
    }
    if (!this.onFirstPage() || this.pending.size === 0) return movies;
    const uploads = [...this.pending.values()].reverse().map((p) => p.summary);
    return [...uploads, ...movies].slice(0, Math.max(PAGE_SIZE, uploads.length));
  }

  showMovies() {
    const shown = this.shownMovies();
    // Only what is on screen is read: a page left behind drops its reads.
    const ids = new Set(shown.map((m) => m.id));
    for (const id of this.details.keys()) {
      if (!ids.has(id)) this.details.delete(id);
    }
    for (const id of this.detailQueue) {
      if (!ids.has(id)) this.detailQueue.delete(id);
    }
    const hadFocus = this.body.contains(document.activeElement);
    syncRows(this.rows, this.body, shown, (m) => m.id, (m) => this.movieRow(m.id),
      (row, m) => this.fillMovie(row, m));
    // A row with focus left the page (deleted, or another page shown): focus
    // goes to the list's heading.
    if (hadFocus && !this.body.contains(document.activeElement)) {
      document.getElementById('movies-title').focus();
    }
    this.showArea(shown.length);
    this.showPager();
  }

  showPager() {
    const waiting = this.page === null || this.pageKey !== this.pager.after;
    if (waiting) {
      this.pager.show({ waiting });
      return;
    }
    const shown = this.body.children.length;
    this.pager.show({
      waiting, nextAfter: this.page.nextAfter, shown, single: countOf(shown, 'movie'),
    });
  }

  showArea(count) {
    delete this.area.dataset.failed;
    setLoading(this.area, false);
    let content = this.table;
    if (count === 0) content = this.emptyState();
    if (this.area.firstChild !== content || this.area.childNodes.length !== 1) {
      this.area.replaceChildren(content);
    }
  }

  // No movies at all, or a page past the first emptied since it was asked.
  emptyState() {
    if (!this.pager.onFirstPage()) {
      return this.emptyPast || (this.emptyPast = messageState({
        iconName: 'movie', boxed: true, title: 'This page is empty now',
        body: 'The movies it held were deleted since.',
        actions: [h('button', {
          type: 'button', class: 'button', text: 'Go to the first page',
          on: { click: () => this.firstPage() },
        })],
      }));
    }
    return this.empty || (this.empty = messageState({
      iconName: 'movie',
      boxed: true,
      title: 'No movies yet',
      body: 'Upload one with “Upload a movie”, or drag a video file onto this page. ' +
        'It is ready to open once the server has read it, in a few seconds.',
    }));
  }

  firstPage() {
    this.pager.reset();
    this.pageChanged(true);
  }

  // A movie the server created from an upload: shown at once where the
  // list will name it, at the top of the first page; on another page, a
  // note says where it is.
  uploaded(movie) {
    if (this.stopped) return;
    this.details.set(movie.id, { movie, status: movie.status });
    const summary = {
      id: movie.id, name: movie.name, status: movie.status, frames_done: movie.frames_done,
      frames_total: movie.frames_total, lock: movie.lock,
    };
    if (this.page && !this.page.movies.some((m) => m.id === movie.id)) {
      this.pending.set(movie.id, { summary, at: performance.now() });
      this.showMovies();
    }
    const row = this.rows.get(movie.id);
    if (row) {
      row.element.classList.add('just-added');
    } else if (this.page) {
      this.note.replaceChildren(
        h('span', { text: `${movie.name} is uploaded. It is first on the first page.` }),
        h('button', {
          type: 'button', class: 'button button-small', id: 'movies-note-first',
          text: 'Go to the first page', on: { click: () => this.firstPage() },
        }));
      this.note.hidden = false;
    }
    this.pollNow();
  }

  // ---- a movie's row ----

  movieRow(id) {
    const cells = {
      name: td('name', 'Name'),
      status: td('status', 'Status'),
      length: td('length', 'Length'),
      size: td('size', 'Size'),
      owner: td('owner', 'Owner'),
      lock: td('lock', 'Held by'),
      actions: h('td', { 'data-field': 'actions', class: 'actions' }),
    };
    const row = { id, cells, summary: null, confirming: false, busy: false, deleting: false };
    row.link = h('a', { class: 'movie-name', href: `/movies/${encodeURIComponent(id)}` });
    cells.name.append(row.link);
    row.tag = h('span', { class: 'tag status-tag' },
      h('span', { class: 'spinner', 'aria-hidden': 'true' }), h('span', { class: 'tag-text' }));
    row.progressText = h('span', { class: 'trace-text' });
    row.progress = h('span', { class: 'trace-progress', hidden: true },
      h('span', { class: 'meter', 'aria-hidden': 'true' }, h('span', { class: 'meter-fill' })),
      row.progressText);
    row.note = h('span', { class: 'status-note', hidden: true });
    cells.status.append(row.tag, row.progress, row.note);
    row.element = h('tr', { 'data-movie-id': id }, Object.values(cells));
    return row;
  }

  fillMovie(row, summary) {
    row.summary = summary;
    const status = row.deleting ? 'deleting' : summary.status;
    setAttr(row.element, 'data-status', status);
    setText(row.link, summary.name);
    setAttr(row.link, 'aria-label', `Open ${summary.name}`);
    setText(row.tag.lastChild, STATUS_NAMES[status] || status);
    setAttr(row.tag, 'class', `tag status-tag status-${status.replace(' ', '-')}`);
    setAttr(row.tag, 'data-busy', String(BUSY_STATUSES.has(status)));
    this.showProgress(row, summary, status);
    this.showLock(row, summary.lock);
    this.showDetail(row);
  }

  // A trace's sampled frames written so far, as a bar and numbers.
  showProgress(row, summary, status) {
    const shown = status === 'tracing' && summary.frames_total > 0;
    if (row.progress.hidden === shown) row.progress.hidden = !shown;
    if (!shown) return;
    const share = Math.min(1, summary.frames_done / summary.frames_total);
    // CSSOM, not a style attribute: the page's CSP allows only its stylesheet.
    const width = `${(share * 100).toFixed(1)}%`;
    const fill = row.progress.querySelector('.meter-fill');
    if (fill.style.width !== width) fill.style.width = width;
    setText(row.progressText, `${summary.frames_done} / ${formatFrames(summary.frames_total)}`);
  }

  showLock(row, lock) {
    const cell = row.cells.lock;
    const key = lock
      ? `${lock.kind}\u0000${lock.user_display_name}\u0000${lock.started_at_ms}` : '';
    if (cell.dataset.key === key) return;
    cell.dataset.key = key;
    cell.dataset.lock = lock ? lock.kind : 'none';
    if (!lock) {
      dash(cell);
      return;
    }
    filled(cell);
    cell.replaceChildren(h('span', { class: 'lock-text' },
      h('span', { class: 'lock-kind', text: `${LOCK_NAMES[lock.kind] || lock.kind}:` }), ' ',
      h('span', { class: 'lock-holder', text: lock.user_display_name }), ' ',
      h('span', { class: 'lock-since', text: `since ${formatSince(lock.started_at_ms)}` })));
    setTitle(cell, `${LOCK_NAMES[lock.kind] || lock.kind} by ${lock.user_display_name} since ` +
      `${formatWallTime(lock.started_at_ms)}`);
  }

  // What only the movie itself says: length, size, owner, why it failed.
  showDetail(row) {
    const { cells } = row;
    const movie = this.details.get(row.id)?.movie;
    if (movie && movie.frame_count != null && movie.fps) {
      filled(cells.length);
      this.showLength(row, movie);
    } else {
      dash(cells.length, movie?.status === 'processing' ? 'Known once it is processed' : '');
    }
    if (movie && movie.width != null) {
      setText(cells.size, `${movie.width}×${movie.height}`);
      setAttr(cells.size, 'data-empty', 'false');
      setTitle(cells.size, `${movie.width} × ${movie.height} pixels`);
    } else {
      dash(cells.size);
    }
    if (movie) {
      setText(cells.owner, movie.owner_display_name);
      setAttr(cells.owner, 'data-empty', 'false');
      setTitle(cells.owner, `Uploaded ${formatWallTime(movie.created_at_ms)}`);
    } else {
      dash(cells.owner);
    }
    const status = row.element.dataset.status;
    const failure = movie && movie.status === status ? movie.failure_summary : null;
    if (row.note.hidden === Boolean(failure)) row.note.hidden = !failure;
    if (failure) setText(row.note, asSentence(failure));
    this.showActions(row);
  }

  showLength(row, movie) {
    const cell = row.cells.length;
    if (!row.lengthText) {
      row.lengthText = h('span', { class: 'length-time' });
      row.framesText = h('span', { class: 'muted when' });
    }
    if (cell.firstChild !== row.lengthText) cell.replaceChildren(row.lengthText, row.framesText);
    setText(row.lengthText, formatLength(movie));
    setText(row.framesText, `${formatFrames(movie.frame_count)} at ${formatRate(movie)}`);
  }

  // ---- details: each movie read once, and again when its status changes ----

  readDetails() {
    const nowMs = performance.now();
    for (const row of this.rows.values()) {
      const status = row.summary.status;
      const known = this.details.get(row.id);
      if (known && (known.reading || known.status === status)) continue;
      if (known?.failedAt && nowMs - known.failedAt < DETAIL_RETRY_MS) continue;
      this.detailQueue.add(row.id);
    }
    this.nextDetails();
  }

  nextDetails() {
    while (this.detailReads < DETAIL_READS_MAX && this.detailQueue.size > 0 && !this.stopped) {
      const [id] = this.detailQueue;
      this.detailQueue.delete(id);
      this.readDetail(id);
    }
  }

  async readDetail(id) {
    this.detailReads += 1;
    const entry = this.details.get(id) || {};
    this.details.set(id, entry);
    entry.reading = true;
    try {
      const movie = await getMovie(id);
      entry.movie = movie;
      entry.status = movie.status;
      entry.failedAt = null;
      const row = this.rows.get(id);
      if (row && !this.stopped) this.showDetail(row);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.signedOut();
      // 404: removed meanwhile; the next list drops its row.
      entry.status = null;
      entry.failedAt = performance.now();
    } finally {
      entry.reading = false;
      this.detailReads -= 1;
      this.nextDetails();
    }
  }

  // ---- download and delete ----

  // Why this user may not delete the movie now, or '' if they may (said
  // briefly: who holds it, and since when, is in the row). The movie names
  // its owner only by display name, so that is what is compared with the
  // user's; the server's answer (403, 409) is the final word.
  deleteBlocked(row) {
    const status = row.element.dataset.status;
    if (status === 'deleting') return 'It is being deleted.';
    const movie = this.details.get(row.id)?.movie;
    if (!this.user.admin) {
      if (!movie) return 'Checking who owns it…';
      if (movie.owner_display_name !== this.user.display_name) {
        return `Only ${movie.owner_display_name} (its owner) or an admin can delete it.`;
      }
    }
    const lock = row.summary.lock;
    if ((lock && lock.kind === 'tracing') || status === 'queued' || status === 'tracing') {
      return 'It can be deleted once its trace ends.';
    }
    if (lock) {
      return `${lock.user_display_name} is editing it; it can be deleted once they close it.`;
    }
    return '';
  }

  showActions(row) {
    if (row.busy) return;
    const blocked = this.deleteBlocked(row);
    const key = `${blocked}\u0000${row.summary.name}\u0000${row.confirming}`;
    if (row.actionsKey === key) return;
    if (row.confirming && blocked) {
      row.confirming = false;
      return this.showActions(row);
    }
    row.actionsKey = key;
    this.drawActions(row, blocked);
  }

  drawActions(row, blocked) {
    const cell = row.cells.actions;
    const { name } = row.summary;
    const hadFocus = cell.contains(document.activeElement);
    if (row.confirming) {
      cell.replaceChildren(
        h('span', { class: 'confirm-text', text: `Delete ${name}?` }),
        this.actionButton(`Delete ${name}`, 'Delete', 'button button-danger confirm-delete',
          () => this.remove(row)),
        this.actionButton(`Cancel deleting ${name}`, 'Cancel', 'button cancel-delete', () => {
          row.confirming = false;
          this.showActions(row);
          row.cells.actions.querySelector('.delete')?.focus();
        }));
      cell.querySelector('.confirm-delete').focus();
      return;
    }
    const download = row.element.dataset.status === 'deleting' ? null : h('a', {
      class: 'button button-small download', href: videoUrl(row.id), download: name,
      'aria-label': `Download ${name}`,
    }, 'Download');
    const reasonId = `movie-${row.id}-delete-reason`;
    const remove = this.actionButton(`Delete ${name}`, 'Delete', 'button button-quiet delete',
      () => {
        if (remove.getAttribute('aria-disabled') === 'true') return;
        row.confirming = true;
        this.showActions(row);
      });
    // aria-disabled, not disabled: the button stays focusable and keeps its
    // tooltip, so the reason can be read by everyone.
    if (blocked) {
      remove.setAttribute('aria-disabled', 'true');
      remove.setAttribute('aria-describedby', reasonId);
      remove.title = blocked;
    }
    const reason = blocked
      ? h('span', { class: 'delete-reason', id: reasonId, text: blocked }) : null;
    cell.replaceChildren(...[download, remove, reason].filter(Boolean));
    if (hadFocus) remove.focus();
  }

  actionButton(label, text, classes, onClick) {
    return h('button', {
      type: 'button', class: `${classes} button-small`, 'aria-label': label,
      on: { click: onClick },
    }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
  }

  async remove(row) {
    if (row.busy) return;
    row.busy = true;
    const button = row.cells.actions.querySelector('.confirm-delete');
    for (const b of row.cells.actions.querySelectorAll('button')) b.disabled = true;
    setBusy(button, true);
    this.actionAlert.hidden = true;
    const { name } = row.summary;
    try {
      await removeMovie(row.id);
      // 202: the server removes it in the background; the row says so until
      // the list no longer names it.
      row.deleting = true;
      this.announce(`${name} is being deleted.`);
      // Asked again soon, so that the row goes once the server has removed it.
      this.pollNow();
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.signedOut();
      this.actionAlert.replaceChildren(icon('alert', 18),
        h('span', { text: `Could not delete ${name}: ${error.message}` }));
      this.actionAlert.hidden = false;
    } finally {
      row.busy = false;
    }
    row.confirming = false;
    if (!row.element.isConnected) return;
    this.fillMovie(row, row.summary);
    row.cells.actions.querySelector('.delete')?.focus();
  }
}

export function moviesView(main, { user, goToSignIn }) {
  const page = new MoviesPage(main, user, goToSignIn);
  page.start();
  return () => page.stop();
}
