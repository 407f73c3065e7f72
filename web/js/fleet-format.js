// How the Fleet page says times, counts and rates, and how it knows the
// server's time. Pure functions and one small class; no DOM.

const numberFormat = new Intl.NumberFormat('en');
const rateFormat = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

export function formatCount(n) {
  return numberFormat.format(n);
}

// "1 connection", "10,001 connections".
export function countOf(n, noun, plural = `${noun}s`) {
  return `${formatCount(n)} ${n === 1 ? noun : plural}`;
}

// 12.5 -> "12.5/s"; null (not known yet) -> "—".
export function formatRate(perSecond) {
  if (perSecond == null) return '—';
  return `${rateFormat.format(perSecond)}/s`;
}

// A span of time, rounded up to whole seconds below a minute: "7 s",
// "3 min", "2 h".
export function formatSpan(ms) {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

// "12 s ago", "just now".
export function formatAgo(ms) {
  if (ms < 1000) return 'just now';
  return `${formatSpan(ms)} ago`;
}

// A wall time (Unix ms) as local date and time, for tooltips.
export function formatWallTime(ms) {
  return new Date(ms).toLocaleString();
}

// The server's wall clock as this page estimates it: each answer carries the
// server's now_ms, taken while the request was in flight, so it is matched
// with the middle of the round trip on this page's monotonic clock. The
// browser's own wall clock is never used: it may be minutes off.
export class ServerClock {
  #offsetMs = null;

  // now_ms from an answer to a request sent at `sentAt` and answered at
  // `answeredAt` (performance.now() values).
  sync(nowMs, sentAt, answeredAt) {
    this.#offsetMs = nowMs - (sentAt + answeredAt) / 2;
  }

  get known() {
    return this.#offsetMs !== null;
  }

  // The server's wall time now, in Unix ms. REQUIRES: known.
  now() {
    return performance.now() + this.#offsetMs;
  }
}

// A connection's lease, as it reads at the server's time `nowMs`:
// {kind: 'held'|'expired'|'released'|'never', text, remainingMs}.
export function leaseState(connection, nowMs) {
  const { owner, expires_at_ms: expiresAtMs } = connection;
  if (!owner && !expiresAtMs) return { kind: 'never', text: '—', remainingMs: 0 };
  if (!expiresAtMs) return { kind: 'released', text: 'released', remainingMs: 0 };
  const remainingMs = expiresAtMs - nowMs;
  if (remainingMs > 0) return { kind: 'held', text: `in ${formatSpan(remainingMs)}`, remainingMs };
  return { kind: 'expired', text: `expired ${formatAgo(-remainingMs)}`, remainingMs };
}

// The rate of a growing counter over the samples of recent polls: one
// history per key, each sample the counter at a server time. A counter that
// goes down (a connection removed and added again) starts over.
export class RateTracker {
  #windowMs;
  #minSpanMs;
  #samples = new Map(); // key -> [{t, value}]

  constructor({ windowMs = 10_000, minSpanMs = 1_500 } = {}) {
    this.#windowMs = windowMs;
    this.#minSpanMs = minSpanMs;
  }

  // A sample at time `t`; one no later than the last (the same read, seen
  // again) adds nothing.
  add(key, t, value) {
    let samples = this.#samples.get(key);
    if (samples && samples.length && t <= samples[samples.length - 1].t) return;
    if (!samples || (samples.length && value < samples[samples.length - 1].value)) {
      samples = [];
      this.#samples.set(key, samples);
    }
    samples.push({ t, value });
    while (samples.length > 2 && t - samples[1].t >= this.#windowMs) samples.shift();
  }

  // Per second over the window; null until the samples span long enough.
  rate(key) {
    const samples = this.#samples.get(key);
    if (!samples || samples.length < 2) return null;
    const first = samples[0];
    const last = samples[samples.length - 1];
    const spanMs = last.t - first.t;
    if (spanMs < this.#minSpanMs) return null;
    return ((last.value - first.value) * 1000) / spanMs;
  }

  // Forgets every key not in `keys`.
  keepOnly(keys) {
    for (const key of this.#samples.keys()) {
      if (!keys.has(key)) this.#samples.delete(key);
    }
  }
}

// What the fleet summary (GET /api/fleet/summary) says of the fleet's
// health, in a sentence and a line under it: {kind, title, detail}, kind
// one of
//   'down'      no live worker while connections are started: none streams
//   'degraded'  some started connections do not stream
//   'unknown'   a worker of an older build does not say how its streams go
//   'healthy'   every started connection streams
//   'idle'      nothing is started (no connection, or all stopped)
// A started connection is one that should stream (its desired state), not
// one that does: only the workers' figures say that.
export function fleetHealth(summary) {
  const c = summary.connections;
  const alive = summary.workers.filter((w) => w.alive).length;
  const gone = summary.workers.length - alive;
  const started = countOf(c.started, 'started connection');
  if (c.started === 0) {
    return {
      kind: 'idle',
      title: c.total === 0 ? 'No connections yet' : 'No connection is started',
      detail: c.total === 0
        ? 'Once one is added, a worker with room takes it within seconds.'
        : `All ${countOf(c.total, 'connection')} are stopped, so none should stream.`,
    };
  }
  if (alive === 0) {
    const title = c.started === 1
      ? 'No worker is running — the one started connection is not streaming'
      : `No worker is running — none of the ${formatCount(c.started)} started connections ` +
        'is streaming';
    return {
      kind: 'down',
      title,
      detail: gone === 0
        ? 'No worker has joined the fleet. Start one with leasehold worker; it takes ' +
          'started connections as soon as it joins.'
        : `${countOf(gone, 'worker')} ${gone === 1 ? 'has' : 'have'} left or died. Start one ` +
          'with leasehold worker; it takes started connections as soon as it joins.',
    };
  }
  if (!c.streams_known) {
    return {
      kind: 'unknown',
      title: `${formatCount(c.owned)} of ${started} held by live workers`,
      detail: 'A worker of an older build does not say how its connections stream, so this ' +
        'page cannot tell how many do.',
    };
  }
  if (c.not_streaming > 0) {
    const parts = [];
    if (c.reconnecting > 0) parts.push(`${formatCount(c.reconnecting)} reconnecting`);
    if (c.stalled > 0) parts.push(`${formatCount(c.stalled)} stalled`);
    if (c.erroring > 0) parts.push(`${formatCount(c.erroring)} erroring`);
    const free = c.started - c.owned;
    if (free > 0) parts.push(`${formatCount(free)} held by no live worker`);
    return {
      kind: 'degraded',
      title: `${formatCount(c.not_streaming)} of ${started} ` +
        `${c.not_streaming === 1 ? 'is' : 'are'} not streaming`,
      detail: parts.length ? `${parts.join(' · ')}.` : 'Their workers have not said why yet.',
    };
  }
  return {
    kind: 'healthy',
    title: c.started === 1
      ? 'The started connection is streaming'
      : `All ${formatCount(c.started)} started connections are streaming`,
    detail: `${countOf(alive, 'live worker')} ${alive === 1 ? 'holds' : 'hold'} ` +
      `${c.started === 1 ? 'it' : 'them'}.`,
  };
}
