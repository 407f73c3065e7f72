// The one module that talks to the server. Every call goes through
// request(): JSON in and out, the session cookie sent (same origin only),
// writes sent as application/json, a deadline on every call. A call that does
// not succeed throws an ApiError whose message can be shown to a person as it
// is: the server's own message when it sent its error shape
// ({"error":{"code","message"}}), else one chosen here for the status.

const TIMEOUT_MS = 15000;

export class ApiError extends Error {
  // status: the HTTP status, or 0 when no answer came (network, timeout).
  // code: the server's error code ("unauthenticated", ...), or one of
  // "network", "timeout", "bad_response" for failures on this side.
  // retryAfterSeconds: from Retry-After (429, 503), else null.
  // body: the whole error answer, for what some errors carry beside it (a
  // 409 on a movie names its `holder`), else null.
  // requestId: the server's ID of the request (X-Request-Id), which leads
  // whoever runs the server to its log line, else null.
  constructor({ status, code, message, retryAfterSeconds = null, body = null, requestId = null }) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
    this.body = body;
    this.requestId = requestId;
  }
}

const STATUS_MESSAGES = {
  400: 'The server could not accept this request.',
  401: 'You are not signed in.',
  403: 'You do not have permission to do this.',
  404: 'Not found.',
  409: 'Someone else changed this at the same time. Reload and try again.',
  413: 'This is too large for the server to accept.',
  429: 'Too many requests. Wait a moment and try again.',
  503: 'The server is busy. Wait a moment and try again.',
};

function messageForStatus(status) {
  if (STATUS_MESSAGES[status]) return STATUS_MESSAGES[status];
  if (status >= 500) return `The server ran into a problem (HTTP ${status}). Try again later.`;
  return `The request failed (HTTP ${status}).`;
}

// Retry-After is either a number of seconds or an HTTP date.
export function parseRetryAfter(value, nowMs = Date.now()) {
  if (value == null || value.trim() === '') return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const dateMs = Date.parse(trimmed);
  if (Number.isNaN(dateMs)) return null;
  return Math.max(0, Math.ceil((dateMs - nowMs) / 1000));
}

// The server's messages are written for logs too ("wrong user name or
// password"); shown to a person, they start with a capital and end with a stop.
export function asSentence(text) {
  const trimmed = text.trim();
  if (trimmed === '') return trimmed;
  const capitalised = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?…]$/.test(capitalised) ? capitalised : `${capitalised}.`;
}

// The server's 503 for storage it cannot use now (its store, the movies'
// files on S3, the job queue: down, or refusing the server's credentials),
// whose message is fixed: it says nothing a person could act on but waiting,
// and the request's ID for whoever runs the server.
const STORAGE_UNAVAILABLE = /^storage unavailable\b/;

function storageUnavailable(requestId) {
  const request = requestId ? ` (request ${requestId})` : '';
  return `Storage is unavailable — try again later${request}.`;
}

export async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = messageForStatus(response.status);
  let body = null;
  const requestId = response.headers.get('X-Request-Id') || null;
  try {
    body = await response.json();
    const error = body && body.error;
    if (error && typeof error.message === 'string' && error.message.trim()) {
      message = asSentence(error.message);
      if (typeof error.code === 'string') code = error.code;
      if (response.status === 503 && STORAGE_UNAVAILABLE.test(error.message)) {
        message = storageUnavailable(requestId);
      }
    }
  } catch {
    // Not JSON (a proxy's error page, say): keep the message for the status.
  }
  return new ApiError({
    status: response.status,
    code,
    message,
    retryAfterSeconds: parseRetryAfter(response.headers.get('Retry-After')),
    body,
    requestId,
  });
}

export function failureWithoutAnswer(error) {
  if (error && error.name === 'TimeoutError') {
    return new ApiError({
      status: 0,
      code: 'timeout',
      message: 'The server did not answer in time. Check your connection and try again.',
    });
  }
  return new ApiError({
    status: 0,
    code: 'network',
    message: 'Could not reach the server. Check your connection and try again.',
  });
}

// Sends `method path` with `body` (any JSON value; none for reads) and
// returns the parsed JSON answer, or null for an answer without a body (204).
export async function request(method, path, body = undefined) {
  return (await exchange(method, path, { body })).data;
}

// request() with more said on both sides: `headers` to send (If-None-Match),
// `keepalive` (a request that outlives the page); returns {status, data,
// headers}, where a 304 is an answer too (data null).
export async function exchange(method, path, { body, headers: extra = {}, keepalive } = {}) {
  const headers = { Accept: 'application/json', ...extra };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (keepalive) init.keepalive = true;
  else init.signal = AbortSignal.timeout(TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw failureWithoutAnswer(error);
  }
  if (response.status === 304) return { status: 304, data: null, headers: response.headers };
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return { status: 204, data: null, headers: response.headers };
  try {
    const text = await response.text();
    return {
      status: response.status,
      data: text === '' ? null : JSON.parse(text),
      headers: response.headers,
    };
  } catch {
    throw new ApiError({
      status: response.status,
      code: 'bad_response',
      message: 'The server sent an answer this page does not understand. Reload and try again.',
    });
  }
}

// The "next" target of a Link header, or null.
export function nextLink(headers) {
  const link = headers.get('Link');
  const match = link && /<([^>]+)>\s*;\s*rel="next"/.exec(link);
  return match ? match[1] : null;
}

// A polled read, its tag sent in If-None-Match (fetch's cache is bypassed,
// so the 304 reaches this code rather than the body the browser kept):
// `etag` from the last answer, or null. Resolves {changed: false} while the
// answer is the same (304), else {changed: true, data, etag, next}.
export async function poll(path, etag) {
  const answer = await exchange('GET', path, { headers: etag ? { 'If-None-Match': etag } : {} });
  if (answer.status === 304) return { changed: false, headers: answer.headers };
  return {
    changed: true,
    data: answer.data,
    etag: answer.headers.get('ETag'),
    next: nextLink(answer.headers),
    headers: answer.headers,
  };
}

// The signed-in user: {name, display_name, admin}. ApiError 401 when there is
// no session.
export function getMe() {
  return request('GET', '/api/me');
}

// Starts a session (the server sets its cookie) and returns the user.
// ApiError 401 for a wrong name or password, 429 (with retryAfterSeconds)
// when there were too many failed attempts.
export function signIn(name, password) {
  return request('POST', '/api/session', { name, password });
}

// Ends the session.
export function signOut() {
  return request('DELETE', '/api/session');
}

// ---- The stream fleet (/api/fleet/, docs/server.md) ----

function connectionPath(id) {
  return `/api/fleet/connections/${encodeURIComponent(id)}`;
}

// A page of connections, polled: `query` holds limit, after, state
// ('STARTED' or 'STOPPED'), prefix and owner (each left out when empty);
// `etag` is the tag of the last answer to the same query, or null.
// Resolves {changed: false} while the page is as it was (304), else
// {changed: true, data: {connections: [{id, desired_state, ws_url, owner,
// expires_at_ms, last_seq, epoch, last_error, last_error_at_ms,
// heartbeat_at_ms, messages, reconnects, last_message_at_ms}], next_after},
// etag, readAtMs}, readAtMs the server's time when it read the page from the
// store (where reads are billed, a page is read again every few seconds at
// most: a 304 may say it was read again, unchanged). A page carries no
// clock: take it from listWorkers().
export async function pollConnectionPage(query, etag = null) {
  const params = new URLSearchParams();
  for (const name of ['limit', 'after', 'state', 'prefix', 'owner']) {
    if (query[name]) params.set(name, query[name]);
  }
  const answer = await poll(`/api/fleet/connections?${params}`, etag);
  answer.readAtMs = Number(answer.headers.get('Leasehold-Read-At-Ms')) || null;
  return answer;
}

// The fleet at a glance, polled: {changed, data: {connections: {total,
// started, stopped, counted_at_ms, owned, streaming, reconnecting, stalled,
// erroring, not_streaming, streams_known}, workers: [{id, alive, owned,
// capacity, streaming, reconnecting, stalled, erroring}], free: [{id,
// free_since_ms, last_error}], more_free}, etag}. No clock either.
export function pollFleetSummary(etag = null) {
  return poll('/api/fleet/summary', etag);
}

// {now_ms, workers: [{id, alive, owned, capacity, messages, messages_per_s,
// started_at_ms, updated_at_ms, expires_at_ms, heartbeat_at_ms,
// session_number, session_ttl_ms, streaming?, reconnecting?, stalled?,
// erroring?}]}, by id. now_ms is the server's clock: count leases down
// against it.
export function listWorkers() {
  return request('GET', '/api/fleet/workers');
}

// Admins only. {id, url, seq_field?, stopped?} -> the connection added.
// ApiError 400 whose message starts with the field it is about ("url: ..."),
// 409 when the ID is taken.
export function addConnection(connection) {
  return request('POST', '/api/fleet/connections', connection);
}

// Admins only: the connection after the change; ApiError 404 if it is gone.
export function startConnection(id) {
  return request('POST', `${connectionPath(id)}/start`);
}

export function stopConnection(id) {
  return request('POST', `${connectionPath(id)}/stop`);
}

export function removeConnection(id) {
  return request('DELETE', connectionPath(id));
}
