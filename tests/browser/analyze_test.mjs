// The Analyze page (/movies/{id}) with two signed-in users on a generated
// movie: Ada edits (markers, trim, interval, trace) while Bob watches,
// view-only, told who holds the movie; the trace's progress shows in both,
// with "safe to leave"; the results (tracks, plots, table, CSV) appear in
// both; Ada closes her tab and Bob then gets the movie; an admin breaks a
// lease, and a page whose heartbeats cannot get through stops editing
// before its lease can run out, and the lease goes to another. Every write
// the page sends carries the lease ID. Screenshots of the page while
// tracing and with its results, at laptop and phone sizes.
//
// The server runs no trace worker (--trace-workers 0): the trace waits,
// queued, until the test starts `leasehold trace-worker`, and the worker is
// paused (SIGSTOP) once it has traced some frames, so that the progress the
// pages show is seen between its ends, whatever the machine's speed.
//
//   node tests/browser/analyze_test.mjs --leasehold build/bin/leasehold \
//       --make-movie build/bin/make_test_movie --screenshots DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';

import {
  closePage, eventually, LAPTOP, launchBrowser, openPage, parseArgs, PHONE, run, screenshot,
  Server, signInOnPage, spawnTracked, Store, test, waitForText,
} from './harness.mjs';

const { bin, makeMovie, screenshots } = parseArgs();
assert.ok(makeMovie, 'give --make-movie BIN (make_test_movie)');

const LEASE_TTL = '3s';
const STEP_MS = 15_000; // a poll-driven change shows within this
const TRACE_MS = 60_000;

const ada = { name: 'ada', displayName: 'Ada Lovelace', password: 'ada-password-1' };
const bob = { name: 'bob', displayName: 'Bob Builder', password: 'bob-password-1' };
const cy = { name: 'cy', displayName: 'Cy Admin', password: 'cy-password-1', admin: true };

let store;
let server;
let browser;
let worker = null;
let movie; // {id, frames, width, height, x, y}

async function api(method, pathAndQuery, token, body, type = 'application/json') {
  const response = await fetch(server.url(pathAndQuery), {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': type },
    body,
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

async function tokenOf(user) {
  const out = await store.leasehold('user', 'token', user.name);
  assert.equal(out.code, 0, out.err);
  return JSON.parse(out.out).token;
}

// eventually() with this file's deadline.
function until(what, fn, timeoutMs = STEP_MS) {
  return eventually(what, fn, timeoutMs);
}

// A page of `user` on the movie's Analyze page, signed in through the
// sign-in page it is sent to; it records the writes it sends.
async function openAnalyze(user, viewport = LAPTOP) {
  const page = await openPage(browser, viewport);
  page.writes = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (request.method() !== 'GET' && url.pathname.startsWith('/api/movies/')) {
      page.writes.push({ method: request.method(), path: url.pathname,
        body: request.postData() || '' });
    }
  });
  await page.goto(server.url(`/movies/${movie.id}`));
  await page.waitForURL(/\/signin/);
  await signInOnPage(page, user);
  await page.waitForURL(new RegExp(`/movies/${movie.id}$`));
  await page.locator('#lease-banner[data-mode]').waitFor();
  return page;
}

function banner(page) {
  return page.locator('#lease-banner');
}

async function bannerMode(page) {
  return page.locator('#lease-banner').getAttribute('data-mode');
}

// Clicks on the frame at the frame pixel (x, y).
async function clickFrame(page, x, y) {
  const canvas = page.locator('.viewer-canvas');
  const box = await canvas.boundingBox();
  await canvas.click({ position: {
    x: ((x + 0.5) / movie.width) * box.width, y: ((y + 0.5) / movie.height) * box.height,
  } });
}

// Stops `child` (SIGSTOP) and lets it run 10 ms in every 500 until the
// returned interval is cleared: a trace then takes long enough on any
// machine for the pages to show it between its ends.
function throttled(child) {
  child.kill('SIGSTOP');
  return setInterval(() => {
    child.kill('SIGCONT');
    setTimeout(() => child.kill('SIGSTOP'), 10);
  }, 500);
}

async function progressNow(page) {
  return Number(await page.locator('#trace-progress [role=progressbar]')
    .getAttribute('aria-valuenow'));
}

test('set-up: two users, an admin and a generated movie, probed', async () => {
  store = await Store.create(bin);
  for (const user of [ada, bob, cy]) await store.addUser(user);
  server = await Server.start(store, ['--trace-workers', '0', '--analysis-lease-ttl', LEASE_TTL]);
  browser = await launchBrowser();
  const file = path.join(store.dir, 'spots.avi');
  const made = JSON.parse(execFileSync(makeMovie, [file, '240', '320', '240']).toString());
  const token = await tokenOf(ada);
  const uploaded = await api('POST', '/api/movies?name=Two%20spots', token, readFileSync(file),
    'video/x-msvideo');
  assert.equal(uploaded.status, 201, JSON.stringify(uploaded.json));
  movie = { id: uploaded.json.id, ...made };
  await until('the probe', async () =>
    (await api('GET', `/api/movies/${movie.id}`, token)).json.status === 'ready');
});

let adaPage;
let bobPage;

test('the first browser edits; the second is view-only, told who holds the movie', async () => {
  adaPage = await openAnalyze(ada);
  assert.equal(await bannerMode(adaPage), 'edit');
  await waitForText(banner(adaPage), /You are editing this movie/);
  bobPage = await openAnalyze(bob);
  assert.equal(await bannerMode(bobPage), 'view');
  await waitForText(banner(bobPage), /Ada Lovelace is editing this movie \(since \d/);
  assert.equal(await bobPage.locator('#break-lock').count(), 0, 'only admins may break');
  for (const selector of ['#trace-button', '#trim-start', '#trim-end', '#capture-every',
    '#trim-start-here']) {
    assert.ok(await bobPage.locator(selector).isDisabled(), `${selector} is disabled for Bob`);
  }
  assert.equal(await bobPage.locator('.viewer-canvas').getAttribute('data-editable'), 'false');
  // Bob can still step and see the frame number change.
  await bobPage.locator('.viewer-canvas').focus();
  await bobPage.keyboard.press('Shift+ArrowRight');
  await waitForText(bobPage.locator('.viewer-position'), /^Frame 10 \//);
  // And play it.
  await bobPage.getByRole('button', { name: 'Play' }).click();
  await until('frames to play', async () => {
    const text = await bobPage.locator('.viewer-position').innerText();
    return Number(/^Frame (\d+)/.exec(text)[1]) >= 15;
  });
  await bobPage.getByRole('button', { name: 'Pause' }).click();
});

test('markers, trim and interval are placed by the editor and seen by the viewer', async () => {
  const page = adaPage;
  await page.locator('.viewer-canvas').focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowLeft');
  await waitForText(page.locator('.viewer-position'), /^Frame 0 \//);
  await clickFrame(page, movie.x, movie.y);
  await page.locator('#marker-list [data-marker-id="p1"]').waitFor();
  await waitForText(page.locator('#save-state'), /All changes saved/);
  // A second marker, placed and then removed.
  await clickFrame(page, 20, 20);
  await page.locator('#marker-list [data-marker-id="p2"]').waitFor();
  await page.getByRole('button', { name: 'Delete Point 2' }).click();
  await until('p2 removed', async () =>
    (await page.locator('#marker-list [data-marker-id]').count()) === 1);
  await page.getByLabel('Name of Point 1').fill('Spot');
  await page.getByLabel('Name of Point 1').press('Enter');
  await page.locator('#trim-end').fill('200');
  await page.locator('#trim-end').press('Tab');
  await page.locator('#capture-every').fill('2');
  await page.locator('#capture-every').press('Tab');
  await waitForText(page.locator('#sampled-frames'), /^101 frames will be traced/);
  await waitForText(page.locator('#save-state'), /All changes saved/);
  // The viewer sees them within a poll.
  await until('Bob sees the marker', async () =>
    (await bobPage.locator('#marker-list [data-marker-id="p1"] input').count()) === 1 &&
    (await bobPage.locator('#marker-list [data-marker-id="p1"] input').inputValue()) === 'Spot');
  await until('Bob sees the trim', async () =>
    (await bobPage.locator('#trim-end').inputValue()) === '200');
  assert.ok(await bobPage.locator('#marker-list input').first().isDisabled());
});

test('the trace shows its progress and "safe to leave" in both pages', async () => {
  // Signed in before the worker is ever paused: a sign-in writes to the
  // store, and a paused worker may be holding SQLite's write lock.
  const phone = await openAnalyze(bob, PHONE);
  await adaPage.locator('#trace-button').click();
  for (const page of [adaPage, bobPage]) {
    await page.locator('#trace-progress').waitFor({ state: 'visible', timeout: STEP_MS });
    await waitForText(page.locator('#trace-progress-text'), /^Queued/, STEP_MS);
    await waitForText(page.locator('#safe-to-leave'), /safe to leave this page/);
    assert.ok(await page.locator('#trace-button').isDisabled());
  }
  await waitForText(banner(adaPage), /View only while the trace runs/);
  worker = spawnTracked(bin, ['--store', store.uri, 'trace-worker', '--media-dir',
    path.join(store.dir, 'media')]);
  const throttle = throttled(worker);
  const token = await tokenOf(bob);
  const seen = new Set();
  try {
    await until('the bar to move in both pages', async () => {
      for (const page of [adaPage, bobPage]) {
        seen.add(`${page === adaPage}:${await progressNow(page)}`);
      }
      const between = (who) => [...seen].some((v) => v.startsWith(`${who}:`) &&
        Number(v.split(':')[1]) > 0 && Number(v.split(':')[1]) < 101);
      return between(true) && between(false);
    }, TRACE_MS);
  } catch (error) {
    clearInterval(throttle);
    worker.kill('SIGCONT');
    const now = (await api('GET', `/api/movies/${movie.id}`, token)).json;
    throw new Error(`${error.message}; seen ${[...seen].join(' ')}; the movie is ${
      JSON.stringify(now)}`);
  } finally {
    clearInterval(throttle);
  }
  worker.kill('SIGSTOP');
  try {
    await waitForText(bobPage.locator('#trace-progress-text'), /^Tracing: \d+ of 101 frames/);
    await screenshot(adaPage, screenshots, 'analyze-tracing-laptop');
    await waitForText(phone.locator('#trace-progress-text'), /^Tracing: \d+ of 101 frames/);
    await waitForText(phone.locator('#safe-to-leave'), /safe to leave this page/);
    await screenshot(phone, screenshots, 'analyze-tracing-phone');
  } finally {
    worker.kill('SIGCONT');
  }
  await closePage(phone);
});

test('the results appear in both pages: tracks, plots, table and CSV', async () => {
  for (const page of [adaPage, bobPage]) {
    await page.locator('#results').waitFor({ state: 'visible', timeout: TRACE_MS });
    await page.locator('#plot-x .uplot').waitFor();
    await page.locator('#plot-y .uplot').waitFor();
    await page.locator('#plot-speed .uplot').waitFor();
    await until('the table', async () =>
      (await page.locator('#frames-table tbody tr').count()) === 101);
    const href = await page.locator('#download-csv').getAttribute('href');
    assert.equal(href, `/api/movies/${movie.id}/frames.csv`);
  }
  const csv = await adaPage.evaluate(async (url) => (await fetch(url)).text(),
    `/api/movies/${movie.id}/frames.csv`);
  assert.equal(csv.trim().split('\n').length, 102, 'a header and a row per sampled frame');
  // The page that traced takes the movie back; the other stays view-only.
  await until('Ada edits again', async () => (await bannerMode(adaPage)) === 'edit');
  assert.equal(await bannerMode(bobPage), 'view');
  await waitForText(adaPage.locator('#trace-history'), /Trace completed/);
  // The current frame moves in the table with the frame shown.
  await adaPage.locator('.viewer-canvas').focus();
  await adaPage.getByRole('button', { name: 'First frame' }).click();
  await adaPage.keyboard.press('Shift+ArrowRight');
  await adaPage.locator('#frames-table tr[aria-current="true"][data-frame="10"]').waitFor();
  await screenshot(adaPage, screenshots, 'analyze-results-laptop');
  const phone = await openAnalyze(bob, PHONE);
  await phone.locator('#results').waitFor({ state: 'visible', timeout: STEP_MS });
  await phone.locator('#plot-x .uplot').waitFor();
  await screenshot(phone, screenshots, 'analyze-results-phone');
  await closePage(phone);
});

test('every write the editing page sent carried its lease ID', async () => {
  const writes = adaPage.writes.filter((w) => !w.path.endsWith('/analysis-lease') ||
    w.method !== 'POST');
  assert.ok(writes.some((w) => w.path.endsWith('/markers')), 'markers were written');
  assert.ok(writes.some((w) => w.path.endsWith('/trim')), 'the trim was written');
  assert.ok(writes.some((w) => w.path.endsWith('/capture-interval')));
  assert.ok(writes.some((w) => w.path.endsWith('/trace')));
  assert.ok(writes.some((w) => w.path.endsWith('/heartbeat')), 'heartbeats were sent');
  for (const w of writes) {
    assert.match(w.body, /"lease_id":"[^"]+"/, `${w.method} ${w.path} carries the lease`);
  }
  assert.deepEqual(bobPage.writes.filter((w) => w.method !== 'POST' ||
    !w.path.endsWith('/analysis-lease')), [], 'the viewer wrote nothing');
});

test('when the editor closes the tab, the viewer gets the movie', async () => {
  assert.equal(await bannerMode(adaPage), 'edit');
  await adaPage.close({ runBeforeUnload: true });
  await adaPage.context().close();
  await bobPage.locator('#edit-movie').waitFor({ timeout: STEP_MS });
  await bobPage.locator('#edit-movie').click();
  await until('Bob edits', async () => (await bannerMode(bobPage)) === 'edit');
  assert.ok(await bobPage.locator('#trim-start').isEnabled());
});

test('an admin breaks a lease; the page that held it stops editing and says why', async () => {
  const admin = await openAnalyze(cy);
  await waitForText(banner(admin), /Bob Builder is editing/);
  await admin.locator('#break-lock').click();
  await waitForText(bobPage.locator('#analyze-alert'), /An administrator, Cy Admin, broke/,
    STEP_MS);
  assert.equal(await bannerMode(bobPage), 'view');
  assert.ok(await bobPage.locator('#trim-start').isDisabled());
  await closePage(admin);
});

test('a page whose heartbeats do not get through stops editing; another takes over', async () => {
  await bobPage.locator('#edit-movie').click();
  await until('Bob edits', async () => (await bannerMode(bobPage)) === 'edit');
  // The other page opens before Bob's heartbeats are cut: signing in can
  // take longer than the lease's ttl on a slow machine.
  const other = await openAnalyze(ada);
  assert.equal(await bannerMode(other), 'view');
  await bobPage.route('**/analysis-lease/heartbeat', (route) => route.abort('failed'));
  // Bob's page stops by its own deadline, before the lease expires.
  await waitForText(bobPage.locator('#analyze-alert'), /could not be reached/, STEP_MS);
  assert.ok(await bobPage.locator('#trim-start').isDisabled());
  await other.locator('#edit-movie').waitFor({ timeout: STEP_MS });
  await other.locator('#edit-movie').click();
  await until('Ada edits', async () => (await bannerMode(other)) === 'edit');
  await bobPage.unroute('**/analysis-lease/heartbeat');
  // The heartbeats this test cut off are no fault of the page.
  const problems = bobPage.problems.filter((p) => !p.includes('/analysis-lease/heartbeat'));
  bobPage.problems.splice(0, bobPage.problems.length, ...problems);
  await waitForText(banner(bobPage), /Someone else has this movie|Ada Lovelace is editing/,
    STEP_MS);
  await closePage(bobPage);
  adaPage = other;
});

test('a failed trace shows its summary and the history in the page', async () => {
  const page = adaPage;
  // The movie's file gone from the media folder: the worker cannot read it.
  const media = path.join(store.dir, 'media');
  const [file] = readdirSync(media)
    .filter((name) => !name.startsWith('.') && !name.endsWith('-proxy.mp4'));
  renameSync(path.join(media, file), path.join(store.dir, file));
  await page.locator('#trace-button').click();
  await waitForText(page.locator('#trace-failure'), /^The last trace failed\. \S/, TRACE_MS);
  await waitForText(page.locator('#trace-history li').first(), /Trace failed by Ada Lovelace/);
  assert.ok(await page.locator('#trace-history li').first().locator('.history-summary')
    .isVisible(), 'the failure says why');
  // The page takes the movie back for editing once it sees the trace end,
  // which may be a moment after the history shows it.
  await until('it may be traced again', () => page.locator('#trace-button').isEnabled());
  await screenshot(page, screenshots, 'analyze-failed-laptop');
  await closePage(page);
});

test('a movie of variable rate shows each frame at its own time', async () => {
  // 2 s at 30 fps, then 4 s at 10 fps, as a phone records in low light.
  const file = path.join(store.dir, 'phone.mp4');
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
    'testsrc2=size=320x240:rate=30', '-t', '6', '-vf', "select='lt(t,2)+gte(t,2)*not(mod(n,3))'",
    '-fps_mode', 'passthrough', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '30',
    '-pix_fmt', 'yuv420p', file]);
  const token = await tokenOf(bob);
  const uploaded = await api('POST', '/api/movies?name=Phone', token, readFileSync(file),
    'video/mp4');
  assert.equal(uploaded.status, 201, JSON.stringify(uploaded.json));
  const id = uploaded.json.id;
  await until('the probe', async () =>
    (await api('GET', `/api/movies/${id}`, token)).json.status === 'ready');
  const page = await openPage(browser, LAPTOP);
  await page.goto(server.url(`/movies/${id}`));
  await page.waitForURL(/\/signin/);
  await signInOnPage(page, bob);
  await page.waitForURL(new RegExp(`/movies/${id}$`));
  await waitForText(page.locator('#movie-facts'), /100 frames · 16\.8 fps, variable · 0:06/);
  const position = page.locator('.viewer-position');
  // Frame 30 is at 1 s, frame 70 at 3 s (frame / average rate would say
  // 1.8 s and 4.2 s).
  for (const [frame, time] of [[30, '0:01.000'], [70, '0:03.000'], [99, '0:05.900']]) {
    await page.locator('.viewer-slider').fill(String(frame));
    await waitForText(position, new RegExp(`^Frame ${frame} / 99 · ${time.replace('.', '\\.')}$`));
    await page.locator(`.viewer-canvas[data-shown-frame="${frame}"]`).waitFor();
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await screenshot(page, screenshots, 'analyze-variable-rate-laptop');
  await closePage(page);
});

run({
  after: async () => {
    if (worker && worker.exitCode === null) worker.kill('SIGKILL');
    await browser?.close();
    await server?.stop();
    store?.remove();
  },
});
