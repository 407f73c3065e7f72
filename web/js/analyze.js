// A movie's Analyze page (/movies/{id}): step through its exact frames,
// place markers, set the clip (trim and capture interval) and trace; then
// see the tracks over the frames, the plots, the table and the CSV.
//
// One browser edits a movie at a time. On open the page takes the movie's
// analysis lease, heartbeats it well inside its ttl, and gives it back when
// the page goes away (pagehide, with a keepalive request). Every write
// carries the lease ID; the server conditions each on it. A page without the
// lease is view-only: every edit control is disabled, a banner names who
// holds the movie and since when, and the page polls and offers to edit as
// soon as the movie is free. A page whose heartbeat or write is refused
// (409) stops editing at once and says why. While a trace is queued or runs,
// the page shows its progress and that it is safe to leave.
//
// Test hooks: #lease-banner[data-mode], #trace-progress, #results,
// [data-marker-id] in the marker list, #trim-start, #trim-end,
// #capture-every, #trace-button.
import { ApiError, asSentence } from './api.js';
import { h, icon, loadingState, messageState, setBusy } from './dom.js';
import { formatWallTime } from './fleet-format.js';
import { colourOf, FrameViewer } from './frame-viewer.js';
import { loadFrameTimes } from './frame-times.js';
import { formatLength, formatRate, formatSince } from './movies-format.js';
import {
  acquireAnalysis, allFrames, breakAnalysis, getAudit, getMovie, heartbeatAnalysis, pollMovie,
  putCaptureInterval, putMarkers, putTrim, releaseAnalysis, releaseAnalysisOnLeave, startTrace,
  videoUrl,
} from './movies-api.js';
import { TraceResults } from './trace-results.js';

const POLL_MS = 2000; // the movie, while nothing runs
const POLL_BUSY_MS = 1000; // while a trace is queued or runs, or a probe
// Heartbeats: a third of the lease's ttl, at most a minute apart, and
// tried again this soon after one that got no answer.
const HEARTBEAT_MAX_MS = 60000;
const HEARTBEAT_RETRY_MS = 3000;
const MARKERS_MAX = 64;

const EDITABLE = new Set(['ready', 'traced', 'tracing failed']);
const BUSY = new Set(['queued', 'tracing']);


// How many frames a clip samples: its start, then every `every` up to its end.
export function sampledFrames(start, end, every) {
  if (!(end >= start) || !(every >= 1)) return 0;
  return Math.floor((end - start) / every) + 1;
}

function nextMarkerId(markers) {
  const taken = new Set(markers.map((m) => m.id));
  for (let n = markers.length + 1; ; ++n) {
    if (!taken.has(`p${n}`)) return { id: `p${n}`, label: `Point ${n}` };
  }
}

function field(id, label, input, hint) {
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), input, hint);
}

class AnalyzePage {
  constructor(main, { user, goToSignIn, params, setTitle }) {
    this.main = main;
    this.user = user;
    this.goToSignIn = goToSignIn;
    this.setTitle = setTitle;
    this.id = params.id;
    this.movie = null;
    this.etag = null;
    this.lease = null; // {id, deadline: performance.now() past which it may have expired}
    this.mode = 'loading'; // 'edit' | 'view'
    this.viewReason = null;
    this.selectedId = null;
    this.frame = 0;
    this.writes = Promise.resolve(); // edits go out one after another, in order
    this.resultsKey = null;
    this.stopped = false;
    this.startedTrace = false; // this page started the running trace
    this.onPageHide = () => this.leaveNow();
    this.onPageShow = (event) => { if (event.persisted) this.acquire(); };
    this.onKey = (event) => this.key(event);
    this.onVisibility = () => { if (!document.hidden) this.poll(); };
  }

  async start() {
    this.main.replaceChildren(loadingState('Loading the movie…'));
    let answer;
    try {
      answer = await pollMovie(this.id);
    } catch (error) {
      this.failed(error);
      return;
    }
    if (this.stopped) return;
    this.movie = answer.data;
    this.etag = answer.etag;
    this.setTitle(`${this.movie.name} · Analyze`);
    this.build();
    window.addEventListener('pagehide', this.onPageHide);
    window.addEventListener('pageshow', this.onPageShow);
    document.addEventListener('keydown', this.onKey);
    document.addEventListener('visibilitychange', this.onVisibility);
    this.showMovie();
    if (EDITABLE.has(this.movie.status) && !this.movie.lock) await this.acquire();
    else this.enterView(this.reasonFromMovie());
    this.schedulePoll();
  }

  stop() {
    this.stopped = true;
    window.clearTimeout(this.pollTimer);
    window.clearTimeout(this.heartbeatTimer);
    window.removeEventListener('pagehide', this.onPageHide);
    window.removeEventListener('pageshow', this.onPageShow);
    document.removeEventListener('keydown', this.onKey);
    document.removeEventListener('visibilitychange', this.onVisibility);
    this.viewer?.destroy();
    this.results?.destroy();
    // Leaving for another page of the app: the lease goes back at once.
    if (this.lease) {
      releaseAnalysis(this.id, this.lease.id).catch(() => {});
      this.lease = null;
    }
  }

  failed(error) {
    if (error instanceof ApiError && error.status === 401) {
      this.goToSignIn();
      return;
    }
    const notFound = error instanceof ApiError && error.status === 404;
    this.main.replaceChildren(messageState({
      kind: notFound ? 'empty' : 'error',
      iconName: 'movie',
      boxed: true,
      title: notFound ? 'There is no such movie' : 'This movie could not be loaded',
      body: notFound ? 'It may have been removed. The movie list has the ones there are.'
        : error.message,
      actions: [h('a', { class: 'button', href: '/movies' }, 'Back to the movies')],
    }));
  }

  // ---- the page's frame ----

  build() {
    const m = this.movie;
    this.title = h('h1', { text: m.name });
    this.facts = h('p', { class: 'movie-facts muted', id: 'movie-facts' });
    this.statusTag = h('span', { class: 'tag', id: 'movie-status' });
    this.banner = h('div', { class: 'lease-banner', id: 'lease-banner', role: 'status',
      'aria-live': 'polite' });
    this.alert = h('div', { class: 'alert', role: 'alert', id: 'analyze-alert', hidden: true });
    this.progress = this.buildProgress();
    this.stageArea = h('div', { class: 'analyze-stage' });
    this.panel = this.buildPanel();
    this.results = new TraceResults(this.id, { onFrame: (n) => this.viewer?.showFrame(n) });
    this.results.element.id = 'results';
    this.results.element.hidden = true;
    this.failure = h('div', { class: 'alert trace-failure', id: 'trace-failure', hidden: true });
    this.main.replaceChildren(
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
        h('a', { href: '/movies', text: 'Movies' }), h('span', { 'aria-hidden': 'true',
          text: ' / ' }), h('span', { 'aria-current': 'page', text: m.name })),
      h('div', { class: 'page-head page-head-row analyze-head' },
        h('div', { class: 'page-title' },
          h('div', { class: 'title-line' }, this.title, this.statusTag),
          this.facts),
        h('a', { class: 'button', href: videoUrl(this.id), download: m.name,
          id: 'download-video' }, 'Download video')),
      this.banner,
      this.alert,
      this.progress.element,
      this.failure,
      h('div', { class: 'analyze-layout' }, this.stageArea, this.panel.element),
      this.results.element);
  }

  buildProgress() {
    const bar = h('div', { class: 'progress-bar', role: 'progressbar', 'aria-valuemin': '0',
      'aria-label': 'Trace progress' }, h('span', { class: 'progress-fill' }));
    const text = h('p', { class: 'progress-text', id: 'trace-progress-text' });
    const element = h('section', { class: 'panel analyze-progress', id: 'trace-progress',
      hidden: true, 'aria-labelledby': 'trace-progress-title' },
    h('h2', { id: 'trace-progress-title', text: 'Tracing' }),
    bar, text,
    h('p', { class: 'safe-to-leave', id: 'safe-to-leave' },
      icon('clock', 18), h('span', {
        text: 'It is safe to leave this page: the trace runs on the server. Come back to ' +
          'Analyze any time to see the results.',
      })));
    return { element, bar, text };
  }

  buildPanel() {
    const list = h('ul', { class: 'marker-list', id: 'marker-list' });
    const empty = h('p', { class: 'muted marker-empty',
      text: 'Click on the frame to place a marker where a point is; drag a marker to move it.' });
    const numberInput = (id, onChange) => h('input', {
      class: 'input input-number', id, type: 'number', min: '0', step: '1', inputmode: 'numeric',
      on: { change: onChange },
    });
    const start = numberInput('trim-start', () => this.trimChanged());
    const end = numberInput('trim-end', () => this.trimChanged());
    const every = numberInput('capture-every', () => this.intervalChanged());
    every.min = '1';
    const setStart = h('button', { type: 'button', class: 'button button-small',
      id: 'trim-start-here', 'aria-label': 'Set the start to the current frame',
      on: { click: () => this.setTrimFromFrame('start') } }, 'Current frame');
    const setEnd = h('button', { type: 'button', class: 'button button-small',
      id: 'trim-end-here', 'aria-label': 'Set the end to the current frame',
      on: { click: () => this.setTrimFromFrame('end') } }, 'Current frame');
    const sampled = h('p', { class: 'field-hint', id: 'sampled-frames', 'aria-live': 'polite' });
    const clipError = h('p', { class: 'field-error', id: 'clip-error', hidden: true });
    const traceButton = h('button', { type: 'button', class: 'button button-primary button-block',
      id: 'trace-button', on: { click: () => this.trace() } },
    h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Trace');
    const traceHint = h('p', { class: 'field-hint', id: 'trace-hint' });
    const saved = h('p', { class: 'save-state muted', id: 'save-state', 'aria-live': 'polite' });
    const element = h('aside', { class: 'analyze-panel', 'aria-label': 'Analysis' },
      h('section', { class: 'panel-section', 'aria-labelledby': 'markers-title' },
        h('h2', { id: 'markers-title' }, 'Markers ', h('span', { class: 'count',
          id: 'markers-count' })),
        empty, list),
      h('section', { class: 'panel-section', 'aria-labelledby': 'clip-title' },
        h('h2', { id: 'clip-title', text: 'Clip' }),
        h('div', { class: 'clip-grid' },
          field('trim-start', 'Start frame', start), setStart,
          field('trim-end', 'End frame', end), setEnd,
          field('capture-every', 'Every … frames', every)),
        sampled, clipError),
      h('section', { class: 'panel-section' }, traceButton, traceHint, saved));
    return { element, list, empty, start, end, every, setStart, setEnd, sampled, clipError,
      traceButton, traceHint, saved };
  }

  // ---- showing the movie ----

  showMovie() {
    const m = this.movie;
    this.title.textContent = m.name;
    const probed = m.frame_count != null;
    const facts = [];
    if (probed) {
      facts.push(`${m.width}×${m.height}`, `${m.frame_count} frames`, formatRate(m),
        formatLength(m));
    }
    facts.push(`uploaded by ${m.owner_display_name}`);
    this.facts.textContent = facts.join(' · ');
    this.statusTag.textContent = m.status;
    this.statusTag.className = `tag status-${m.status.replace(' ', '-')}`;
    if (probed && !this.viewer) {
      this.viewer = new FrameViewer(m, {
        onFrame: (n) => this.frameChanged(n),
        onPlace: (x, y, frame) => this.placeMarker(x, y, frame),
        onMove: (id, x, y, frame) => this.moveMarker(id, x, y, frame),
        onSelect: (id) => this.selectMarker(id),
      });
      this.stageArea.replaceChildren(this.viewer.element);
      this.viewer.layout();
      // Each frame's own time, for the position, playing and the plots.
      loadFrameTimes(m).then((times) => {
        if (this.stopped) return;
        this.times = times;
        this.viewer?.setTimes(times);
        this.results.setTimes(times);
      });
    } else if (!probed) {
      this.stageArea.replaceChildren(this.unprobedState());
    }
    this.showProgress();
    this.showFailure();
    this.showPanel();
    this.loadResults();
  }

  unprobedState() {
    const m = this.movie;
    if (m.status === 'processing') {
      return messageState({ iconName: 'clock', boxed: true, title: 'Reading the movie…',
        body: 'The server is counting its frames. This page shows them as soon as it is done.' });
    }
    if (m.status === 'deleting') {
      return messageState({ iconName: 'movie', boxed: true, title: 'This movie is being removed',
        body: 'Its frames and results are going too.' });
    }
    return messageState({ kind: 'error', boxed: true, title: 'This movie cannot be analysed',
      body: m.failure_summary || 'The server could not read it as a video.',
      actions: [h('a', { class: 'button', href: '/movies' }, 'Back to the movies')] });
  }

  showProgress() {
    const m = this.movie;
    const busy = BUSY.has(m.status);
    this.progress.element.hidden = !busy;
    if (!busy) return;
    const total = m.frames_total || 0;
    const done = Math.min(m.frames_done || 0, total);
    const share = total > 0 ? done / total : 0;
    this.progress.bar.firstChild.style.width = `${(share * 100).toFixed(1)}%`;
    this.progress.bar.setAttribute('aria-valuemax', String(total));
    this.progress.bar.setAttribute('aria-valuenow', String(done));
    this.progress.bar.dataset.state = m.status;
    const lock = m.lock;
    const who = lock ? ` Started by ${lock.user_display_name} at ${formatSince(lock.started_at_ms)}.`
      : '';
    this.progress.text.textContent = m.status === 'queued'
      ? `Queued: waiting for a trace worker (${total} frames to trace).${who}`
      : `Tracing: ${done} of ${total} frames (${Math.floor(share * 100)} %).${who}`;
  }

  showFailure() {
    const m = this.movie;
    const failed = m.status === 'tracing failed';
    this.failure.hidden = !failed;
    if (failed) {
      this.failure.replaceChildren(icon('alert', 18), h('span', {},
        h('strong', { text: 'The last trace failed. ' }),
        asSentence(m.failure_summary || 'no reason was given'),
        ' Check the markers and the clip, then trace again.'));
    }
  }

  // ---- the lease ----

  reasonFromMovie() {
    const m = this.movie;
    if (BUSY.has(m.status)) return { kind: 'tracing' };
    if (!EDITABLE.has(m.status)) return { kind: 'status' };
    if (m.lock) return { kind: 'held', holder: m.lock };
    return { kind: 'free' };
  }

  async acquire() {
    if (this.stopped || this.lease) return;
    let answer;
    try {
      const sentAt = performance.now();
      answer = await acquireAnalysis(this.id);
      if (this.stopped) {
        releaseAnalysis(this.id, answer.lease_id).catch(() => {});
        return;
      }
      this.lease = { id: answer.lease_id };
      this.leaseTakenAt = 0;
      this.ttlMs = await this.leaseTtl(answer);
      this.armLease(sentAt);
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      if (error instanceof ApiError && error.status === 409 && error.body?.holder) {
        this.enterView({ kind: 'held', holder: error.body.holder });
      } else {
        this.enterView({ kind: 'error', message: error.message });
      }
      return;
    }
    this.hideAlert();
    this.enterEdit();
  }

  // The lease's ttl, on the server's clock alone: the movie's lock says
  // when the lease was taken, and the lease when it expires. (The browser's
  // own clock may be minutes off.) Without the lock, the browser's clock
  // has to do, within bounds.
  async leaseTtl(answer) {
    try {
      const { lock } = await getMovie(this.id);
      if (lock && lock.kind === 'analysis' && answer.expires_at_ms > lock.started_at_ms) {
        this.leaseTakenAt = lock.started_at_ms;
        return answer.expires_at_ms - lock.started_at_ms;
      }
    } catch {
      // Below.
    }
    return Math.min(15 * 60000, Math.max(5000, answer.expires_at_ms - Date.now()));
  }

  // The next heartbeat, a third of the ttl away (at most a minute), and the
  // local deadline past which the page stops editing if no heartbeat has
  // come back since `sentAt` (a heartbeat's or the acquisition's send).
  armLease(sentAt) {
    const lifeMs = Math.max(1000, this.ttlMs);
    this.lease.deadline = sentAt + lifeMs - Math.min(1000, lifeMs / 10);
    this.scheduleHeartbeat(Math.min(HEARTBEAT_MAX_MS, Math.max(500, lifeMs / 3)));
  }

  scheduleHeartbeat(ms) {
    window.clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = window.setTimeout(() => this.heartbeat(), ms);
  }

  async heartbeat() {
    if (!this.lease || this.stopped) return;
    const { id } = this.lease;
    const sentAt = performance.now();
    try {
      await heartbeatAnalysis(this.id, id);
      if (!this.lease || this.lease.id !== id) return;
      this.armLease(sentAt);
    } catch (error) {
      if (!this.lease || this.lease.id !== id || this.stopped) return;
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      if (error instanceof ApiError && error.status === 409) {
        await this.leaseLost();
        return;
      }
      // No answer: try again soon, and stop editing once the lease may be gone.
      if (performance.now() >= this.lease.deadline) {
        await this.leaseLost('unreachable');
        return;
      }
      this.scheduleHeartbeat(HEARTBEAT_RETRY_MS);
    }
  }

  // The lease is no longer ours: find out why, and stop editing at once.
  async leaseLost(cause = null) {
    // On the server's clock: a break of this lease is recorded after it was taken.
    const since = this.leaseTakenAt || 0;
    this.lease = null;
    window.clearTimeout(this.heartbeatTimer);
    this.enterView({ kind: 'lost', why: 'Checking why…' });
    let why = 'Your editing lease expired: this page could not renew it in time.';
    if (cause === 'unreachable') {
      why = 'The server could not be reached to renew your editing lease, so editing ' +
        'stopped before the lease could run out.';
    } else {
      try {
        const movie = (await pollMovie(this.id)).data;
        this.movie = movie;
        this.etag = null;
        const lock = movie.lock;
        if (lock && lock.kind === 'tracing') {
          why = `A trace replaced your editing lease (started by ${lock.user_display_name}).`;
        } else if (lock && lock.kind === 'analysis') {
          why = lock.user_display_name === this.user.display_name
            ? 'You took this movie in another tab or window; edit it there.'
            : `Your editing lease expired and ${lock.user_display_name} has taken the movie ` +
              `(since ${formatSince(lock.started_at_ms)}).`;
        } else {
          const audit = await getAudit(this.id);
          const broken = audit.filter((e) => e.event === 'movie.analysis.broken' &&
            e.at_ms >= since).pop();
          if (broken) why = `An administrator, ${broken.user_display_name}, broke your lease.`;
        }
      } catch {
        // Keep the general reason.
      }
    }
    if (this.stopped) return;
    this.showAlert(`You are no longer editing this movie. ${why} Your earlier changes ` +
      'were saved; a change made since was not.');
    this.showMovie();
    this.enterView({ kind: 'lost', why });
  }

  enterEdit() {
    this.mode = 'edit';
    this.viewReason = null;
    this.showBanner();
    this.showPanel();
  }

  enterView(reason) {
    this.mode = 'view';
    this.viewReason = reason;
    this.showBanner();
    this.showPanel();
  }

  showBanner() {
    const b = this.banner;
    b.dataset.mode = this.mode;
    const m = this.movie;
    if (this.mode === 'edit') {
      b.dataset.kind = 'editing';
      b.replaceChildren(icon('movie', 18), h('span', {},
        h('strong', { text: 'You are editing this movie. ' }),
        'Others can watch but not change it until you leave this page.'));
      return;
    }
    const reason = this.viewReason || { kind: 'status' };
    b.dataset.kind = reason.kind;
    const actions = [];
    let text;
    if (reason.kind === 'held') {
      const { holder } = reason;
      text = [h('strong', { text: 'View only. ' }),
        `${holder.user_display_name} is editing this movie (since `,
        h('time', { datetime: new Date(holder.started_at_ms).toISOString(),
          title: formatWallTime(holder.started_at_ms), text: formatSince(holder.started_at_ms) }),
        '). You can step through the frames, play and download it; editing is off until ' +
        `${holder.user_display_name} leaves. This page offers it to you as soon as the movie ` +
        'is free.'];
      if (this.user.admin) {
        actions.push(h('button', { type: 'button', class: 'button button-small button-danger',
          id: 'break-lock', on: { click: (e) => this.breakLock(e.currentTarget) } },
        h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Break lock'));
      }
    } else if (reason.kind === 'free' || reason.kind === 'lost' || reason.kind === 'error') {
      const free = EDITABLE.has(m.status) && !m.lock;
      text = [h('strong', { text: 'View only. ' }),
        reason.kind === 'error' ? `${reason.message} ` : '',
        free ? 'Nobody is editing this movie now.' : 'Someone else has this movie.'];
      if (free) {
        actions.push(h('button', { type: 'button', class: 'button button-small button-primary',
          id: 'edit-movie', on: { click: (e) => this.editAgain(e.currentTarget) } },
        h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Edit this movie'));
      }
    } else if (reason.kind === 'tracing') {
      text = [h('strong', { text: 'View only while the trace runs. ' }),
        'You can still step through the frames, play and download the movie.'];
    } else {
      text = [h('strong', { text: 'View only. ' }),
        m.status === 'processing' ? 'The movie is still being read.' : `The movie is ${m.status}.`];
    }
    b.replaceChildren(icon('alert', 18), h('span', { class: 'banner-text' }, text));
    if (actions.length) b.append(h('span', { class: 'banner-actions' }, actions));
  }

  async editAgain(button) {
    setBusy(button, true);
    this.hideAlert();
    await this.acquire();
    if (button.isConnected) setBusy(button, false);
  }

  async breakLock(button) {
    setBusy(button, true);
    try {
      this.movie = await breakAnalysis(this.id);
      this.etag = null;
      this.showMovie();
      this.enterView({ kind: 'free' });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      this.showAlert(`Could not break the lock: ${error.message}`);
      if (button.isConnected) setBusy(button, false);
    }
  }

  // Leaving the page (closed, reloaded, another site): the release must
  // outlive it. A page kept in the back/forward cache takes the lease again
  // if it comes back (pageshow).
  leaveNow() {
    if (!this.lease) return;
    releaseAnalysisOnLeave(this.id, this.lease.id);
    this.lease = null;
    window.clearTimeout(this.heartbeatTimer);
    this.mode = 'view';
  }

  // ---- polling ----

  schedulePoll() {
    window.clearTimeout(this.pollTimer);
    if (this.stopped) return;
    const busy = BUSY.has(this.movie.status) || this.movie.status === 'processing';
    this.pollTimer = window.setTimeout(() => this.poll(), busy ? POLL_BUSY_MS : POLL_MS);
  }

  async poll() {
    if (this.stopped || this.polling) return;
    if (document.hidden) {
      this.schedulePoll();
      return;
    }
    this.polling = true;
    try {
      const answer = await pollMovie(this.id, this.etag);
      if (this.stopped) return;
      if (answer.changed) {
        const before = this.movie;
        this.movie = answer.data;
        this.etag = answer.etag;
        this.movieChanged(before);
      }
      this.hideStale();
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ApiError && error.status === 401) {
        this.goToSignIn();
        return;
      }
      if (error instanceof ApiError && error.status === 404) {
        this.stopped = true;
        this.lease = null;
        this.failed(error);
        return;
      }
      this.showStale(error);
    } finally {
      this.polling = false;
    }
    this.schedulePoll();
  }

  movieChanged(before) {
    const m = this.movie;
    if (this.setTitle) this.setTitle(`${m.name} · Analyze`);
    if (this.lease) {
      // The movie says someone else holds it, or nobody: ask the server now
      // rather than at the next heartbeat.
      const mine = m.lock && m.lock.kind === 'analysis' &&
        m.lock.user_display_name === this.user.display_name;
      if (!mine) this.heartbeat();
    } else if (this.mode === 'view') {
      const reason = this.reasonFromMovie();
      const traceEnded = BUSY.has(before.status) && !BUSY.has(m.status);
      if (traceEnded && this.startedTrace && reason.kind === 'free') {
        // This page traced it: it goes on editing.
        this.startedTrace = false;
        this.acquire();
      } else if (!(this.viewReason?.kind === 'lost' && reason.kind === 'free')) {
        this.enterView(reason);
      } else {
        this.showBanner();
      }
    }
    this.showMovie();
  }

  showStale(error) {
    const message = error.status === 0 ? 'Could not reach the server.' : error.message;
    this.staleNotice = this.staleNotice || h('div', { class: 'alert stale-alert',
      id: 'analyze-stale', role: 'alert' });
    this.staleNotice.replaceChildren(icon('alert', 18), h('span', {
      text: `${message} What you see may be out of date; trying again.`,
    }));
    if (!this.staleNotice.isConnected) this.banner.after(this.staleNotice);
  }

  hideStale() {
    this.staleNotice?.remove();
  }

  showAlert(text) {
    this.alert.replaceChildren(icon('alert', 18), h('span', { text }));
    this.alert.hidden = false;
  }

  hideAlert() {
    this.alert.hidden = true;
  }

  // ---- the panel: markers, clip, trace ----

  editing() {
    return this.mode === 'edit' && this.lease !== null;
  }

  showPanel() {
    const p = this.panel;
    const m = this.movie;
    const editable = this.editing();
    const probed = m.frame_count != null;
    p.element.dataset.editable = String(editable);
    // Markers.
    p.empty.hidden = m.markers.length > 0 || !editable;
    const count = p.element.querySelector('#markers-count');
    count.textContent = m.markers.length ? String(m.markers.length) : '';
    this.drawMarkerList(editable);
    // The clip: fields are refreshed unless the user is in one.
    if (probed) {
      const max = String(m.frame_count - 1);
      for (const input of [p.start, p.end]) input.max = max;
      p.every.max = String(m.frame_count);
      const setValue = (input, value) => {
        if (document.activeElement !== input && input.value !== String(value)) {
          input.value = String(value);
        }
      };
      setValue(p.start, m.trim.start_frame);
      setValue(p.end, m.trim.end_frame);
      setValue(p.every, m.capture_interval.every_frames);
      this.showSampled();
      this.viewer?.setTrim(m.trim);
    }
    for (const control of [p.start, p.end, p.every, p.setStart, p.setEnd]) {
      control.disabled = !editable || !probed;
    }
    // Trace.
    const why = this.traceBlocked();
    p.traceButton.disabled = why !== null;
    p.traceHint.textContent = why || `Traces ${this.sampledCount()} frames on the server; ` +
      'you may leave the page while it runs.';
    this.viewer?.setMarkers(m.markers, { editable, selectedId: this.selectedId });
  }

  traceBlocked() {
    const m = this.movie;
    if (BUSY.has(m.status)) return 'A trace is queued or running.';
    if (!this.editing()) return 'Only the browser editing the movie can trace it.';
    if (m.markers.length === 0) return 'Place at least one marker first.';
    const outside = m.markers.find((mk) => mk.frame < m.trim.start_frame ||
      mk.frame > m.trim.end_frame);
    if (outside) {
      return `${outside.label} is on frame ${outside.frame}, outside the clip ` +
        `(${m.trim.start_frame}–${m.trim.end_frame}).`;
    }
    return null;
  }

  sampledCount() {
    const m = this.movie;
    return sampledFrames(m.trim.start_frame, m.trim.end_frame, m.capture_interval.every_frames);
  }

  showSampled() {
    const p = this.panel;
    const start = Number(p.start.value);
    const end = Number(p.end.value);
    const every = Number(p.every.value);
    const n = sampledFrames(start, end, every);
    p.sampled.textContent = n > 0
      ? `${n} frame${n === 1 ? '' : 's'} will be traced: ${start}, ${
        n > 1 ? `${start + every}, …, ` : ''}${start + (n - 1) * every}.`
      : 'No frame is in this clip.';
  }

  drawMarkerList(editable) {
    const m = this.movie;
    const items = m.markers.map((marker, index) => {
      const selected = marker.id === this.selectedId;
      const name = h('input', {
        class: 'input input-small marker-name', value: marker.label, maxlength: '256',
        'aria-label': `Name of ${marker.label}`, disabled: !editable,
        on: { change: (e) => this.renameMarker(marker.id, e.target.value) },
      });
      const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      swatch.style.background = colourOf(index);
      return h('li', { 'data-marker-id': marker.id, class: selected ? 'is-selected' : null },
        swatch, name,
        h('button', { type: 'button', class: 'button button-small button-quiet',
          'aria-label': `Go to frame ${marker.frame}, where ${marker.label} is`,
          on: { click: () => { this.selectMarker(marker.id); this.viewer?.showFrame(marker.frame); } },
        }, `Frame ${marker.frame}`),
        h('button', { type: 'button', class: 'button button-small button-quiet remove-marker',
          'aria-label': `Delete ${marker.label}`, disabled: !editable,
          on: { click: () => this.deleteMarker(marker.id) } }, '✕'));
    });
    // Keep the list (and the focus in it) when nothing it shows changed.
    const key = JSON.stringify([editable, this.selectedId, m.markers]);
    if (this.panel.list.dataset.key === key) return;
    const focusedName = document.activeElement?.closest?.('[data-marker-id]')?.dataset.markerId;
    if (focusedName && document.activeElement.classList.contains('marker-name')) return;
    this.panel.list.dataset.key = key;
    this.panel.list.replaceChildren(...items);
  }

  frameChanged(n) {
    this.frame = n;
    this.results?.markFrame(n);
  }

  selectMarker(id) {
    this.selectedId = id;
    this.showPanel();
  }

  placeMarker(x, y, frame) {
    const m = this.movie;
    if (m.markers.length >= MARKERS_MAX) {
      this.showAlert(`A movie has at most ${MARKERS_MAX} markers.`);
      return;
    }
    const { id, label } = nextMarkerId(m.markers);
    this.selectedId = id;
    this.saveMarkers([...m.markers, { id, label, frame, x, y }]);
  }

  moveMarker(id, x, y, frame) {
    this.saveMarkers(this.movie.markers.map((mk) => (mk.id === id ? { ...mk, x, y, frame } : mk)));
  }

  renameMarker(id, label) {
    const trimmed = label.trim();
    const marker = this.movie.markers.find((mk) => mk.id === id);
    if (!marker || trimmed === marker.label) return;
    if (trimmed === '') {
      this.showAlert('A marker needs a name.');
      this.panel.list.dataset.key = '';
      this.showPanel();
      return;
    }
    this.saveMarkers(this.movie.markers.map((mk) => (mk.id === id ? { ...mk, label: trimmed }
      : mk)));
  }

  deleteMarker(id) {
    if (this.selectedId === id) this.selectedId = null;
    this.saveMarkers(this.movie.markers.filter((mk) => mk.id !== id));
  }

  saveMarkers(markers) {
    // Shown at once; the server's answer (or refusal) then has the last word.
    this.movie = { ...this.movie, markers };
    this.showPanel();
    this.write((leaseId) => putMarkers(this.id, leaseId, markers));
  }

  setTrimFromFrame(which) {
    const p = this.panel;
    (which === 'start' ? p.start : p.end).value = String(this.frame);
    this.trimChanged();
  }

  clipError(text) {
    const p = this.panel;
    p.clipError.hidden = !text;
    p.clipError.textContent = text || '';
  }

  trimChanged() {
    const p = this.panel;
    const m = this.movie;
    const start = Number(p.start.value);
    const end = Number(p.end.value);
    this.showSampled();
    const last = m.frame_count - 1;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > last ||
      start > end) {
      this.clipError(`The clip must start and end on frames 0 to ${last}, the start first.`);
      return;
    }
    this.clipError(null);
    if (start === m.trim.start_frame && end === m.trim.end_frame) return;
    this.movie = { ...m, trim: { start_frame: start, end_frame: end } };
    this.showPanel();
    this.write((leaseId) => putTrim(this.id, leaseId, start, end));
  }

  intervalChanged() {
    const p = this.panel;
    const m = this.movie;
    const every = Number(p.every.value);
    this.showSampled();
    if (!Number.isInteger(every) || every < 1 || every > m.frame_count) {
      this.clipError(`Trace every 1 to ${m.frame_count} frames.`);
      return;
    }
    this.clipError(null);
    if (every === m.capture_interval.every_frames) return;
    this.movie = { ...m, capture_interval: { every_frames: every } };
    this.showPanel();
    this.write((leaseId) => putCaptureInterval(this.id, leaseId, every));
  }

  // Sends an edit with the lease ID, after the edits before it. The answer
  // is the movie as stored; a 409 means the lease is gone; any other refusal
  // puts back what the server has.
  write(call) {
    const p = this.panel;
    p.saved.textContent = 'Saving…';
    this.writes = this.writes.then(async () => {
      if (!this.lease || this.stopped) return;
      try {
        const movie = await call(this.lease.id);
        if (this.stopped) return;
        this.movie = movie;
        this.etag = null;
        p.saved.textContent = 'All changes saved.';
        this.showPanel();
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
        p.saved.textContent = '';
        if (error instanceof ApiError && error.status === 409) {
          await this.leaseLost();
          return;
        }
        this.showAlert(`Not saved: ${error.message}`);
        try {
          this.movie = (await pollMovie(this.id)).data;
          this.etag = null;
          this.showMovie();
        } catch {
          // The next poll puts it right.
        }
      }
    });
    return this.writes;
  }

  async trace() {
    const p = this.panel;
    if (this.traceBlocked()) return;
    setBusy(p.traceButton, true);
    await this.writes; // the edits first
    if (!this.lease) {
      setBusy(p.traceButton, false);
      return;
    }
    const leaseId = this.lease.id;
    try {
      await startTrace(this.id, leaseId);
      // The trace's lease replaced ours: nothing to heartbeat or release.
      this.lease = null;
      window.clearTimeout(this.heartbeatTimer);
      this.startedTrace = true;
      this.hideAlert();
      this.movie = (await pollMovie(this.id)).data;
      this.etag = null;
      this.enterView({ kind: 'tracing' });
      this.showMovie();
      this.progress.element.scrollIntoView({ block: 'nearest' });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      if (error instanceof ApiError && error.status === 409 && this.lease?.id === leaseId) {
        // Not the lease any more, or a trace runs: find out which.
        await this.leaseLost();
      } else {
        this.showAlert(`The trace did not start: ${error.message}`);
      }
    } finally {
      setBusy(p.traceButton, false);
      this.showPanel();
    }
  }

  // ---- results ----

  async loadResults() {
    const m = this.movie;
    const traced = m.status === 'traced';
    const historyWanted = traced || m.status === 'tracing failed';
    const key = `${m.status}:${m.frames_total}:${m.frames_done}`;
    if (!historyWanted) {
      if (!BUSY.has(m.status)) this.results.element.hidden = true;
      this.resultsKey = null;
      return;
    }
    if (key === this.resultsKey) return;
    this.resultsKey = key;
    try {
      const [rows, audit] = await Promise.all([traced ? allFrames(this.id) : [],
        getAudit(this.id)]);
      if (this.stopped || this.resultsKey !== key) return;
      this.results.context({ markers: this.movie.markers });
      if (traced) {
        this.results.show(rows, this.movie.markers, this.movie);
        this.viewer?.setTracks(rows, this.movie.markers);
      } else {
        this.results.element.replaceChildren(this.results.history);
        this.viewer?.setTracks([], this.movie.markers);
      }
      this.results.showHistory(audit);
      this.results.element.hidden = false;
      this.results.markFrame(this.frame, false);
    } catch (error) {
      if (this.stopped) return;
      this.resultsKey = null;
      if (error instanceof ApiError && error.status === 401) return this.goToSignIn();
      this.showAlert(`The results could not be loaded: ${error.message}`);
    }
  }

  // ---- keys ----

  key(event) {
    if (!this.viewer || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target.closest?.('input, textarea, select, [contenteditable="true"]')) return;
    if (event.key === 'ArrowRight' || event.key === 'ArrowLeft') {
      const step = (event.key === 'ArrowRight' ? 1 : -1) * (event.shiftKey ? 10 : 1);
      this.viewer.step(step);
      event.preventDefault();
    } else if (event.key === ' ' && !target.closest?.('button, a')) {
      this.viewer.togglePlay();
      event.preventDefault();
    }
  }
}

export function analyzeView(main, context) {
  const page = new AnalyzePage(main, context);
  page.start();
  return () => page.stop();
}
