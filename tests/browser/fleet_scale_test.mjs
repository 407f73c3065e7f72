// The Fleet page (/fleet) on a fleet of 100,000 connections and no worker,
// in chromium against a real `leasehold serve` on SQLite, at a laptop's
// size: the summary says the totals and that none streams; an exact ID typed
// into "ID starts with" shows that connection alone; while the page polls
// (and a connection on screen is stopped), what the DOM holds stays one page
// and the page never asks for the whole list. Screenshots in --screenshots.
//
// It also measures, in the page, what the issue sets as goals (the summary
// shown within 1 s of navigating, a filter's one connection within 200 ms of
// the last key, no gap between frames over 100 ms while it polls) and prints
// them as one JSON line ({"bench":"fleet_page_browser",...}) for
// docs/benchmarks.md. It asserts none of them: on a shared machine they are
// the benchmarks' to judge, not a test's. The figures, in ms, all taken in
// the page (performance.now()):
//
//   summary_shown_ms       navigation's start to the first animation frame
//                          after the DOM holds the summary's figures
//   filter_shown_ms        the last key typed to the one row alone in the
//                          DOM (of which filter_asked_after_ms waiting for
//                          typing to pause, and filter_read_ms the read)
//   longest_frame_gap_ms   the longest gap between animation frames over
//                          15 s of polling, long_tasks the long tasks then,
//                          dom_rows the most <tr> the document held
//
//   node tests/browser/fleet_scale_test.mjs --leasehold build/bin/leasehold \
//       --store-tool build/bin/browser_store_tool --screenshots DIR
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  closeAll, closePage, eventually, LAPTOP, launchBrowser, openPage, parseArgs, run, screenshot,
  Server, signInOnPage, Store, test, waitForText,
} from './harness.mjs';

const { bin, storeTool, screenshots } = parseArgs();
if (!storeTool) throw new Error('fleet_scale_test.mjs needs --store-tool (browser_store_tool)');

const COUNT = 100_000; // bulk-00000 .. bulk-99999, the most bulk-connections adds
const PAGE = 100;
const POLL_FOR_MS = 15_000;
const SHOWN_WITHIN_MS = 10_000; // the page asks at least every 8 s
const bulkId = (i) => `bulk-${String(i).padStart(5, '0')}`;
const STOPPED_AT_START = [bulkId(99_997), bulkId(99_998), bulkId(99_999)];
const STOPPED_ON_SCREEN = bulkId(5); // stopped while the page polls
const FOUND = bulkId(73_455); // the 73,456th
const count = (n) => n.toLocaleString('en');

const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
{
  const started = Date.now();
  await store.write(storeTool, 'bulk-connections', 'bulk-', String(COUNT));
  for (const id of STOPPED_AT_START) {
    const stopped = await store.leasehold('conn', 'stop', id);
    assert.equal(stopped.code, 0, stopped.err);
  }
  console.log(`     (${count(COUNT)} connections added in ${Date.now() - started} ms)`);
}
const server = await Server.start(store);
const browser = await launchBrowser();

// Installed in the page before its scripts run: when the summary's figures
// and a filter's one row are first in the DOM (a MutationObserver), the
// time of the last key typed in the search, and from start() on the
// longest gap between animation frames, the long tasks and the most rows
// (<tr>) the document held. Times are performance.now(), from the
// navigation's start.
function instrument({ total }) {
  const bench = {
    summaryAt: null, // the DOM holds the summary's figures
    summaryFrameAt: null, // the next animation frame's callback after that
    wanted: null, // {id, typedAt, shownAt}
    frames: null, // {from, last, longestGap, rowsMax}
    longTasks: [], // {at, ms}
  };
  window.leaseholdBench = bench;
  const rows = document.getElementsByTagName('tr');
  const connRows = () => document.querySelectorAll('tr[data-conn-id]');
  const check = () => {
    if (bench.summaryAt === null) {
      const value = document.querySelector('.stat[data-stat="total"] .stat-value');
      const health = document.getElementById('fleet-health');
      if (value && value.textContent === total && health && !health.hidden) {
        bench.summaryAt = performance.now();
        requestAnimationFrame(() => (bench.summaryFrameAt = performance.now()));
      }
    }
    const { wanted } = bench;
    if (wanted && wanted.shownAt === null) {
      const shown = connRows();
      if (shown.length === 1 && shown[0].dataset.connId === wanted.id) {
        wanted.shownAt = performance.now();
      }
    }
  };
  new MutationObserver(check).observe(document, {
    childList: true, subtree: true, characterData: true, attributes: true,
    attributeFilter: ['hidden'],
  });
  document.addEventListener('input', (event) => {
    if (event.target.id === 'conn-search' && bench.wanted) {
      bench.wanted.typedAt = performance.now();
      bench.wanted.shownAt = null;
    }
  }, true);
  bench.want = (id) => (bench.wanted = { id, typedAt: null, shownAt: null });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      bench.longTasks.push({ at: entry.startTime, ms: entry.duration });
    }
  }).observe({ type: 'longtask', buffered: true });
  bench.start = () => {
    const frames = {
      from: performance.now(), last: null, longestGap: 0, longestGapAt: null, gapsOver100: 0,
      rowsMax: rows.length,
    };
    bench.frames = frames;
    const frame = (at) => {
      if (bench.frames !== frames) return;
      if (frames.last !== null) {
        const gap = at - frames.last;
        if (gap > 100) frames.gapsOver100 += 1;
        if (gap > frames.longestGap) {
          frames.longestGap = gap;
          frames.longestGapAt = at - frames.from;
        }
      }
      frames.last = at;
      frames.count = (frames.count || 0) + 1;
      frames.rowsMax = Math.max(frames.rowsMax, rows.length);
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  };
  bench.stop = () => {
    const { frames } = bench;
    bench.frames = null;
    const to = performance.now();
    return {
      ms: to - frames.from,
      longestGap: frames.longestGap,
      longestGapAt: frames.longestGapAt,
      gapsOver100: frames.gapsOver100,
      frames: frames.count,
      rowsMax: frames.rowsMax,
      longTasks: bench.longTasks.filter((t) => t.at >= frames.from && t.at <= to)
        .map((t) => ({ at: t.at - frames.from, ms: t.ms })),
      // When each answer of the API came, to tell what a long frame followed.
      answers: performance.getEntriesByType('resource')
        .filter((r) => r.name.includes('/api/') && r.responseEnd >= frames.from)
        .map((r) => `${new URL(r.name).pathname.replace('/api/fleet/', '')}@` +
          `${Math.round(r.responseEnd - frames.from)}`),
    };
  };
}

const round = (ms) => (ms == null ? null : Math.round(ms));
const figures = { bench: 'fleet_page_browser', connections: COUNT };

const page = await openPage(browser, LAPTOP);
// Every read of the connections the page makes, with its query.
const asked = [];
page.on('request', (request) => {
  const url = new URL(request.url());
  if (url.pathname === '/api/fleet/connections') asked.push(url.search);
});
const conn = (id) => page.locator(`tr[data-conn-id="${id}"]`);
const connRows = page.locator('tr[data-conn-id]');
const stat = (key) => page.locator(`.stat[data-stat="${key}"]`);

test('the summary counts 100,000 connections, none of them streaming', async () => {
  await page.goto(server.url('/signin'));
  await signInOnPage(page, alice);
  await page.waitForURL((url) => url.pathname !== '/signin');
  await page.addInitScript(instrument, { total: count(COUNT) });
  const sent = Date.now();
  await page.goto(server.url('/fleet'));
  await waitForText(stat('total').locator('.stat-value'), new RegExp(`^${count(COUNT)}$`),
    SHOWN_WITHIN_MS);
  const seenFromNode = Date.now() - sent;
  const started = COUNT - STOPPED_AT_START.length;
  await waitForText(stat('total').locator('.stat-note'),
    new RegExp(`^${count(started)} started · ${STOPPED_AT_START.length} stopped$`));
  await waitForText(stat('streaming').locator('.stat-value'), /^0$/);
  await waitForText(stat('not_streaming').locator('.stat-value'),
    new RegExp(`^${count(started)}$`));
  await waitForText(stat('workers').locator('.stat-value'), /^0 alive$/);
  assert.equal(await page.locator('#fleet-health').getAttribute('data-health'), 'down');
  await waitForText(page.locator('#fleet-health-title'), new RegExp(
    `^No worker is running — none of the ${count(started)} started connections is streaming$`));
  // Needs attention: the 20 free the longest, and a line for the rest.
  await eventually('the free connections listed', async () =>
    (await page.locator('tr[data-free-id]').count()) === 20, SHOWN_WITHIN_MS);
  await waitForText(page.locator('#attention-more'), /More are free \(about 99,997\)/);
  // Of which the first 5 are shown until the user asks for all.
  const visibleFree = () => page.locator('tr[data-free-id]:visible').count();
  assert.equal(await visibleFree(), 5);
  const showAll = page.locator('#attention-all');
  await waitForText(showAll, /^Show all 20$/);
  await showAll.click();
  await eventually('all 20 shown', async () => (await visibleFree()) === 20, SHOWN_WITHIN_MS);
  assert.equal(await showAll.getAttribute('aria-expanded'), 'true');
  await showAll.click();
  await eventually('5 shown again', async () => (await visibleFree()) === 5, SHOWN_WITHIN_MS);
  // The first page of the table, and where it is in the whole.
  await eventually('the first page', async () =>
    (await connRows.count()) === PAGE && (await conn(bulkId(0)).count()) === 1, SHOWN_WITHIN_MS);
  await waitForText(page.locator('#conn-range'), new RegExp(`^1–100 of ${count(COUNT)}$`));

  const bench = await page.evaluate(() => window.leaseholdBench);
  assert.ok(bench.summaryAt !== null, 'the summary was never seen in the DOM');
  figures.summary_shown_ms = round(bench.summaryFrameAt ?? bench.summaryAt);
  figures.summary_in_dom_ms = round(bench.summaryAt);
  figures.summary_seen_from_node_ms = seenFromNode;
  figures.long_tasks_loading = bench.longTasks.length;
});

test('while the page polls, it holds one page of rows and never asks for the whole list',
  async () => {
    await page.evaluate(() => window.leaseholdBench.start());
    const from = Date.now();
    // A change to a connection on screen, a third of the way in, so that a
    // poll brings a real update.
    await eventually('a third of the polling', async () => Date.now() - from >= POLL_FOR_MS / 3,
      POLL_FOR_MS);
    const stoppedAt = await page.evaluate(() =>
      performance.now() - window.leaseholdBench.frames.from);
    const stopped = await store.leasehold('conn', 'stop', STOPPED_ON_SCREEN);
    assert.equal(stopped.code, 0, stopped.err);
    await waitForText(conn(STOPPED_ON_SCREEN).locator('td[data-field="state"]'), /^Stopped$/,
      SHOWN_WITHIN_MS);
    await waitForText(stat('total').locator('.stat-note'),
      new RegExp(`^${count(COUNT - 4)} started · 4 stopped$`), SHOWN_WITHIN_MS);
    await eventually('the rest of the polling', async () => Date.now() - from >= POLL_FOR_MS,
      POLL_FOR_MS);
    const polled = await page.evaluate(() => window.leaseholdBench.stop());
    figures.polled_ms = round(polled.ms);
    figures.longest_frame_gap_ms = round(polled.longestGap);
    figures.longest_frame_gap_at_ms = round(polled.longestGapAt);
    figures.frame_gaps_over_100ms = polled.gapsOver100;
    figures.frames = polled.frames;
    figures.long_tasks = polled.longTasks.length;
    figures.long_tasks_at_ms = polled.longTasks.map((t) => [round(t.at), round(t.ms)]);
    figures.conn_stop_at_ms = round(stoppedAt);
    console.log(`     (answers while it polled, ms from the start: ${polled.answers.join(' ')})`);
    figures.dom_rows = polled.rowsMax;
    assert.ok(polled.rowsMax <= 150, `the document held ${polled.rowsMax} rows`);
    assert.equal(await connRows.count(), PAGE);
    // The top, as a laptop shows it first; then the whole page (from the
    // top, so that the sticky header stays at the top of the picture).
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(screenshots, 'fleet-100000-laptop-top.png') });
    await screenshot(page, screenshots, 'fleet-100000-laptop');
  });

test('an exact ID typed in the search shows that connection alone', async () => {
  await page.evaluate((id) => window.leaseholdBench.want(id), FOUND);
  await page.locator('#conn-search').pressSequentially(FOUND, { delay: 30 });
  await eventually(`${FOUND} alone`, async () => {
    const ids = await connRows.evaluateAll((rows) => rows.map((r) => r.dataset.connId));
    return ids.join() === FOUND;
  }, SHOWN_WITHIN_MS);
  await waitForText(page.locator('#conn-range'), /^1 matching connection$/);
  await waitForText(conn(FOUND).locator('td[data-field="state"]'), /^Started$/);
  assert.equal(new URL(page.url()).search, `?prefix=${FOUND}`);
  const { wanted, asked: read } = await page.evaluate((id) => ({
    wanted: window.leaseholdBench.wanted,
    // The read of the page for the whole ID (asked once typing paused).
    asked: performance.getEntriesByType('resource')
      .filter((r) => r.name.includes(`prefix=${id}`))
      .map((r) => ({ startTime: r.startTime, responseEnd: r.responseEnd }))[0],
  }), FOUND);
  assert.ok(wanted.typedAt !== null && wanted.shownAt !== null, JSON.stringify(wanted));
  figures.filter_shown_ms = round(wanted.shownAt - wanted.typedAt);
  // Of which: the wait for typing to pause, then the read, then the drawing.
  if (read) {
    figures.filter_asked_after_ms = round(read.startTime - wanted.typedAt);
    figures.filter_read_ms = round(read.responseEnd - read.startTime);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await screenshot(page, screenshots, 'fleet-100000-filtered-laptop');

  // Every read of the connections was of a page: never the whole list.
  const unpaged = asked.filter((search) =>
    new URLSearchParams(search).get('limit') !== String(PAGE));
  assert.deepEqual(unpaged, [], 'reads of the connections without limit=100');
  figures.page_reads = asked.length;
  await closePage(page);
  console.log(JSON.stringify(figures));
});

await run({ after: () => closeAll({ browser, server, store }) });
