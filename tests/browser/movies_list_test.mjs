// The movie list (/movies), in chromium against a real `leasehold serve`:
// the empty state, an upload through the file chooser with its progress
// (the upload throttled, so that there is some), the movie going from
// processing to ready with its length, size and owner, refusals (415 not
// a video, 413 over --upload-max) that add nothing, files dropped on the
// page uploaded one after another, each at the top of the list (the newest
// first), a second browser seeing a new movie at the top without a reload,
// an unchanged list answered 304 and nothing redrawn, locks (an analysis
// lease, a trace) with their holder and time and Delete disabled with the
// reason, a trace's frames as they are written, delete by the owner and
// not by another user, the stale and failed states when the server does
// not answer, no polling while the page is hidden, and the layout at laptop
// and phone sizes (screenshots in --screenshots).
//
// The movies are made with make_test_movie. The server runs no trace
// worker (--trace-workers 0), so that a trace waits `queued` until the test
// starts `leasehold trace-worker` beside it; its tracing lease lasts 3 s
// while queued, so that its starter may take a queued movie back (and fail
// its trace) within the test.
//
//   node tests/browser/movies_list_test.mjs --leasehold build/bin/leasehold \
//       --make-movie build/bin/make_test_movie --screenshots DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import {
  callApi, closePage, eventually as waitUntil, LAPTOP, launchBrowser, openPage, openSignedIn,
  parseArgs, PHONE, run, screenshot, Server, setPageHidden, signInOnPage, spawnTracked, Store, test,
  waitForText,
} from './harness.mjs';

const { bin, makeMovie, screenshots } = parseArgs();
if (!makeMovie) throw new Error('movies_list_test.mjs needs --make-movie (make_test_movie)');
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const queen = await store.addUser({
  name: 'queen', displayName: 'The Queen of Hearts', password: 'off with their heads', admin: true,
});
const UPLOAD_MAX_BYTES = 8 * 1024 * 1024;
const mediaDir = path.join(store.dir, 'media');
const server = await Server.start(store, [
  '--upload-max', `${UPLOAD_MAX_BYTES}`, '--trace-workers', '0', '--tracing-lease-ttl', '3s',
]);
const browser = await launchBrowser();

// A local time of day as the browser's locale says it: "14:03", "2:03 PM".
const TIME = String.raw`\d{1,2}:\d\d(?: [AP]M)?`;

// The page asks every 2 s after a change and at least every 8 s.
const SHOWN_WITHIN_MS = 12_000;
// A probe or a trace on this (shared, slow) machine.
const WORK_WITHIN_MS = 60_000;

// A synthetic movie in the store's directory: {file, frames, width, height,
// fps, x, y} (x, y: the spot on frame 0).
function movieFile(name, ...args) {
  const file = path.join(store.dir, name);
  const out = execFileSync(makeMovie, [file, ...args.map(String)], { encoding: 'utf8' });
  return { file, ...JSON.parse(out) };
}

const spot = movieFile('spot.avi', 600, 320, 240);
const short = movieFile('short clip.avi', 30);
const crown = movieFile('crown.avi', 50);

// ---- the page ----

async function moviesPage(user, viewport = LAPTOP) {
  const page = await openSignedIn(browser, server, user, '/movies', viewport);
  await waitForText(page.locator('#movies-freshness'), /Live/);
  return page;
}

const row = (page, name) => page.locator('tr[data-movie-id]', {
  has: page.locator('td[data-field="name"]', { hasText: new RegExp(`^${name}$`) }),
});
const cell = (page, name, field) => row(page, name).locator(`td[data-field="${field}"]`);
const deleteButton = (page, name) =>
  page.getByRole('button', { name: `Delete ${name}`, exact: true });
// The movies' names as the rows show them, top to bottom.
const shownNames = (page) =>
  page.locator('tr[data-movie-id] td[data-field="name"]').allTextContents();

// eventually() with this file's deadline.
function eventually(what, fn, timeoutMs = SHOWN_WITHIN_MS) {
  return waitUntil(what, fn, timeoutMs);
}

async function statusOf(page, name) {
  return row(page, name).getAttribute('data-status');
}

// Records, in the page, every text the uploads and the rows' statuses
// show, however briefly: window.seen.uploads and window.seen.statuses.
function recordWhatIsShown(page) {
  return page.evaluate(() => {
    window.seen = { uploads: [], statuses: [] };
    const record = () => {
      for (const text of document.querySelectorAll('.upload-text')) {
        const bar = text.closest('.upload').querySelector('.upload-bar');
        window.seen.uploads.push(`${text.textContent}|${bar.getAttribute('aria-valuenow')}`);
      }
      for (const tr of document.querySelectorAll('tr[data-movie-id]')) {
        const name = tr.querySelector('td[data-field="name"]').textContent;
        window.seen.statuses.push(`${name}:${tr.dataset.status}`);
      }
    };
    new MutationObserver(record).observe(document.getElementById('main'), {
      subtree: true, childList: true, characterData: true, attributes: true,
    });
  });
}

// Chooses `files` with the "Upload a movie" button's file chooser.
async function chooseFiles(page, files) {
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Upload a movie' }).click(),
  ]);
  assert.ok(chooser.isMultiple(), 'several files may be chosen');
  await chooser.setFiles(files);
}

async function movieId(page, name) {
  return row(page, name).getAttribute('data-movie-id');
}

// Takes the movie's analysis lease as the page's user: its lease ID.
async function takeLease(page, id) {
  const taken = await callApi(page, 'POST', `/api/movies/${id}/analysis-lease`, {});
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  return taken.body.lease_id;
}

async function releaseLease(page, id, leaseId) {
  const released = await callApi(page, 'DELETE', `/api/movies/${id}/analysis-lease`,
    { lease_id: leaseId });
  assert.equal(released.status, 204, JSON.stringify(released.body));
}

// Starts a trace of one marker on the spot, as the Analyze page would.
async function startTrace(page, id, movie) {
  const leaseId = await takeLease(page, id);
  const marked = await callApi(page, 'PUT', `/api/movies/${id}/markers`, {
    lease_id: leaseId,
    markers: [{ id: 'm1', label: 'spot', frame: 0, x: movie.x, y: movie.y }],
  });
  assert.equal(marked.status, 200, JSON.stringify(marked.body));
  const traced = await callApi(page, 'POST', `/api/movies/${id}/trace`, { lease_id: leaseId });
  assert.equal(traced.status, 202, JSON.stringify(traced.body));
}

// Checks a person would otherwise make by eye: nothing wider than the
// screen, and controls large enough to tap on a phone.
async function checkLayout(page, viewport) {
  const issues = await page.evaluate(({ width, phone }) => {
    const found = [];
    if (document.documentElement.scrollWidth > width) {
      found.push(`the page is ${document.documentElement.scrollWidth}px wide`);
    }
    for (const e of document.querySelectorAll('main button, main a.button, main .tag, main td')) {
      if (e.offsetParent === null) continue;
      const r = e.getBoundingClientRect();
      const name = e.getAttribute('aria-label') || e.textContent.trim();
      if (r.right > width || r.left < 0) found.push(`${name} is off screen`);
      if (phone && e.matches('button, a.button') && r.height < 40) {
        found.push(`${name} is ${r.height}px tall`);
      }
    }
    return found;
  }, { width: viewport.width, phone: viewport === PHONE });
  assert.deepEqual(issues, [], `layout at ${viewport.width}x${viewport.height}`);
}

// ---- the cases ----

test('with no movies the page says how to add one', async () => {
  const page = await moviesPage(alice);
  await waitForText(page.locator('.table-area'), /No movies yet/);
  await waitForText(page.locator('.table-area'), /drag a video file onto this page/);
  assert.ok(await page.getByRole('button', { name: 'Upload a movie' }).isVisible());
  await screenshot(page, screenshots, 'movies-empty-laptop');
  await closePage(page);
});

test('an upload shows its progress, then the movie processing, then ready', async () => {
  const page = await moviesPage(alice);
  await recordWhatIsShown(page);
  // 1.5 MB/s, so that 4.5 MB takes long enough to show a bar going up.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1_500_000,
  });
  await chooseFiles(page, spot.file);
  const upload = page.locator('.upload');
  await waitForText(upload.locator('.upload-name'), /^spot\.avi$/);
  await eventually('the bar is partly filled', async () => {
    const now = Number(await upload.locator('.upload-bar').getAttribute('aria-valuenow'));
    return now > 10 && now < 90;
  });
  await screenshot(page, screenshots, 'movies-uploading-laptop');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1,
  });
  await eventually('the movie is ready', async () => (await statusOf(page, 'spot')) === 'ready',
    WORK_WITHIN_MS);
  await upload.waitFor({ state: 'detached' });
  const seen = await page.evaluate(() => window.seen);
  assert.ok(seen.uploads.some((s) => /^\d+\.\d of 4\.5 MB\|[1-9]\d?$/.test(s)),
    `the bytes sent were shown: ${seen.uploads.slice(0, 5)}`);
  assert.ok(seen.statuses.includes('spot:processing'), 'it was shown processing first');
  await waitForText(cell(page, 'spot', 'length'), /^0:24600 frames at 25 fps$/);
  await waitForText(cell(page, 'spot', 'size'), /^320×240$/);
  await waitForText(cell(page, 'spot', 'owner'), /^Alice Liddell$/);
  await waitForText(cell(page, 'spot', 'lock'), /^—$/);
  assert.equal(await cell(page, 'spot', 'name').locator('a').getAttribute('href'),
    `/movies/${await movieId(page, 'spot')}`);
  const download = row(page, 'spot').getByRole('link', { name: 'Download spot' });
  assert.equal(await download.getAttribute('href'),
    `/api/movies/${await movieId(page, 'spot')}/video`);
  assert.equal(await download.getAttribute('download'), 'spot');
  await closePage(page);
});

test('another browser sees a new movie appear without a reload', async () => {
  const watcher = await moviesPage(queen);
  await row(watcher, 'spot').waitFor();
  let documents = 0;
  watcher.on('request', (request) => {
    if (request.resourceType() === 'document') documents += 1;
  });
  const page = await moviesPage(alice);
  await page.locator('#movie-file').setInputFiles(short.file);
  await eventually('the other browser shows it ready',
    async () => (await statusOf(watcher, 'short clip')) === 'ready', WORK_WITHIN_MS);
  await waitForText(cell(watcher, 'short clip', 'owner'), /^Alice Liddell$/);
  assert.deepEqual(await shownNames(watcher), ['short clip', 'spot'], 'the newest first');
  assert.equal(documents, 0, 'the page was not reloaded');
  await closePage(page);
  await closePage(watcher);
});

test('an unchanged list is answered 304 and nothing is redrawn', async () => {
  const page = await moviesPage(alice);
  await row(page, 'short clip').waitFor();
  await waitForText(cell(page, 'short clip', 'owner'), /Alice/);
  const answers = [];
  page.on('response', (response) => {
    if (new URL(response.url()).pathname === '/api/movies') answers.push(response.status());
  });
  await eventually('one 304', async () => answers.includes(304));
  await page.evaluate(() => {
    window.redrawn = 0;
    new MutationObserver((records) => (window.redrawn += records.length))
      .observe(document.getElementById('movies'), {
        subtree: true, childList: true, characterData: true, attributes: true,
      });
  });
  const before = answers.length;
  // 4 s, then 8 s apart by now: the page backs off while nothing changes.
  await eventually('two more 304s', async () =>
    answers.slice(before).filter((s) => s === 304).length >= 2, 20_000);
  assert.equal(await page.evaluate(() => window.redrawn), 0, 'the table was redrawn');
  await closePage(page);
});

test('a file that is not a video is refused (415) and nothing is added', async () => {
  const page = await moviesPage(alice);
  await row(page, 'spot').waitFor();
  const rowsBefore = await page.locator('tr[data-movie-id]').count();
  await page.locator('#movie-file').setInputFiles({
    name: 'notes.mp4',
    mimeType: 'video/mp4',
    buffer: Buffer.from('not a movie at all\n'.repeat(50)),
  });
  const error = page.locator('.upload-error');
  await waitForText(error,
    /^This file is not a video the server can read\. Try MP4, MOV, AVI, MKV or WebM\.$/);
  assert.equal(await error.getAttribute('role'), 'alert');
  await screenshot(page, screenshots, 'movies-not-a-video-laptop');
  await page.waitForResponse((r) => new URL(r.url()).pathname === '/api/movies');
  assert.equal(await page.locator('tr[data-movie-id]').count(), rowsBefore, 'nothing added');
  await page.getByRole('button', { name: 'Dismiss the error for notes.mp4' }).click();
  await page.locator('.upload').waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement.id), 'upload-button');
  await closePage(page);
});

test('a file over --upload-max is refused (413) with the server\'s limit', async () => {
  const page = await moviesPage(alice);
  await row(page, 'spot').waitFor();
  const rowsBefore = await page.locator('tr[data-movie-id]').count();
  await page.locator('#movie-file').setInputFiles({
    name: 'huge.mp4', mimeType: 'video/mp4', buffer: Buffer.alloc(UPLOAD_MAX_BYTES + 1024 * 1024),
  });
  await waitForText(page.locator('.upload-error'),
    /^This file \(9\.4 MB\) is larger than the server accepts \(at most 8\.4 MB\)\.$/, 15_000);
  assert.equal(await page.locator('tr[data-movie-id]').count(), rowsBefore, 'nothing added');
  await closePage(page);
});

test('files dropped on the page are uploaded one after another', async () => {
  const page = await moviesPage(alice);
  await row(page, 'spot').waitFor();
  await recordWhatIsShown(page);
  const bytes = readFileSync(short.file).toString('base64');
  // What the browser sends when files are dragged from the desktop and
  // dropped anywhere on the page.
  const drag = (type) => page.evaluate(({ type, bytes }) => {
    const data = new DataTransfer();
    const content = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
    for (const name of ['drop one.avi', 'drop two.avi']) {
      data.items.add(new File([content], name, { type: 'video/x-msvideo' }));
    }
    const target = document.querySelector('.lead');
    target.dispatchEvent(new DragEvent(type, {
      dataTransfer: data, bubbles: true, cancelable: true,
    }));
  }, { type, bytes });
  await drag('dragenter');
  assert.ok(await page.locator('.drop-overlay').isVisible(), 'the page shows it takes files');
  assert.match(await page.locator('#drop-zone').getAttribute('class'), /is-dragging/);
  await screenshot(page, screenshots, 'movies-drag-over-laptop');
  await drag('drop');
  assert.ok(await page.locator('.drop-overlay').isHidden());
  for (const name of ['drop one', 'drop two']) {
    await eventually(`${name} is ready`, async () => (await statusOf(page, name)) === 'ready',
      WORK_WITHIN_MS);
  }
  // The newest first: each upload went on top of the list.
  assert.deepEqual((await shownNames(page)).slice(0, 2), ['drop two', 'drop one']);
  // The second waited for the first.
  const uploads = await page.evaluate(() => window.seen.uploads);
  assert.ok(uploads.some((s) => s.startsWith('Waiting|')), `one waited: ${uploads.slice(0, 5)}`);
  for (const name of ['drop one', 'drop two']) {
    const id = await movieId(page, name);
    assert.equal((await callApi(page, 'DELETE', `/api/movies/${id}`)).status, 202);
  }
  for (const name of ['drop one', 'drop two']) {
    await row(page, name).waitFor({ state: 'detached', timeout: WORK_WITHIN_MS });
  }
  await closePage(page);
});

test('a movie being edited shows who holds it, and Delete says why it cannot', async () => {
  const page = await moviesPage(alice);
  const id = await movieId(page, 'spot');
  const leaseId = await takeLease(page, id);
  const watcher = await moviesPage(queen);
  const lock = cell(watcher, 'spot', 'lock');
  await waitForText(lock, new RegExp(`^Editing: Alice Liddell since ${TIME}$`), SHOWN_WITHIN_MS);
  assert.match(await lock.getAttribute('title'), /^Editing by Alice Liddell since .*\d{4}/);
  // An admin may delete any movie, but not one somebody holds.
  const remove = deleteButton(watcher, 'spot');
  await waitForText(cell(watcher, 'spot', 'actions'), /Delete/);
  assert.equal(await remove.getAttribute('aria-disabled'), 'true');
  assert.equal(await remove.getAttribute('title'),
    'Alice Liddell is editing it; it can be deleted once they close it.');
  const reasonId = await remove.getAttribute('aria-describedby');
  assert.match(await watcher.locator(`[id="${reasonId}"]`).textContent(),
    /Alice Liddell is editing/);
  // Playwright takes aria-disabled for disabled: a click forced through does nothing.
  await remove.click({ force: true });
  assert.equal(await watcher.locator('.confirm-delete').count(), 0, 'it does not ask');
  await releaseLease(page, id, leaseId);
  await eventually('the lock goes', async () =>
    (await remove.getAttribute('aria-disabled')) === null);
  await waitForText(lock, /^—$/);
  await closePage(watcher);
  await closePage(page);
});

let worker = null;

test('a trace shows its holder, then its frames as they are written', async () => {
  const page = await moviesPage(alice);
  await chooseFiles(page, crown.file);
  const queenPage = await moviesPage(queen);
  await eventually('crown is ready', async () => (await statusOf(page, 'crown')) === 'ready',
    WORK_WITHIN_MS);

  // short clip: a trace queued, then taken back by its starter once its
  // lease lapsed, which fails it.
  const shortId = await movieId(page, 'short clip');
  await startTrace(page, shortId, short);
  await waitForText(cell(page, 'short clip', 'status'), /^Queued$/, SHOWN_WITHIN_MS);
  await waitForText(cell(page, 'short clip', 'lock'), /^Tracing: Alice Liddell since/);
  let takenBack = null;
  await eventually('the queued trace can be taken back', async () => {
    const taken = await callApi(page, 'POST', `/api/movies/${shortId}/analysis-lease`, {});
    if (taken.status === 200) takenBack = taken.body.lease_id;
    return taken.status === 200;
  }, 15_000);
  await releaseLease(page, shortId, takenBack);
  await waitForText(cell(page, 'short clip', 'status'),
    /^Tracing failedThe trace was cancelled: .*started it\.$/,
    SHOWN_WITHIN_MS);

  // crown: the queen edits it.
  const crownId = await movieId(page, 'crown');
  const queenLease = await takeLease(queenPage, crownId);

  // spot: traced by a worker, paused while frames are written so that the
  // page can be seen mid-trace.
  const spotId = await movieId(page, 'spot');
  await startTrace(page, spotId, spot);
  await waitForText(cell(page, 'spot', 'status'), /^Queued$/, SHOWN_WITHIN_MS);
  // Signed in before the worker is paused: a sign-in writes to the store,
  // which a worker paused mid-write may hold.
  const phone = await moviesPage(queen, PHONE);
  worker = spawnTracked(bin, ['--store', store.uri, 'trace-worker', '--media-dir', mediaDir,
    '--trace-workers', '1']);
  await eventually('frames are written', async () => {
    const movie = await page.request.get(server.url(`/api/movies/${spotId}`));
    const { status, frames_done: done } = await movie.json();
    return status === 'tracing' && done > 0;
  }, WORK_WITHIN_MS);
  worker.kill('SIGSTOP');
  try {
    await waitForText(cell(page, 'spot', 'status'), /^Tracing\d+ \/ 600 frames$/, SHOWN_WITHIN_MS);
    await waitForText(cell(page, 'spot', 'lock'),
      new RegExp(`^Tracing: Alice Liddell since ${TIME}$`));
    await waitForText(cell(page, 'crown', 'lock'), /^Editing: The Queen of Hearts since/);
    await checkLayout(page, LAPTOP);
    await screenshot(page, screenshots, 'movies-list-laptop');
    await waitForText(cell(phone, 'spot', 'status'), /^Tracing\d+ \/ 600 frames$/);
    await waitForText(cell(phone, 'crown', 'owner'), /Alice/);
    await checkLayout(phone, PHONE);
    await screenshot(phone, screenshots, 'movies-list-phone');
    await closePage(phone);
  } finally {
    worker.kill('SIGCONT');
  }
  await eventually('spot is traced', async () => (await statusOf(page, 'spot')) === 'traced',
    WORK_WITHIN_MS);
  await waitForText(cell(page, 'spot', 'lock'), /^—$/, SHOWN_WITHIN_MS);
  await releaseLease(queenPage, crownId, queenLease);
  await closePage(queenPage);
  await closePage(page);
});

test('its owner deletes a movie; another user may not', async () => {
  const queenPage = await moviesPage(queen);
  await chooseFiles(queenPage, { name: 'royal.avi', mimeType: 'video/x-msvideo',
    buffer: readFileSync(short.file) });
  await eventually('royal is ready', async () => (await statusOf(queenPage, 'royal')) === 'ready',
    WORK_WITHIN_MS);
  await closePage(queenPage);

  const page = await moviesPage(alice);
  await waitForText(cell(page, 'royal', 'owner'), /^The Queen of Hearts$/);
  const notHers = deleteButton(page, 'royal');
  assert.equal(await notHers.getAttribute('aria-disabled'), 'true');
  assert.equal(await notHers.getAttribute('title'),
    'Only The Queen of Hearts (its owner) or an admin can delete it.');

  await waitForText(cell(page, 'short clip', 'owner'), /^Alice Liddell$/);
  await deleteButton(page, 'short clip').click();
  await waitForText(cell(page, 'short clip', 'actions'), /Delete short clip\?/);
  assert.equal(await page.evaluate(() => document.activeElement.className),
    'button button-danger confirm-delete button-small');
  await screenshot(page, screenshots, 'movies-confirm-delete-laptop');
  await page.getByRole('button', { name: 'Cancel deleting short clip' }).click();
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')),
    'Delete short clip');
  await deleteButton(page, 'short clip').click();
  await page.locator('.confirm-delete').click();
  await row(page, 'short clip').waitFor({ state: 'detached', timeout: WORK_WITHIN_MS });
  assert.equal(await page.evaluate(() => document.activeElement.id), 'movies-title');
  const listed = await callApi(page, 'GET', '/api/movies');
  assert.ok(!listed.body.some((m) => m.name === 'short clip'), 'removed');
  await closePage(page);
});

test('the page says when the server stops answering, and recovers', async () => {
  const page = await moviesPage(alice);
  await row(page, 'spot').waitFor();
  await page.route('**/api/movies**', (route) => route.abort('connectionrefused'));
  const stale = page.locator('#movies-stale');
  await waitForText(stale, /Could not reach the server/, SHOWN_WITHIN_MS);
  await waitForText(page.locator('#movies-freshness'), /Updated .* ago/, SHOWN_WITHIN_MS);
  assert.equal(await row(page, 'spot').count(), 1, 'the last list stays');
  await screenshot(page, screenshots, 'movies-stale-laptop');
  await page.unroute('**/api/movies**');
  await stale.getByRole('button', { name: 'Try again now' }).click();
  await waitForText(page.locator('#movies-freshness'), /Live/, SHOWN_WITHIN_MS);
  assert.ok(await stale.isHidden());
  // The requests refused above are this test's doing, not the page's fault.
  const refused = (p) => /\/api\/movies\S* net::ERR_CONNECTION_REFUSED$/.test(p);
  assert.ok(page.problems.some(refused));
  page.problems.splice(0, page.problems.length, ...page.problems.filter((p) => !refused(p)));
  await closePage(page);
});

test('a list that cannot be loaded says so and offers to try again', async () => {
  const page = await openPage(browser);
  await page.goto(server.url('/signin?next=%2Fmovies'));
  await page.route('**/api/movies**', (route) => route.fulfill({
    status: 503, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 'unavailable', message: 'the store does not answer' } }),
  }));
  await signInOnPage(page, alice);
  const state = page.locator('.table-area .state-error');
  await waitForText(state, /The movies could not be loaded/);
  await waitForText(state, /The store does not answer\./);
  await screenshot(page, screenshots, 'movies-load-failed-laptop');
  await page.unroute('**/api/movies**');
  await page.getByRole('button', { name: 'Try again now' }).click();
  await row(page, 'spot').waitFor();
  await closePage(page);
});

test('the page does not ask the server while it is hidden', async () => {
  const page = await moviesPage(alice);
  let asked = 0;
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/movies') asked += 1;
  });
  const setHidden = (hidden) => setPageHidden(page, hidden);
  await eventually('it polls while visible', async () => asked >= 2);
  await setHidden(true);
  // A poll in flight when the page was hidden may still finish; then none.
  await page.waitForTimeout(500);
  const whenHidden = asked;
  await page.waitForTimeout(4500);
  assert.equal(asked, whenHidden, 'no request while hidden');
  await setHidden(false);
  await eventually('it polls again once visible', async () => asked > whenHidden);
  await closePage(page);
});

await run({
  after: async () => {
    await browser.close();
    if (worker && worker.exitCode === null) {
      worker.kill('SIGTERM');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
    await server.stop();
    store.remove();
  },
});
