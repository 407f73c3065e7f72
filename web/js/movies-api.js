// The movie tracing API (/api/movies/, docs/server.md "The movies API"), as
// the movie pages call it. Everything goes through api.js's exchange(),
// except the upload, which needs XMLHttpRequest for its progress (fetch
// cannot report bytes sent).
import {
  ApiError, errorFrom, exchange, failureWithoutAnswer, nextLink, poll, request,
} from './api.js';

export function moviePath(id) {
  return `/api/movies/${encodeURIComponent(id)}`;
}

// Where the browser finds what it shows as it is (never fetched as JSON).
export function videoUrl(id) {
  return `${moviePath(id)}/video`;
}

export function framesCsvUrl(id) {
  return `${moviePath(id)}/frames.csv`;
}

// Frame n as a JPEG: exact, whatever the container; kept by the browser.
export function frameImageUrl(id, n) {
  return `${moviePath(id)}/frames/${n}.jpg`;
}

// A page of `limit` movie summaries, the newest first, after the movie
// `after` ('' for the first page), polled with `etag`, the tag of the last
// answer to the same page, or null. Resolves {changed: false} while the
// page is as it was (304), else {changed: true, data: [summary], etag,
// nextAfter}: the `after` of the page that follows (from the Link header),
// '' on the last. ApiError 400 when `after` names no movie (it was removed
// since).
export async function pollMoviePage(after, limit, etag = null) {
  const params = new URLSearchParams({ order: 'newest', limit: String(limit) });
  if (after) params.set('after', after);
  const answer = await poll(`/api/movies?${params}`, etag);
  if (!answer.changed) return answer;
  const next = answer.next && new URL(answer.next, window.location.origin);
  return { ...answer, nextAfter: next?.searchParams.get('after') || '' };
}

// A movie, polled: {changed, data: movie, etag}.
export function pollMovie(id, etag = null) {
  return poll(moviePath(id), etag);
}

export function getMovie(id) {
  return request('GET', moviePath(id));
}

// Each frame's time: {frame_count, steps_us: [[count, step], ...]}
// (frame-times.js reads it). Kept by the browser: asked once a movie.
export function getFrameTimes(id) {
  return request('GET', `${moviePath(id)}/times`);
}

// Owner or admin: 202, the movie `deleting`; ApiError 403, 409 (locked).
export function removeMovie(id) {
  return request('DELETE', moviePath(id));
}

// Uploads `file` as a movie named `name`. onProgress(sent, total) is called
// as bytes go out. Returns {done, abort}: `done` resolves the movie created
// (`processing`) or rejects with an ApiError (413 too large, 415 not a
// video, 503 storage unavailable, 0 no answer, or code 'aborted').
export function uploadMovie(file, name, onProgress = () => {}) {
  const xhr = new XMLHttpRequest();
  const done = new Promise((resolve, reject) => {
    xhr.open('POST', `/api/movies?name=${encodeURIComponent(name)}`);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('Content-Type', file.type || 'application/octet-stream');
    xhr.responseType = 'text';
    xhr.upload.addEventListener('progress', (event) => {
      onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    });
    xhr.addEventListener('load', async () => {
      // The same reading of an answer as every other call: through a Response.
      const response = new Response(xhr.status === 204 ? null : xhr.responseText, {
        status: xhr.status,
        headers: { 'Content-Type': xhr.getResponseHeader('Content-Type') || '',
                   'Retry-After': xhr.getResponseHeader('Retry-After') || '',
                   'X-Request-Id': xhr.getResponseHeader('X-Request-Id') || '' },
      });
      if (!response.ok) {
        reject(await errorFrom(response));
        return;
      }
      try {
        resolve(JSON.parse(xhr.responseText));
      } catch {
        reject(new ApiError({
          status: xhr.status,
          code: 'bad_response',
          message: 'The server sent an answer this page does not understand. Reload.',
        }));
      }
    });
    xhr.addEventListener('error', () => reject(failureWithoutAnswer(new Error('network'))));
    xhr.addEventListener('timeout', () => {
      const timeout = new Error('timeout');
      timeout.name = 'TimeoutError';
      reject(failureWithoutAnswer(timeout));
    });
    xhr.addEventListener('abort', () => reject(new ApiError({
      status: 0, code: 'aborted', message: 'The upload was cancelled.',
    })));
    xhr.send(file);
  });
  return { done, abort: () => xhr.abort() };
}

// ---- the analysis lease: one browser edits a movie ----

// {lease_id, expires_at_ms}; ApiError 409 whose body.holder says who holds
// the movie ({kind, user_display_name, started_at_ms}).
export function acquireAnalysis(id) {
  return request('POST', `${moviePath(id)}/analysis-lease`, {});
}

export function heartbeatAnalysis(id, leaseId) {
  return request('POST', `${moviePath(id)}/analysis-lease/heartbeat`, { lease_id: leaseId });
}

export function releaseAnalysis(id, leaseId) {
  return request('DELETE', `${moviePath(id)}/analysis-lease`, { lease_id: leaseId });
}

// The release sent as the page goes away: it must outlive the page, so it
// is a keepalive request and nobody waits for its answer.
export function releaseAnalysisOnLeave(id, leaseId) {
  exchange('DELETE', `${moviePath(id)}/analysis-lease`, {
    body: { lease_id: leaseId }, keepalive: true,
  }).catch(() => {});
}

// Admins: ends whoever's analysis lease; the movie, unlocked.
export function breakAnalysis(id) {
  return request('POST', `${moviePath(id)}/analysis-lease/break`, {});
}

// ---- edits, each carrying the lease ID; each answers the movie ----

export function putMarkers(id, leaseId, markers) {
  return request('PUT', `${moviePath(id)}/markers`, { lease_id: leaseId, markers });
}

export function putTrim(id, leaseId, startFrame, endFrame) {
  return request('PUT', `${moviePath(id)}/trim`, {
    lease_id: leaseId, start_frame: startFrame, end_frame: endFrame,
  });
}

export function putCaptureInterval(id, leaseId, everyFrames) {
  return request('PUT', `${moviePath(id)}/capture-interval`, {
    lease_id: leaseId, every_frames: everyFrames,
  });
}

// {job_id, frames_total}; the analysis lease is gone (replaced by the trace's).
export function startTrace(id, leaseId) {
  return request('POST', `${moviePath(id)}/trace`, { lease_id: leaseId });
}

// ---- results ----

// Every frame row of the latest trace, following the pages.
export async function allFrames(id) {
  const rows = [];
  let path = `${moviePath(id)}/frames?limit=10000`;
  while (path) {
    const answer = await exchange('GET', path);
    rows.push(...answer.data);
    path = nextLink(answer.headers);
  }
  return rows;
}

// [{event, job_id, user_display_name, at_ms, summary}], oldest first.
export function getAudit(id) {
  return request('GET', `${moviePath(id)}/audit`);
}
