// The Fleet page (/fleet), in chromium against a real `leasehold serve`: the
// fleet's health first (with no worker, that no connection streams; with
// some not streaming, how many and why) and the connections that need
// attention; the connections with their owners and lease countdowns
// (against the server's clock, not the browser's), a new owner shown within
// seconds of a takeover written to the store, sequence rates, the workers
// and their streams, an admin adding, stopping, starting and removing
// connections, the API's errors shown in the form, no write controls for
// other users, the stale state when the server stops answering, no polling
// while the page is hidden, and the layout at laptop and phone sizes
// (screenshots in --screenshots). Paging, filters and the polls' 304s and
// back-off are fleet_paging_test.mjs's.
//
// Connections are added with `leasehold conn add`; what workers write (the
// lease of a connection, membership items) is written straight into the
// store with browser_store_tool, attribute by attribute as docs/schema.md
// names them.
//
//   node tests/browser/fleet_test.mjs --leasehold build/bin/leasehold \
//       --store-tool build/bin/browser_store_tool --screenshots DIR
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import {
  closeAll, closePage, eventually as waitUntil, LAPTOP, launchBrowser, openSignedIn, parseArgs,
  PHONE, run, screenshot, Server, setPageHidden, Store, test, waitForText,
} from './harness.mjs';

const { bin, storeTool, screenshots } = parseArgs();
if (!storeTool) throw new Error('fleet_test.mjs needs --store-tool (browser_store_tool)');
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const queen = await store.addUser({
  name: 'queen', displayName: 'The Queen of Hearts', password: 'off with their heads', admin: true,
});
const server = await Server.start(store);
const browser = await launchBrowser();

// How long the page may take to show what changed in the store: it asks
// every second after a change and backs off to every 8 s while nothing
// changes, so a change waits 8 s at most, and the summary is read once a
// second at most by the server.
const SHOWN_WITHIN_MS = 10_000;

// ---- writing the fleet into the store ----

async function addConnection(id, url, { stopped = false } = {}) {
  const args = ['conn', 'add', id, '--url', url];
  if (stopped) args.push('--stopped');
  const added = await store.leasehold(...args);
  assert.equal(added.code, 0, `conn add ${id} failed: ${added.err}`);
}

async function storedConnections() {
  const listed = await store.leasehold('conn', 'list');
  assert.equal(listed.code, 0, listed.err);
  return listed.out === '' ? [] : listed.out.split('\n').map((line) => JSON.parse(line));
}

// The lease of connection `id` as a worker that acquired it writes it.
async function leaseTo(id, owner, { epoch, ttlMs = 60_000, lastSeq, lastError } = {}) {
  const now = Date.now();
  const attributes = {
    lease_owner: owner,
    lease_token: randomBytes(16).toString('hex'),
    lease_epoch: epoch,
    lease_acquired_at_ms: now,
    lease_heartbeat_at_ms: now,
    lease_expires_at_ms: now + ttlMs,
  };
  if (lastSeq !== undefined) attributes.last_seq = lastSeq;
  if (lastError !== undefined) {
    attributes.last_error = lastError;
    attributes.last_error_at_ms = now;
  }
  await store.write(storeTool, 'update', 'connections', `CONN#${id}`, JSON.stringify(attributes));
}

async function checkpoint(id, lastSeq) {
  await store.write(storeTool, 'update', 'connections', `CONN#${id}`,
    JSON.stringify({ last_seq: lastSeq }));
}

// A worker's membership item (src/fleet/members.h), with the figures of its
// streams when `streams` is given ({streaming, reconnecting, stalled,
// erroring}). Returns its lease token: the session its attention item names.
async function joinWorker(id, { ttlMs = 600_000, owned, capacity, messages, perSecond,
  sessionTtlMs, sessionNumber = 1, streams }) {
  const now = Date.now();
  const token = randomBytes(16).toString('hex');
  await store.write(storeTool, 'put', 'fleet_workers', JSON.stringify({
    Pk: `WORKER#${id}`,
    kind: 'worker',
    lease_owner: id,
    lease_token: token,
    lease_epoch: sessionNumber,
    lease_acquired_at_ms: now - 60_000,
    lease_heartbeat_at_ms: now,
    lease_expires_at_ms: now + ttlMs,
    owned,
    capacity,
    messages,
    messages_per_s: Math.round(perSecond * 1000),
    started_at_ms: now - 60_000,
    updated_at_ms: now - 1000,
    ...(sessionTtlMs ? { session_ttl_ms: sessionTtlMs } : {}),
    ...(streams || {}),
  }));
  return token;
}

// A worker's attention item (src/fleet/members.h): the connections it holds
// that are not streaming or stalled, [{id, reason, sinceMs}] the longest
// first, written in its session `session` (its lease token).
async function writeAttention(worker, session, troubles) {
  await store.write(storeTool, 'put', 'fleet_workers', JSON.stringify({
    Pk: `ATTENTION#${worker}`,
    session,
    attention: troubles.map((t) => `${t.id} ${t.reason} ${t.sinceMs}\n`).join(''),
    written_at_ms: Date.now(),
  }));
}

// ---- the page ----

async function fleetPage(user, viewport = LAPTOP, { beforeLoad } = {}) {
  const page = await openSignedIn(browser, server, user, '/fleet', viewport, { beforeLoad });
  await waitForText(page.locator('#fleet-freshness'), /Live/);
  return page;
}

const row = (page, id) => page.locator(`tr[data-conn-id="${id}"]`);
const stat = (page, key) => page.locator(`.stat[data-stat="${key}"] .stat-value`);
const freeRow = (page, id) => page.locator(`tr[data-free-id="${id}"]`);
const heldRow = (page, id) => page.locator(`tr[data-held-id="${id}"]`);
const cell = (page, id, field) => row(page, id).locator(`td[data-field="${field}"]`);
const workerCell = (page, id, field) =>
  page.locator(`tr[data-worker-id="${id}"] td[data-field="${field}"]`);

// The seconds a lease cell counts down ("in 57 s").
async function secondsLeft(page, id) {
  const text = await cell(page, id, 'lease').innerText();
  const match = /^in (\d+) s$/.exec(text.trim());
  assert.ok(match, `the lease of ${id} reads '${text}'`);
  return Number(match[1]);
}

// eventually() with this file's deadline.
function eventually(what, fn, timeoutMs = SHOWN_WITHIN_MS) {
  return waitUntil(what, fn, timeoutMs);
}

await addConnection('feed-alpha', 'wss://feed.example.com/alpha?from={next_seq}&key=s3cret');
await addConnection('feed-beta', 'ws://10.0.0.7:9000/beta/{last_seq}', { stopped: true });

// The colour of success: never that of a connection's desired state, nor of
// anything on a page whose fleet streams nothing.
const SUCCESS_GREEN = 'rgb(23, 128, 61)';

test('with no worker, the page says at once that no connection streams', async () => {
  // No worker item in the store: feed-alpha is started, and nobody streams it.
  const page = await fleetPage(alice);
  const health = page.locator('#fleet-health');
  await waitForText(health, /No worker is running — the one started connection is not streaming/);
  assert.equal(await health.getAttribute('data-health'), 'down');
  await waitForText(stat(page, 'not_streaming'), /^1$/);
  await waitForText(stat(page, 'streaming'), /^0$/);
  await waitForText(stat(page, 'workers'), /^0 alive$/);
  // Nothing green: a started connection is what was asked, not what is.
  await waitForText(cell(page, 'feed-alpha', 'state'), /Started/);
  const greens = await page.evaluate((green) => [...document.querySelectorAll('main *')]
    .filter((e) => e.offsetParent !== null && e.children.length === 0 &&
      (getComputedStyle(e).color === green || getComputedStyle(e).backgroundColor === green))
    .map((e) => e.textContent.trim()), SUCCESS_GREEN);
  assert.deepEqual(greens, [], 'green on a fleet that streams nothing');
  // The free connection is listed, with how long it has been free.
  await waitForText(freeRow(page, 'feed-alpha').locator('td[data-field="why"]'),
    /^Free for \d+ s$/);
  assert.ok(await page.locator('#attention-none').isHidden());
  await screenshot(page, screenshots, 'fleet-no-worker-laptop');
  await closePage(page);
});

test('a worker joining is shown: the started connection streams', async () => {
  const page = await fleetPage(alice);
  await waitForText(page.locator('#fleet-health'), /No worker is running/);
  // 55 s, not 60: a lease a whole minute out reads "in 1 min", not seconds.
  await leaseTo('feed-alpha', 'worker-1', { epoch: 1, ttlMs: 55_000, lastSeq: 1200 });
  await joinWorker('worker-1', { owned: 1, capacity: 10, messages: 1200, perSecond: 12.5,
    sessionTtlMs: 3000, sessionNumber: 4,
    streams: { streaming: 1, reconnecting: 0, stalled: 0, erroring: 0 } });
  await joinWorker('worker-9', { ttlMs: -30_000, owned: 0, capacity: 10, messages: 0,
    perSecond: 0 });
  await waitForText(page.locator('#fleet-health'), /^The started connection is streaming/,
    SHOWN_WITHIN_MS);
  assert.equal(await page.locator('#fleet-health').getAttribute('data-health'), 'healthy');
  await waitForText(stat(page, 'streaming'), /^1$/);
  await waitForText(stat(page, 'not_streaming'), /^0$/);
  await waitForText(stat(page, 'workers'), /^1 alive$/);
  await waitForText(page.locator('.stat[data-stat="workers"] .stat-note'),
    /1 \/ 10 capacity · 1 gone/);
  await waitForText(page.locator('#attention-none'), /every started connection is held/);
  assert.equal(await freeRow(page, 'feed-alpha').count(), 0);
  await closePage(page);
});

test('the page lists the connections with their owner and a lease counting down', async () => {
  const page = await fleetPage(alice);
  await waitForText(cell(page, 'feed-alpha', 'owner'), /^worker-1$/);
  await waitForText(cell(page, 'feed-alpha', 'state'), /Started/);
  await waitForText(cell(page, 'feed-alpha', 'last_seq'), /^1,200$/);
  await waitForText(cell(page, 'feed-beta', 'state'), /Stopped/);
  await waitForText(cell(page, 'feed-beta', 'owner'), /^—$/);
  assert.deepEqual(await page.locator('tr[data-conn-id]').evaluateAll(
    (rows) => rows.map((r) => r.dataset.connId)), ['feed-alpha', 'feed-beta']);
  const first = await secondsLeft(page, 'feed-alpha');
  assert.ok(first > 45 && first <= 55, `${first} s left of a 55 s lease`);
  await eventually('the countdown goes down', async () =>
    (await secondsLeft(page, 'feed-alpha')) < first);
  await screenshot(page, screenshots, 'fleet-user-laptop');
  await closePage(page);
});

test('the countdown follows the server\'s clock, not the browser\'s', async () => {
  // A browser whose clock is an hour ahead would show every lease expired.
  const page = await fleetPage(alice, LAPTOP, {
    beforeLoad: (p) => p.addInitScript(() => {
      const realNow = Date.now;
      Date.now = () => realNow() + 3_600_000;
    }),
  });
  assert.ok(await page.evaluate(() => Date.now() - performance.timeOrigin > 3_000_000));
  const left = await secondsLeft(page, 'feed-alpha');
  assert.ok(left > 40 && left <= 60, `${left} s left`);
  await closePage(page);
});

test('a new owner written to the store shows within seconds', async () => {
  const page = await fleetPage(alice);
  await waitForText(cell(page, 'feed-alpha', 'owner'), /^worker-1$/);
  // worker-1 is gone and worker-2 took the connection over, as a takeover
  // writes it: a new owner, the next epoch, a new expiry.
  const written = Date.now();
  await leaseTo('feed-alpha', 'worker-2', { epoch: 2, ttlMs: 30_000 });
  await waitForText(cell(page, 'feed-alpha', 'owner'), /^worker-2$/, SHOWN_WITHIN_MS);
  const shownAfterMs = Date.now() - written;
  assert.equal(await cell(page, 'feed-alpha', 'owner').getAttribute('title'), 'Epoch 2');
  const left = await secondsLeft(page, 'feed-alpha');
  assert.ok(left > 20 && left <= 30, `${left} s left of the new 30 s lease`);
  console.log(`     (the new owner was shown ${shownAfterMs} ms after it was written)`);
  await closePage(page);
});

test('last_seq and its rate follow the checkpoints', async () => {
  const page = await fleetPage(alice);
  await checkpoint('feed-alpha', 2000);
  await waitForText(cell(page, 'feed-alpha', 'last_seq'), /^2,000$/);
  await checkpoint('feed-alpha', 5000);
  await waitForText(cell(page, 'feed-alpha', 'last_seq'), /^5,000$/);
  await eventually('a rate above zero', async () =>
    /^[1-9][\d,.]*\/s$/.test((await cell(page, 'feed-alpha', 'rate').innerText()).trim()));
  await closePage(page);
});

test('the owner\'s figures: the last message\'s age, reconnects, and quiet streams', async () => {
  const page = await fleetPage(alice);
  const now = Date.now();
  await store.write(storeTool, 'update', 'connections', 'CONN#feed-alpha', JSON.stringify({
    messages: 4990, reconnects: 3, last_message_at_ms: now - 5000,
  }));
  const age = cell(page, 'feed-alpha', 'last_message').locator('.age');
  await waitForText(age, /^\d s ago$/, SHOWN_WITHIN_MS);
  await waitForText(cell(page, 'feed-alpha', 'last_message').locator('[data-field="reconnects"]'),
    /^3 reconnects$/);
  assert.equal(await cell(page, 'feed-alpha', 'last_message').getAttribute('data-quiet'), 'false');
  // A started connection silent for over a minute is shown as a warning.
  await store.write(storeTool, 'update', 'connections', 'CONN#feed-alpha', JSON.stringify({
    last_message_at_ms: now - 90_000,
  }));
  await waitForText(age, /^1 min ago$/, SHOWN_WITHIN_MS);
  assert.equal(await cell(page, 'feed-alpha', 'last_message').getAttribute('data-quiet'), 'true');
  await screenshot(page, screenshots, 'fleet-figures-laptop');
  await closePage(page);
});

test('the summary says how many do not stream and why; those in trouble need attention',
  async () => {
  // worker-1 holds feed-alpha (connected, but stalled for 3 minutes) and
  // feed-zeta (reconnecting after an error for 40 s), and names both in its
  // attention item; orphan-1's lease ran out two minutes ago and nobody
  // took it; orphan-2 was never taken.
  await addConnection('feed-zeta', 'ws://10.0.0.9:9000/zeta');
  await addConnection('orphan-1', 'ws://10.0.0.9:9000/orphan-1');
  await addConnection('orphan-2', 'ws://10.0.0.9:9000/orphan-2');
  await leaseTo('feed-alpha', 'worker-1', { epoch: 3, ttlMs: 600_000 });
  await leaseTo('feed-zeta', 'worker-1', { epoch: 1, ttlMs: 600_000,
    lastError: 'upstream refused the connection (503)' });
  await leaseTo('orphan-1', 'worker-9', { epoch: 3, ttlMs: -120_000,
    lastError: 'upstream closed the connection (1006)' });
  const session = await joinWorker('worker-1', { owned: 2, capacity: 10, messages: 1200,
    perSecond: 12.5, sessionTtlMs: 3000, sessionNumber: 4,
    streams: { streaming: 1, reconnecting: 1, stalled: 1, erroring: 1 } });
  const now = Date.now();
  await writeAttention('worker-1', session, [
    { id: 'feed-alpha', reason: 'stalled', sinceMs: now - 185_000 },
    { id: 'feed-zeta', reason: 'not_streaming', sinceMs: now - 40_000 },
  ]);
  // A gone worker's item is not read.
  await writeAttention('worker-9', 'an-earlier-session', [
    { id: 'orphan-2', reason: 'not_streaming', sinceMs: now - 60_000 },
  ]);
  const page = await fleetPage(alice);
  const health = page.locator('#fleet-health');
  await waitForText(health, /^3 of 4 started connections are not streaming/, SHOWN_WITHIN_MS);
  assert.equal(await health.getAttribute('data-health'), 'degraded');
  await waitForText(health.locator('.health-detail'),
    /^1 reconnecting · 1 stalled · 1 erroring · 2 held by no live worker\.$/);
  await waitForText(stat(page, 'total'), /^5$/);
  await waitForText(page.locator('.stat[data-stat="total"] .stat-note'), /4 started · 1 stopped/);
  await waitForText(stat(page, 'not_streaming'), /^3$/);
  await waitForText(stat(page, 'reconnecting'), /^1$/);
  await waitForText(stat(page, 'stalled'), /^1$/);
  await waitForText(stat(page, 'erroring'), /^1$/);
  assert.equal(await page.locator('.stat[data-stat="not_streaming"]').getAttribute('data-level'),
    'warning');
  // The free ones first, the longest free first, how long (on the server's
  // clock), and why; then those worker-1 holds, the longest first.
  const listed = () => page.locator('#attention-list tbody tr').evaluateAll((rows) =>
    rows.map((r) => (r.dataset.freeId ? `free ${r.dataset.freeId}`
      : `${r.dataset.reason} ${r.dataset.heldId} on ${r.dataset.owner}`)));
  await eventually('the connections that need attention listed', async () =>
    (await listed()).join() === 'free orphan-1,free orphan-2,' +
      'stalled feed-alpha on worker-1,not_streaming feed-zeta on worker-1');
  const why = (r) => r.locator('td[data-field="why"]');
  await waitForText(why(freeRow(page, 'orphan-1')), /^Free for 2 min$/);
  await waitForText(freeRow(page, 'orphan-1').locator('td[data-field="last_error"]'),
    /upstream closed the connection \(1006\)/);
  await waitForText(why(freeRow(page, 'orphan-2')), /^Free for \d+ s$/);
  await waitForText(why(heldRow(page, 'feed-alpha')), /^Stalled on worker-1 for 3 min$/);
  await waitForText(why(heldRow(page, 'feed-zeta')), /^Not streaming on worker-1 for (4\d) s$/);
  assert.match(await why(heldRow(page, 'feed-zeta')).getAttribute('title'),
    /^Not streaming on worker-1 since /);
  await waitForText(page.locator('#attention-count'), /^4$/);
  await waitForText(page.locator('#attention .section-note').first(),
    /not been connected for 5 s or more, or are connected but stalled/);
  await screenshot(page, screenshots, 'fleet-not-streaming-laptop');
  // A free connection's ID shows it in the table, and the URL says so.
  await freeRow(page, 'orphan-1').getByRole('link').click();
  await eventually('the table shows orphan-1 only', async () => (await page.locator(
    'tr[data-conn-id]').evaluateAll((rows) => rows.map((r) => r.dataset.connId)))
    .join() === 'orphan-1');
  assert.equal(await page.locator('#conn-search').inputValue(), 'orphan-1');
  assert.equal(new URL(page.url()).search, '?prefix=orphan-1');
  await waitForText(cell(page, 'orphan-1', 'lease'), /^expired 2 min ago$/);
  // So does a held one's, with its owner and its error in the table.
  await heldRow(page, 'feed-zeta').getByRole('link').click();
  await eventually('the table shows feed-zeta only', async () => (await page.locator(
    'tr[data-conn-id]').evaluateAll((rows) => rows.map((r) => r.dataset.connId)))
    .join() === 'feed-zeta');
  assert.equal(await page.locator('#conn-search').inputValue(), 'feed-zeta');
  assert.equal(new URL(page.url()).search, '?prefix=feed-zeta');
  await waitForText(cell(page, 'feed-zeta', 'owner'), /^worker-1$/);
  await closePage(page);

  // On a phone each is a card: its ID, then why for how long.
  const phone = await fleetPage(alice, PHONE);
  await waitForText(why(heldRow(phone, 'feed-alpha')), /^Stalled on worker-1 for 3 min$/);
  await waitForText(why(freeRow(phone, 'orphan-1')), /^Free for 2 min$/);
  await checkLayout(phone, PHONE);
  await screenshot(phone, screenshots, 'fleet-not-streaming-phone');
  await closePage(phone);
});

test('the workers are listed, alive or gone, with their load', async () => {
  const page = await fleetPage(alice);
  await waitForText(workerCell(page, 'worker-1', 'alive'), /^Alive$/);
  await waitForText(workerCell(page, 'worker-1', 'owned'), /2 \/ 10/);
  await waitForText(workerCell(page, 'worker-1', 'messages_per_s'), /^12\.5\/s$/);
  // How its streams go: the trouble is said beside the streaming ones.
  await waitForText(workerCell(page, 'worker-1', 'streams'),
    /^1 streaming\s*1 reconnecting\s*1 stalled\s*1 erroring$/);
  await waitForText(workerCell(page, 'worker-9', 'streams'), /^—$/);
  await waitForText(workerCell(page, 'worker-9', 'alive'), /^Gone$/);
  await waitForText(workerCell(page, 'worker-9', 'lease').locator('[data-field="expiry"]'),
    /^expired/);
  // Its session: which one, and its ttl; a worker without one says so.
  await waitForText(workerCell(page, 'worker-1', 'lease').locator('[data-field="session"]'),
    /^session #4 · 3 s$/);
  await waitForText(workerCell(page, 'worker-9', 'lease').locator('[data-field="session"]'),
    /^no session$/);
  // On a phone each cell shows its label: the worker's is its session's.
  assert.equal(await workerCell(page, 'worker-1', 'lease').getAttribute('data-label'), 'Session');
  assert.equal(await cell(page, 'feed-alpha', 'lease').getAttribute('data-label'), 'Lease expires');
  await screenshot(page, screenshots, 'fleet-workers-laptop');
  await waitForText(page.locator('#workers-count'), /1 of 2 alive/);
  await closePage(page);
});

test('a user who is not an admin sees no controls that write', async () => {
  const page = await fleetPage(alice);
  await row(page, 'feed-alpha').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Add connection' }).count(), 0);
  assert.equal(await page.locator('main form').count(), 0);
  assert.equal(await page.locator('main table button').count(), 0);
  assert.equal(await page.locator('td[data-field="actions"]').count(), 0);
  // The URL's query may hold a credential: the API does not send it to them.
  const listed = await page.evaluate(() =>
    fetch('/api/fleet/connections').then((r) => r.json()));
  const alpha = listed.connections.find((c) => c.id === 'feed-alpha');
  assert.equal(alpha.ws_url, 'wss://feed.example.com/alpha?…');
  await closePage(page);
});

test('an admin adds a connection with the form and it appears', async () => {
  const page = await fleetPage(queen);
  await page.getByRole('button', { name: 'Add connection' }).click();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'conn-id');
  await page.getByLabel('ID', { exact: true }).fill('feed-gamma');
  await page.getByLabel('URL').fill('wss://gamma.example.com/s?from={next_seq}');
  await page.getByLabel('Sequence field').fill('data.seq');
  await screenshot(page, screenshots, 'fleet-add-form-laptop');
  await page.locator('#conn-submit').click();
  await waitForText(cell(page, 'feed-gamma', 'state'), /Started/);
  assert.ok(await page.locator('#add-connection').isHidden(), 'the form closes');
  // On this page: it flashes, and the note does not offer to show it.
  await eventually('the new row flashes', async () =>
    (await row(page, 'feed-gamma').getAttribute('class'))?.includes('just-added'));
  await waitForText(page.locator('#conn-note'), /^Added feed-gamma\.$/);
  const stored = (await storedConnections()).find((c) => c.id === 'feed-gamma');
  assert.equal(stored.ws_url, 'wss://gamma.example.com/s?from={next_seq}');
  assert.equal(stored.desired_state, 'STARTED');
  // Still there after the next answers replace the page.
  await page.waitForResponse((r) => r.url().includes('/api/fleet/connections?'));
  await waitForText(cell(page, 'feed-gamma', 'state'), /Started/);
  await closePage(page);
});

test('a bad URL shows the API\'s error beside the field and adds nothing', async () => {
  const page = await fleetPage(queen);
  await page.getByRole('button', { name: 'Add connection' }).click();
  await page.getByLabel('ID', { exact: true }).fill('feed-bad');
  await page.getByLabel('URL').fill('https://feed.example.com/stream');
  await page.locator('#conn-submit').click();
  const error = page.locator('#conn-url-error');
  await waitForText(error, /WebSocket URL must start with ws:\/\/ or wss:\/\//);
  assert.equal(await page.getByLabel('URL').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'conn-url');
  await screenshot(page, screenshots, 'fleet-add-error-laptop');
  // An ID that is taken is named under the ID.
  await page.getByLabel('ID', { exact: true }).fill('feed-alpha');
  await page.getByLabel('URL').fill('wss://feed.example.com/other');
  await page.locator('#conn-submit').click();
  await waitForText(page.locator('#conn-id-error'), /already exists/);
  assert.ok(await page.locator('#conn-url-error').isHidden(), 'the old error is gone');
  assert.equal(await row(page, 'feed-bad').count(), 0);
  const stored = await storedConnections();
  assert.ok(!stored.some((c) => c.id === 'feed-bad'), 'nothing was added');
  assert.equal(stored.find((c) => c.id === 'feed-alpha').ws_url,
    'wss://feed.example.com/alpha?from={next_seq}&key=s3cret', 'feed-alpha is unchanged');
  await closePage(page);
});

test('an admin stops and starts a connection', async () => {
  const page = await fleetPage(queen);
  await page.getByRole('button', { name: 'Stop feed-alpha' }).click();
  await waitForText(cell(page, 'feed-alpha', 'state'), /Stopped/);
  assert.equal((await storedConnections()).find((c) => c.id === 'feed-alpha').desired_state,
    'STOPPED');
  await page.getByRole('button', { name: 'Start feed-alpha' }).click();
  await waitForText(cell(page, 'feed-alpha', 'state'), /Started/);
  assert.equal((await storedConnections()).find((c) => c.id === 'feed-alpha').desired_state,
    'STARTED');
  await closePage(page);
});

test('removing a connection asks first', async () => {
  await addConnection('feed-delta', 'ws://delta.example.com/s');
  const page = await fleetPage(queen);
  await page.getByRole('button', { name: 'Remove feed-delta' }).click();
  await waitForText(cell(page, 'feed-delta', 'actions'), /Remove feed-delta\?/);
  // The question fits: the table does not scroll its IDs out of sight.
  const overflow = await page.locator('#connections').evaluate(
    (table) => table.parentElement.scrollWidth - table.parentElement.clientWidth);
  assert.equal(overflow, 0, 'the table scrolls sideways');
  await screenshot(page, screenshots, 'fleet-confirm-remove-laptop');
  await page.getByRole('button', { name: 'Cancel feed-delta' }).click();
  assert.ok((await storedConnections()).some((c) => c.id === 'feed-delta'), 'still there');
  await page.getByRole('button', { name: 'Remove feed-delta' }).click();
  await waitForText(cell(page, 'feed-delta', 'actions'), /Remove feed-delta\?/);
  await page.getByRole('button', { name: 'Remove feed-delta' }).click();
  await row(page, 'feed-delta').waitFor({ state: 'detached' });
  assert.ok(!(await storedConnections()).some((c) => c.id === 'feed-delta'), 'removed');
  await closePage(page);
});

test('the page says when the server stops answering, and recovers', async () => {
  const page = await fleetPage(alice);
  let aborted = 0;
  await page.route('**/api/fleet/**', (route) => {
    aborted += 1;
    return route.abort('connectionrefused');
  });
  const stale = page.locator('#fleet-stale');
  await waitForText(stale, /Could not reach the server/, SHOWN_WITHIN_MS);
  await waitForText(page.locator('#fleet-freshness'), /Updated .* ago/);
  assert.equal(await cell(page, 'feed-alpha', 'owner').count(), 1, 'the last data stays');
  await screenshot(page, screenshots, 'fleet-stale-laptop');
  // It backs off while the server does not answer; "Try again now" asks at once.
  const before = aborted;
  await stale.getByRole('button', { name: 'Try again now' }).click();
  await eventually('a try at once', async () => aborted > before, 1500);
  await page.unroute('**/api/fleet/**');
  await waitForText(page.locator('#fleet-freshness'), /Live/, SHOWN_WITHIN_MS);
  assert.ok(await stale.isHidden());
  // The requests refused above are this test's doing, not the page's fault.
  const refused = (p) => /\/api\/fleet\/\S+ net::ERR_CONNECTION_REFUSED$/.test(p);
  assert.ok(page.problems.some(refused));
  page.problems.splice(0, page.problems.length, ...page.problems.filter((p) => !refused(p)));
  await closePage(page);
});

test('the page does not ask the server while it is hidden', async () => {
  const page = await fleetPage(alice);
  let asked = 0;
  page.on('request', (request) => {
    if (request.url().includes('/api/fleet/')) asked += 1;
  });
  const setHidden = (hidden) => setPageHidden(page, hidden);
  await eventually('it polls while visible', async () => asked >= 2);
  await setHidden(true);
  // A poll in flight when the page was hidden may still finish; then none.
  await page.waitForTimeout(500);
  const whenHidden = asked;
  await page.waitForTimeout(3000);
  assert.equal(asked, whenHidden, 'no request while hidden');
  await setHidden(false);
  await eventually('it polls again once visible', async () => asked > whenHidden);
  await closePage(page);
});

// Checks a person would otherwise make by eye: nothing wider than the
// screen, and controls large enough to tap on a phone.
async function checkLayout(page, viewport) {
  const issues = await page.evaluate(({ width, phone }) => {
    const found = [];
    if (document.documentElement.scrollWidth > width) {
      found.push(`the page is ${document.documentElement.scrollWidth}px wide`);
    }
    const controls = 'main button, main input, main select, main .tag';
    for (const e of document.querySelectorAll(controls)) {
      if (e.offsetParent === null) continue;
      const r = e.getBoundingClientRect();
      const name = e.id || e.getAttribute('aria-label') || e.textContent.trim();
      if (r.right > width || r.left < 0) found.push(`${name} is off screen`);
      if (phone && e.tagName !== 'SPAN' && e.type !== 'checkbox' && r.height < 40) {
        found.push(`${name} is ${r.height}px tall`);
      }
      if ((e.tagName === 'SELECT' || ['text', 'search'].includes(e.type)) &&
        parseFloat(getComputedStyle(e).fontSize) < 16) {
        found.push(`${e.tagName.toLowerCase()} ${e.id} text is under 16px`);
      }
    }
    return found;
  }, { width: viewport.width, phone: viewport === PHONE });
  assert.deepEqual(issues, [], `layout at ${viewport.width}x${viewport.height}`);
}

test('a lapsed lease is a warning only on a connection that should stream', async () => {
  await addConnection('lapsed-stopped', 'ws://10.0.0.8:9000/s', { stopped: true });
  await addConnection('lapsed-started', 'ws://10.0.0.8:9000/t');
  await leaseTo('lapsed-stopped', 'worker-1', { epoch: 1, ttlMs: -5_000 });
  await leaseTo('lapsed-started', 'worker-1', { epoch: 1, ttlMs: -5_000 });
  const page = await fleetPage(alice);
  await waitForText(cell(page, 'lapsed-stopped', 'lease'), /^expired/);
  await waitForText(cell(page, 'lapsed-started', 'lease'), /^expired/);
  const weight = (id) => cell(page, id, 'lease').evaluate((el) => getComputedStyle(el).fontWeight);
  assert.equal(await weight('lapsed-started'), '600', 'a takeover is due: shown as a warning');
  assert.equal(await weight('lapsed-stopped'), '400', 'stopped: its lease lapsed as it should');
  await closePage(page);
  for (const id of ['lapsed-stopped', 'lapsed-started']) {
    assert.equal((await store.leasehold('conn', 'rm', id)).code, 0);
  }
});

for (const [size, viewport] of [['laptop', LAPTOP], ['phone', PHONE]]) {
  test(`the page is laid out for a ${size} (${viewport.width}x${viewport.height})`, async () => {
    await leaseTo('feed-beta', 'worker-1', { epoch: 1, ttlMs: -5_000 });
    await store.write(storeTool, 'update', 'connections', 'CONN#feed-beta', JSON.stringify({
      last_error: 'upstream closed the connection (1006)', last_error_at_ms: Date.now() - 90_000,
    }));
    const admin = await fleetPage(queen, viewport);
    await row(admin, 'feed-alpha').waitFor();
    await checkLayout(admin, viewport);
    await screenshot(admin, screenshots, `fleet-admin-${size}`);
    await admin.getByRole('button', { name: 'Add connection' }).click();
    await admin.locator('#conn-submit').click();
    await waitForText(admin.locator('#conn-id-error'), /Enter an ID/);
    await checkLayout(admin, viewport);
    // The focused field is in view, below the sticky header, not under it.
    const covered = await admin.evaluate(() => {
      const field = document.activeElement.getBoundingClientRect();
      const header = document.querySelector('.topbar').getBoundingClientRect();
      return field.top < header.bottom || field.bottom > window.innerHeight;
    });
    assert.equal(covered, false, 'the focused ID field is hidden');
    // A full-page screenshot draws the sticky header where the view is.
    await admin.evaluate(() => window.scrollTo(0, 0));
    await screenshot(admin, screenshots, `fleet-admin-form-${size}`);
    await closePage(admin);

    const user = await fleetPage(alice, viewport);
    await row(user, 'feed-alpha').waitFor();
    await checkLayout(user, viewport);
    await screenshot(user, screenshots, `fleet-user-${size}`);
    await closePage(user);
  });
}

test('no lease token or session cookie appears in the page or the server log', async () => {
  const page = await fleetPage(queen);
  await row(page, 'feed-alpha').waitFor();
  const html = await page.content();
  const tokens = (await page.evaluate(() => fetch('/api/fleet/connections').then((r) => r.text())));
  assert.ok(!/lease_token|"token"/.test(tokens), 'no token in the API answer');
  assert.ok(!/[0-9a-f]{32}/.test(html), 'nothing like a token in the page');
  const [cookie] = await page.context().cookies();
  await closePage(page);
  assert.ok(!server.logs().includes(cookie.value), 'the session cookie is in the server log');
});

await run({ after: () => closeAll({ browser, server, store }) });
