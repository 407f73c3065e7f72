// The Fleet page (/fleet) on a fleet of a few hundred connections, in
// chromium against a real `leasehold serve`: the table shows 100 at a time
// with next and previous pages; the state, owner and ID-prefix filters each
// narrow it, and the URL keeps them; the page never asks for the whole
// list; its polls get 304 while nothing changes, and it asks less often
// then (1 s, 2 s, 4 s...) and every second again after a change. Screenshots
// in --screenshots.
//
// The connections are added with browser_store_tool's bulk-connections
// (fleet::Connections::add, as `leasehold conn add` adds them, in one
// process); a worker's membership and leases are written with its put and
// update, attribute by attribute as docs/schema.md names them.
//
//   node tests/browser/fleet_paging_test.mjs --leasehold build/bin/leasehold \
//       --store-tool build/bin/browser_store_tool --screenshots DIR
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import {
  closeAll, closePage, eventually, LAPTOP, launchBrowser, openSignedIn, parseArgs, PHONE, run,
  screenshot, Server, Store, test, waitForRows as waitForRowsOf, waitForText,
} from './harness.mjs';

const { bin, storeTool, screenshots } = parseArgs();
if (!storeTool) throw new Error('fleet_paging_test.mjs needs --store-tool (browser_store_tool)');
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const queen = await store.addUser({
  name: 'queen', displayName: 'The Queen of Hearts', password: 'off with their heads', admin: true,
});
const server = await Server.start(store);
const browser = await launchBrowser();

// The page asks every second after a change and at least every 8 s.
const SHOWN_WITHIN_MS = 10_000;
const BULK = 250; // bulk-000 .. bulk-249, all STARTED
const PAGE = 100;

// ---- the fleet ----

const bulkId = (i) => `bulk-${String(i).padStart(3, '0')}`;

const added = await store.leasehold('conn', 'add', 'feed-a', '--url', 'ws://10.0.0.1/a',
  '--stopped');
assert.equal(added.code, 0, added.err);
assert.equal((await store.leasehold('conn', 'add', 'feed-b', '--url', 'ws://10.0.0.1/b',
  '--stopped')).code, 0);
await store.write(storeTool, 'bulk-connections', 'bulk-', String(BULK));
const TOTAL = BULK + 2;

// worker-1, alive for the whole file, holds three connections in its
// session (the owner filter reads them from the session index).
const SESSION = randomBytes(16).toString('hex');
const HELD = [bulkId(10), bulkId(120), bulkId(249)];
{
  const now = Date.now();
  await store.write(storeTool, 'put', 'fleet_workers', JSON.stringify({
    Pk: 'WORKER#worker-1', kind: 'worker', lease_owner: 'worker-1', lease_token: SESSION,
    lease_epoch: 1, lease_acquired_at_ms: now, lease_heartbeat_at_ms: now,
    lease_expires_at_ms: now + 3_600_000, owned: HELD.length, capacity: 500, messages: 0,
    messages_per_s: 0, started_at_ms: now, updated_at_ms: now, session_ttl_ms: 10_000,
    streaming: HELD.length, reconnecting: 0, stalled: 0, erroring: 0,
  }));
  for (const id of HELD) {
    await store.write(storeTool, 'update', 'connections', `CONN#${id}`, JSON.stringify({
      lease_owner: 'worker-1', lease_token: randomBytes(16).toString('hex'), lease_epoch: 1,
      lease_session: SESSION, lease_acquired_at_ms: now, lease_heartbeat_at_ms: now,
      lease_expires_at_ms: now + 3_600_000,
    }));
  }
}

// ---- the page ----

async function fleetPage(viewport = LAPTOP, path = '/fleet', user = alice) {
  const page = await openSignedIn(browser, server, user, path, viewport);
  await waitForText(page.locator('#fleet-freshness'), /Live/);
  return page;
}

// Waits until the table shows exactly `ids`.
function waitForRows(page, what, ids) {
  return waitForRowsOf(page, what, {
    selector: 'tr[data-conn-id]', key: 'connId', ids, timeoutMs: SHOWN_WITHIN_MS,
  });
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => bulkId(from + i));

test('the table shows 100 connections at a time, with next and previous pages', async () => {
  const page = await fleetPage();
  await waitForRows(page, 'the first page', range(0, PAGE));
  await waitForText(page.locator('#conn-range'), new RegExp(`^1–100 of ${TOTAL}$`));
  assert.ok(await page.locator('#conn-prev').isDisabled(), 'no page before the first');
  // The summary counts them all without reading them.
  await waitForText(page.locator('.stat[data-stat="total"] .stat-value'), new RegExp(`^${TOTAL}$`));
  // What the DOM holds does not grow with the fleet.
  assert.ok(await page.locator('tr[data-free-id]').count() <= 20);
  await screenshot(page, screenshots, 'fleet-paging-laptop');

  await page.locator('#conn-next').click();
  await waitForRows(page, 'the second page', range(PAGE, 2 * PAGE));
  await waitForText(page.locator('#conn-range'), new RegExp(`^101–200 of ${TOTAL}$`));
  // The last page: the rest of the bulk, then feed-a and feed-b (by ID).
  await page.locator('#conn-next').click();
  await waitForRows(page, 'the last page', [...range(2 * PAGE, BULK), 'feed-a', 'feed-b']);
  await waitForText(page.locator('#conn-range'), new RegExp(`^201–${TOTAL} of ${TOTAL}$`));
  assert.ok(await page.locator('#conn-next').isDisabled(), 'no page after the last');
  // Back the way it came, from the pager under the table too.
  await page.locator('#conn-prev-bottom').click();
  await waitForRows(page, 'the second page again', range(PAGE, 2 * PAGE));
  await page.locator('#conn-prev').click();
  await waitForRows(page, 'the first page again', range(0, PAGE));
  assert.ok(await page.locator('#conn-prev').isDisabled());
  await closePage(page);
});

test('each filter narrows the table, and the URL keeps them', async () => {
  const page = await fleetPage();
  await waitForRows(page, 'the first page', range(0, PAGE));
  const asked = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname === '/api/fleet/connections') asked.push(url.searchParams);
  });

  // State.
  await page.locator('#conn-state').selectOption('STOPPED');
  await waitForRows(page, 'the stopped ones', ['feed-a', 'feed-b']);
  await waitForText(page.locator('#conn-range'), /^2 matching connections$/);
  assert.equal(new URL(page.url()).search, '?state=stopped');
  await page.locator('#conn-state').selectOption('STARTED');
  await waitForRows(page, 'the started ones', range(0, PAGE));
  await waitForText(page.locator('#conn-range'), new RegExp(`^1–100 of ${BULK}$`));
  await page.locator('#conn-state').selectOption('');

  // The ID prefix, asked once typing pauses: not for every key.
  await page.locator('#conn-search').pressSequentially('bulk-12', { delay: 30 });
  await waitForRows(page, 'bulk-12*', range(120, 130));
  // On a loaded machine a pause between two keys may pass for the end of
  // typing: each prefix asked must be one typed, the last the whole, and
  // fewer than the keys.
  const prefixes = [...new Set(asked.map((p) => p.get('prefix')).filter(Boolean))];
  assert.equal(prefixes.at(-1), 'bulk-12');
  assert.ok(prefixes.every((p) => 'bulk-12'.startsWith(p)), prefixes.join(', '));
  assert.ok(prefixes.length < 'bulk-12'.length, `a request per key typed: ${prefixes}`);
  assert.equal(new URL(page.url()).search, '?prefix=bulk-12');

  // The owner: what worker-1 holds in its session, with the prefix too.
  await page.locator('#conn-owner').selectOption('worker-1');
  await waitForRows(page, 'worker-1\'s with the prefix', [bulkId(120)]);
  await page.locator('#conn-search').fill('');
  await waitForRows(page, 'worker-1\'s', HELD);
  await waitForText(page.locator(`tr[data-conn-id="${bulkId(10)}"] td[data-field="owner"]`),
    /^worker-1$/);
  assert.equal(new URL(page.url()).search, '?owner=worker-1');
  await screenshot(page, screenshots, 'fleet-owner-filter-laptop');

  // A worker's ID in the workers' table shows what it holds.
  await page.locator('#conn-owner').selectOption('');
  await waitForRows(page, 'everything again', range(0, PAGE));
  await page.locator('tr[data-worker-id="worker-1"] td[data-field="id"] a').click();
  await waitForRows(page, 'worker-1\'s from its link', HELD);
  assert.equal(await page.locator('#conn-owner').inputValue(), 'worker-1');

  // A prefix no ID can have is said, without asking the server.
  await page.locator('#conn-owner').selectOption('');
  const before = asked.length;
  await page.locator('#conn-search').fill('bulk 1');
  await waitForText(page.locator('.table-area'), /No connection matches/);
  await waitForText(page.locator('.table-area'), /IDs hold only letters, digits/);
  assert.ok(asked.slice(before).every((p) => p.get('prefix') !== 'bulk 1'));
  await page.getByRole('button', { name: 'Clear the filters' }).click();
  await waitForRows(page, 'everything again', range(0, PAGE));
  assert.equal(new URL(page.url()).search, '');
  // Every read of the connections was of a page: never the whole list.
  assert.ok(asked.every((p) => p.get('limit') === String(PAGE)),
    `unpaged reads: ${asked.filter((p) => p.get('limit') !== String(PAGE)).join(' | ')}`);
  await closePage(page);
});

test('a filtered URL opens filtered, on a phone too', async () => {
  const page = await fleetPage(PHONE, '/fleet?state=stopped');
  await waitForRows(page, 'the stopped ones', ['feed-a', 'feed-b']);
  assert.equal(await page.locator('#conn-state').inputValue(), 'STOPPED');
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= PHONE.width, `the page is ${wide}px wide`);
  await page.locator('#conn-search').scrollIntoViewIfNeeded();
  await screenshot(page, screenshots, 'fleet-filter-phone');
  await closePage(page);
});

test('unchanged polls get 304, the page asks less often, and often again after a change',
  async () => {
    const page = await fleetPage();
    const seen = []; // {kind, status, at}
    page.on('response', (response) => {
      const url = new URL(response.url());
      const kind = { '/api/fleet/summary': 'summary', '/api/fleet/connections': 'page',
        '/api/fleet/workers': 'workers' }[url.pathname];
      if (kind) seen.push({ kind, status: response.status(), at: Date.now(), url });
    });
    const of = (kind, status) => seen.filter((s) => s.kind === kind &&
      (status === undefined || s.status === status));
    // The longest gap between two summary reads so far.
    const longestGapMs = () => {
      const at = of('summary').map((s) => s.at);
      return Math.max(0, ...at.slice(1).map((t, i) => t - at[i]));
    };
    await eventually('two 304s for the summary and for the page', async () =>
      of('summary', 304).length >= 2 && of('page', 304).length >= 2, 15_000);
    // 1 s, 2 s, then 4 s between reads while nothing changes.
    await eventually('a gap of 4 s between reads', async () => longestGapMs() >= 3500, 15_000);
    assert.ok(of('page').every((s) => s.url.searchParams.get('limit') === String(PAGE)));
    assert.ok(of('workers').every((s) => s.status === 200), 'workers carry the clock: 200');
    console.log(`     (${of('summary').length} summary reads, ${of('summary', 304).length} of ` +
      `them 304; ${of('page').length} page reads, ${of('page', 304).length} of them 304; ` +
      `longest gap ${longestGapMs()} ms)`);

    // A checkpoint on the page shown: a 200, shown, then a read a second later.
    const written = Date.now();
    await store.write(storeTool, 'update', 'connections', `CONN#${bulkId(0)}`,
      JSON.stringify({ last_seq: 777 }));
    await waitForText(page.locator(`tr[data-conn-id="${bulkId(0)}"] td[data-field="last_seq"]`),
      /^777$/, SHOWN_WITHIN_MS);
    console.log(`     (the checkpoint was shown ${Date.now() - written} ms after it was written)`);
    const changedAt = of('page', 200).filter((s) => s.at >= written)[0].at;
    await eventually('a read after the change', async () =>
      of('summary').some((s) => s.at > changedAt), 5000);
    const nextAt = of('summary').find((s) => s.at > changedAt).at;
    assert.ok(nextAt - changedAt < 1600, `the next read came ${nextAt - changedAt} ms after ` +
      'the change (the page should be back to asking every second)');
    await closePage(page);
  });

test('a connection added off the page shown is offered, and shown on request', async () => {
  const page = await fleetPage(LAPTOP, '/fleet?prefix=bulk-', queen);
  await waitForRows(page, 'the first bulk page', range(0, PAGE));
  await page.getByRole('button', { name: 'Add connection' }).click();
  await page.getByLabel('ID', { exact: true }).fill('zz-new');
  await page.getByLabel('URL').fill('ws://10.0.0.1/zz');
  await page.locator('#conn-submit').click();
  const note = page.locator('#conn-note');
  await waitForText(note, /^Added zz-new\. It is not on this page\./);
  await note.getByRole('button', { name: 'Show zz-new' }).click();
  await waitForRows(page, 'the new connection', ['zz-new']);
  assert.equal(new URL(page.url()).search, '?prefix=zz-new');
  await closePage(page);
});

await run({ after: () => closeAll({ browser, server, store }) });
