// The movie list (/movies): every movie with its status (a trace's frames
// as they are written), length, size, owner and who holds it now, and the
// uploads (movies-upload.js). It asks the server every two seconds while
// the page is visible (never while it is hidden), with the list's ETag, so
// an unchanged list costs a 304 and redraws nothing; it says when what it
// shows is stale. The summaries lack a movie's size, length and owner: each
// movie is read once (and again when its status changes), a few at a time.
// Its owner or an admin may delete a movie that nobody holds.
//
// Rows carry hooks for tests and scripts: tr[data-movie-id] (with
// data-status) and td[data-field] for each column.
import { ApiError, asSentence } from './api.js';
import { h, icon, loadingState, messageState, setBusy } from './dom.js';
import { formatAgo, formatWallTime } from './fleet-format.js';
import { formatFrames, formatLength, formatSince } from './movies-format.js';
import { getMovie, moviesPage, pollMovies, removeMovie, videoUrl } from './movies-api.js';
import { Uploader } from './movies-upload.js';
import { Poller } from './poller.js';

const POLL_EVERY_MS = 2000;
// Without a fresh answer for this long, the page says its data is stale.
const STALE_AFTER_MS = 6000;
// The freshness line is redrawn this often between answers.
const TICK_MS = 1000;
// Movies read at once for their details, and how long a read that failed
// waits before it is tried again.
const DETAIL_READS_MAX = 4;
const DETAIL_RETRY_MS = 10_000;
// Pages followed after the first (1000 movies each).
const PAGES_MAX = 20;
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

// Sets `element`'s text only when it changed, so that a screen reader or a
// selection is not disturbed by every poll.
function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

// Sets an attribute only when it changed: a write of the same value is a
// change to a MutationObserver (and to assistive technology watching one).
function setAttr(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

function setTitle(element, title) {
  if (title) setAttr(element, 'title', title);
  else if (element.hasAttribute('title')) element.removeAttribute('title');
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
    this.movies = null; // the last list, as the server orders it; null before the first
    this.etag = null;
    this.later = null; // the path of the list's second page, or null
    this.pending = new Map(); // id -> {summary, at}: uploaded, not yet listed
    this.details = new Map(); // id -> {movie, status, reading, failedAt}
    this.detailQueue = new Set();
    this.detailReads = 0;
    this.lastAnswerAt = null;
    this.lastAnswerTime = '';
    this.lastError = null;
    this.stopped = false;
    this.poller = new Poller({
      everyMs: POLL_EVERY_MS, tickMs: TICK_MS,
      turn: () => this.poll(), tick: () => this.showFreshness(),
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

  async poll() {
    try {
      const movies = await this.readList();
      if (this.stopped) return;
      this.lastAnswerAt = performance.now();
      this.lastAnswerTime = new Date().toLocaleTimeString();
      this.lastError = null;
      if (movies) this.showMovies(movies);
      this.readDetails();
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ApiError && error.status === 401) return this.signedOut();
      this.lastError = error;
      if (!(error instanceof ApiError)) console.error(error);
      if (this.movies === null) this.showLoadFailed();
    }
    this.showFreshness();
  }

  // Asks again now (a retry, an upload done), not at the next turn.
  pollNow() {
    this.poller.now();
  }

  // The whole list, or null when it is as it was. The first page is asked
  // with its ETag; pages after it (over 1000 movies) carry none, so they
  // are read again at every turn.
  async readList() {
    const first = await pollMovies(this.etag);
    if (first.changed) {
      this.firstPage = first.data;
      this.later = first.next;
    } else if (!this.later) {
      return null;
    }
    const movies = [...this.firstPage];
    let path = this.later;
    for (let pages = 0; path && pages < PAGES_MAX; pages += 1) {
      let page;
      try {
        page = await moviesPage(path);
      } catch (error) {
        // The movie a page resumes after was removed meanwhile: start again.
        if (error instanceof ApiError && error.status === 400) this.etag = null;
        throw error;
      }
      movies.push(...page.data);
      path = page.next;
    }
    // Kept only once every page is in: a failure asks for all of it again.
    if (first.changed) this.etag = first.etag;
    return movies;
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
    this.announcer = h('p', { class: 'visually-hidden', role: 'status', id: 'movies-announce' });
    this.count = h('span', { class: 'count', id: 'movies-count' });
    this.body = h('tbody');
    this.table = h('table', { class: 'data-table movie-table', id: 'movies' },
      h('caption', { class: 'visually-hidden', text: 'Movies' }),
      h('thead', {}, h('tr', {},
        ['Name', 'Status', 'Length', 'Size', 'Owner', 'Held by']
          .map((label) => h('th', { scope: 'col', text: label })),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Actions' })))),
      this.body);
    this.area = h('div', { class: 'table-area' }, loadingState('Loading movies…'));

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
        h('div', { class: 'section-head' },
          h('h2', { id: 'movies-title', tabindex: '-1' }, 'All movies', this.count)),
        this.actionAlert,
        this.area),
      this.announcer,
    );
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
    // Before the first answer, the list's own error state says it.
    this.staleAlert.hidden = !stale || this.movies === null;
    if (this.staleAlert.hidden) return;
    let why = 'The server is slow to answer.';
    if (this.lastError) {
      why = this.lastError.status === 0 ? 'Could not reach the server.' : this.lastError.message;
    }
    const message = `${why} What you see is as it was at ${this.lastAnswerTime}; ` +
      'trying again every 2 seconds.';
    setText(this.staleText, message);
  }

  showLoadFailed() {
    const error = this.lastError;
    const state = messageState({
      kind: 'error',
      boxed: true,
      title: 'The movies could not be loaded',
      body: [
        error.status === 0 ? 'Could not reach the server. Check your connection.' : error.message,
        'The page tries again every 2 seconds.',
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

  showMovies(movies) {
    this.movies = movies;
    const listed = new Set(movies.map((m) => m.id));
    const nowMs = performance.now();
    for (const [id, { at }] of this.pending) {
      if (listed.has(id) || nowMs - at > PENDING_MS) this.pending.delete(id);
    }
    // Newest first: a movie just uploaded appears at the top.
    const shown = [...movies, ...[...this.pending.values()].map((p) => p.summary)].reverse();
    const ids = new Set(shown.map((m) => m.id));
    for (const [id, row] of this.rows) {
      if (!ids.has(id)) this.removeRow(row);
    }
    for (const id of this.details.keys()) {
      if (!ids.has(id)) this.details.delete(id);
    }
    shown.forEach((movie, index) => {
      let row = this.rows.get(movie.id);
      if (!row) {
        row = this.movieRow(movie.id);
        this.rows.set(movie.id, row);
      }
      if (this.body.children[index] !== row.element) {
        this.body.insertBefore(row.element, this.body.children[index] || null);
      }
      this.fillMovie(row, movie);
    });
    setText(this.count, String(shown.length));
    this.showArea(shown.length);
  }

  removeRow(row) {
    const hadFocus = row.element.contains(document.activeElement);
    row.element.remove();
    this.rows.delete(row.id);
    // Its buttons are gone: focus goes to the list's heading.
    if (hadFocus) document.getElementById('movies-title').focus();
  }

  showArea(count) {
    delete this.area.dataset.failed;
    let content = this.table;
    if (count === 0) {
      content = this.empty || (this.empty = messageState({
        iconName: 'movie',
        boxed: true,
        title: 'No movies yet',
        body: 'Upload one with “Upload a movie”, or drag a video file onto this page. ' +
          'It is ready to open once the server has read it, in a few seconds.',
      }));
    }
    if (this.area.firstChild !== content || this.area.childNodes.length !== 1) {
      this.area.replaceChildren(content);
    }
  }

  uploaded(movie) {
    if (this.stopped) return;
    this.details.set(movie.id, { movie, status: movie.status });
    const summary = {
      id: movie.id, name: movie.name, status: movie.status, frames_done: movie.frames_done,
      frames_total: movie.frames_total, lock: movie.lock,
    };
    if (this.movies && !this.movies.some((m) => m.id === movie.id)) {
      this.pending.set(movie.id, { summary, at: performance.now() });
      this.showMovies(this.movies);
    }
    this.rows.get(movie.id)?.element.classList.add('just-added');
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
    setText(row.lengthText, formatLength(movie.frame_count, movie.fps));
    setText(row.framesText, `${formatFrames(movie.frame_count)} at ${movie.fps} fps`);
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
