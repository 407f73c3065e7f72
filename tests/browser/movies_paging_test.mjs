// The movie list (/movies) with more movies than a page holds, in chromium
// against a real `leasehold serve`: it shows 100 at a time, the newest
// first, with next and previous pages going to older movies; it asks only
// for the page on screen, with that page's ETag, so an unchanged page is
// answered 304 and the other pages are never read; it asks less often
// while nothing changes (2 s, 4 s, 8 s) and every 2 s again after a change,
// which it shows; an upload is shown at once at the top of the first page,
// before the list names it, and one uploaded while another page is shown
// is noted, with a way to the first page; a page whose first movie's
// predecessor is deleted carries on from the page before it. Screenshots
// in --screenshots.
//
// The movies are added with browser_store_tool's bulk-movies (items as
// Movies::create and probe write them, in one process); the uploads are
// made with make_test_movie.
//
//   node tests/browser/movies_paging_test.mjs --leasehold build/bin/leasehold \
//       --store-tool build/bin/browser_store_tool \
//       --make-movie build/bin/make_test_movie --screenshots DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import {
  callApi, closeAll, closePage, eventually, LAPTOP, launchBrowser, openSignedIn, parseArgs, PHONE,
  rowIds, run, screenshot, Server, Store, test, waitForRows as waitForRowsOf, waitForText,
} from './harness.mjs';

const { bin, storeTool, makeMovie, screenshots } = parseArgs();
if (!storeTool) throw new Error('movies_paging_test.mjs needs --store-tool (browser_store_tool)');
if (!makeMovie) throw new Error('movies_paging_test.mjs needs --make-movie (make_test_movie)');
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const BULK = 250; // bulk-000 .. bulk-249, uploaded in that order
const PAGE = 100;
// The pages at first, newest first: bulk-249 .. bulk-150, bulk-149 ..
// bulk-050, bulk-049 .. bulk-000.
await store.write(storeTool, 'bulk-movies', 'bulk-', String(BULK), alice.name, alice.displayName);
const server = await Server.start(store, ['--trace-workers', '0']);
const browser = await launchBrowser();

// The page asks every 2 s after a change and at least every 8 s.
const SHOWN_WITHIN_MS = 12_000;
// A probe on this (shared, slow) machine.
const WORK_WITHIN_MS = 60_000;

const bulkId = (i) => `bulk-${String(i).padStart(3, '0')}`;
// bulk-(to - 1) down to bulk-from: the order the list shows them in.
const down = (to, from) => Array.from({ length: to - from }, (_, i) => bulkId(to - 1 - i));

// A synthetic movie of `frames` frames in the store's directory.
function movieFile(name, frames) {
  const file = path.join(store.dir, name);
  execFileSync(makeMovie, [file, String(frames)]);
  return file;
}

// ---- the page ----

async function moviesPage(viewport = LAPTOP) {
  const page = await openSignedIn(browser, server, alice, '/movies', viewport);
  await waitForText(page.locator('#movies-freshness'), /Live/);
  return page;
}

const shownIds = (page) => rowIds(page, 'tr[data-movie-id]', 'movieId');

// Waits until the table shows exactly `ids`, in that order.
function waitForRows(page, what, ids) {
  return waitForRowsOf(page, what, {
    selector: 'tr[data-movie-id]', key: 'movieId', ids, timeoutMs: SHOWN_WITHIN_MS,
  });
}

const cell = (page, id, field) =>
  page.locator(`tr[data-movie-id="${id}"] td[data-field="${field}"]`);

// Records every answer to a read of the movies: {kind: 'list' or 'movie',
// status, at, after (list), id (movie)}.
function recordReads(page) {
  const seen = [];
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (response.request().method() !== 'GET') return;
    const at = Date.now();
    if (url.pathname === '/api/movies') {
      seen.push({ kind: 'list', status: response.status(), at, url,
        after: url.searchParams.get('after') || '', order: url.searchParams.get('order') });
    } else if (/^\/api\/movies\/[^/]+$/.test(url.pathname)) {
      seen.push({ kind: 'movie', status: response.status(), at,
        id: decodeURIComponent(url.pathname.split('/').pop()) });
    }
  });
  return seen;
}

// The longest gap between two reads of the list in `reads`.
function longestGapMs(reads) {
  const at = reads.filter((r) => r.kind === 'list').map((r) => r.at);
  return Math.max(0, ...at.slice(1).map((t, i) => t - at[i]));
}

// ---- the cases ----

test('the list shows 100 movies at a time, the newest first, with older ones on the next ' +
  'pages', async () => {
  const page = await moviesPage();
  await waitForRows(page, 'the first page', down(BULK, BULK - PAGE));
  await waitForText(page.locator('#movies-range'), /^Movies 1–100$/);
  assert.ok(await page.locator('#movies-prev').isDisabled(), 'no page before the first');
  // Each movie on screen is read for its details.
  await waitForText(cell(page, bulkId(BULK - 1), 'owner'), /^Alice Liddell$/);
  await waitForText(cell(page, bulkId(BULK - PAGE), 'length'), /^0:04100 frames at 25 fps$/);
  await screenshot(page, screenshots, 'movies-paging-laptop');

  await page.locator('#movies-next').click();
  await waitForRows(page, 'the second page', down(BULK - PAGE, BULK - 2 * PAGE));
  await waitForText(page.locator('#movies-range'), /^Movies 101–200$/);
  await page.locator('#movies-next').click();
  await waitForRows(page, 'the last page', down(BULK - 2 * PAGE, 0));
  await waitForText(page.locator('#movies-range'), new RegExp(`^Movies 201–${BULK} of ${BULK}$`));
  assert.ok(await page.locator('#movies-next').isDisabled(), 'no page after the last');
  await waitForText(cell(page, bulkId(0), 'size'), /^320×240$/);
  // Back the way it came, from the pager under the table too, which
  // brings the pager above it into view.
  await page.locator('#movies-prev-bottom').click();
  await waitForText(page.locator('#movies-range'), /^Movies 101–200$/);
  assert.ok(await page.locator('#movies-range').evaluate((range) => {
    const box = range.getBoundingClientRect();
    return box.top >= 0 && box.bottom <= window.innerHeight;
  }), 'the pager above the table is in view');
  await waitForRows(page, 'the second page again', down(BULK - PAGE, BULK - 2 * PAGE));
  await page.locator('#movies-prev').click();
  await waitForText(page.locator('#movies-range'), /^Movies 1–100$/);
  assert.ok(await page.locator('#movies-prev').isDisabled(), 'back on the first page');
  await closePage(page);
});

test('only the page on screen is asked for: 304 while unchanged, less often, and a change ' +
  'shows', async () => {
  const page = await moviesPage();
  const reads = recordReads(page);
  await waitForRows(page, 'the first page', down(BULK, BULK - PAGE));
  const lists = (status) => reads.filter((r) => r.kind === 'list' &&
    (status === undefined || r.status === status));
  await eventually('two 304s for the page', async () => lists(304).length >= 2, 15_000);
  // 2 s, then 4 s between reads while nothing changes.
  await eventually('a gap of 4 s between reads', async () => longestGapMs(reads) >= 3500,
    15_000);
  assert.ok(lists().every((r) => r.after === '' && r.order === 'newest' &&
    r.url.searchParams.get('limit') === String(PAGE)),
  `reads of other pages: ${lists().map((r) => r.url.search).join(' ')}`);
  const firstPage = new Set(down(BULK, BULK - PAGE));
  const details = reads.filter((r) => r.kind === 'movie');
  assert.ok(details.every((r) => firstPage.has(r.id)),
    `details read off the page: ${details.filter((r) => !firstPage.has(r.id)).map((r) => r.id)}`);
  assert.equal(new Set(details.map((r) => r.id)).size, details.length,
    'a movie\'s details were read again though its status stayed');
  console.log(`     (${lists().length} reads of the page, ${lists(304).length} of them 304; ` +
    `longest gap ${longestGapMs(reads)} ms)`);

  // A movie on the page is taken for editing elsewhere: a 200, shown, then
  // reads every 2 s again.
  const changed = Date.now();
  const taken = await callApi(page, 'POST', `/api/movies/${bulkId(BULK - 5)}/analysis-lease`, {});
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  await waitForText(cell(page, bulkId(BULK - 5), 'lock'), /^Editing: Alice Liddell since/,
    SHOWN_WITHIN_MS);
  console.log(`     (the lock was shown ${Date.now() - changed} ms after it was taken)`);
  const changedAt = lists(200).filter((r) => r.at >= changed)[0].at;
  await eventually('a read after the change', async () =>
    lists().some((r) => r.at > changedAt), 5000);
  const nextAt = lists().find((r) => r.at > changedAt).at;
  assert.ok(nextAt - changedAt < 2600, `the next read came ${nextAt - changedAt} ms after ` +
    'the change (the page should be back to asking every 2 s)');
  const released = await callApi(page, 'DELETE', `/api/movies/${bulkId(BULK - 5)}/analysis-lease`,
    { lease_id: taken.body.lease_id });
  assert.equal(released.status, 204);
  await waitForText(cell(page, bulkId(BULK - 5), 'lock'), /^—$/, SHOWN_WITHIN_MS);

  // The next page is asked for at once, then only it.
  const clicked = Date.now();
  await page.locator('#movies-next').click();
  await waitForRows(page, 'the second page', down(BULK - PAGE, BULK - 2 * PAGE));
  const shownAt = Date.now();
  assert.ok(shownAt - clicked < 2000, `the second page came ${shownAt - clicked} ms after Next`);
  const secondAfter = bulkId(BULK - PAGE);
  await eventually('a 304 for the second page', async () =>
    lists(304).some((r) => r.after === secondAfter), 15_000);
  const since = lists().filter((r) => r.at > shownAt);
  assert.ok(since.every((r) => r.after === secondAfter && r.order === 'newest'),
    `other pages read: ${since.map((r) => r.url.search).join(' ')}`);
  await closePage(page);
});

test('an upload is shown at once at the top of the first page, and noted on another',
  async () => {
    const page = await moviesPage();
    await waitForRows(page, 'the first page', down(BULK, BULK - PAGE));
    // While the list is held back, the upload is shown at the top all the
    // same, processing; the page keeps its 100 rows.
    const held = [];
    let holding = true;
    const isList = (url) => url.pathname === '/api/movies' && url.searchParams.has('limit');
    await page.route(isList, (route) => (holding ? held.push(route) : route.continue()));
    await page.locator('#movie-file').setInputFiles(movieFile('first upload.avi', 30));
    const top = page.locator('tr[data-movie-id]').first();
    await waitForText(top.locator('td[data-field="name"]'), /^first upload$/, WORK_WITHIN_MS);
    const uploadedId = await top.getAttribute('data-movie-id');
    assert.equal(await top.getAttribute('data-status'), 'processing');
    assert.match(await top.getAttribute('class'), /just-added/);
    assert.deepEqual(await shownIds(page), [uploadedId, ...down(BULK, BULK - PAGE + 1)],
      'the upload first, and the oldest of the page pushed off its end');
    await page.locator('#movies-title').scrollIntoViewIfNeeded();
    await screenshot(page, screenshots, 'movies-upload-pending-laptop', { fullPage: false });
    holding = false;
    for (const route of held) await route.continue();
    await page.unroute(isList);
    await eventually('the list names it, ready', async () =>
      (await top.getAttribute('data-status')) === 'ready', WORK_WITHIN_MS);
    await waitForText(top.locator('td[data-field="length"]'), /^0:0130 frames at 25 fps$/,
      SHOWN_WITHIN_MS);
    await waitForRows(page, 'the first page with the upload',
      [uploadedId, ...down(BULK, BULK - PAGE + 1)]);
    await waitForText(page.locator('#movies-range'), /^Movies 1–100$/);
    await page.locator('#movies-title').scrollIntoViewIfNeeded();
    await screenshot(page, screenshots, 'movies-upload-first-laptop', { fullPage: false });

    // On the second page, which goes on from the first page's last movie,
    // an upload is noted, with a way to the first page.
    await page.locator('#movies-next').click();
    await waitForRows(page, 'the second page', down(BULK - PAGE + 1, BULK - 2 * PAGE + 1));
    await page.locator('#movie-file').setInputFiles(movieFile('second upload.avi', 30));
    await waitForText(page.locator('#movies-note > span'),
      /^second upload is uploaded\. It is first on the first page\.$/, WORK_WITHIN_MS);
    await waitForRows(page, 'the second page, as it was',
      down(BULK - PAGE + 1, BULK - 2 * PAGE + 1));
    await screenshot(page, screenshots, 'movies-upload-noted-laptop', { fullPage: false });
    await page.locator('#movies-note-first').click();
    await waitForText(page.locator('#movies-range'), /^Movies 1–100$/);
    assert.ok(await page.locator('#movies-note').isHidden(), 'the note goes with its page');
    await eventually('the second upload tops the first page', async () =>
      await top.locator('td[data-field="name"]').textContent() === 'second upload',
    SHOWN_WITHIN_MS);
    const secondId = await top.getAttribute('data-movie-id');
    await waitForRows(page, 'the first page with both uploads',
      [secondId, uploadedId, ...down(BULK, BULK - PAGE + 2)]);
    // The older movies follow on the next pages.
    await page.locator('#movies-next').click();
    await waitForRows(page, 'the second page, one on', down(BULK - PAGE + 2, BULK - 2 * PAGE + 2));
    await page.locator('#movies-next').click();
    await waitForRows(page, 'the last page', down(BULK - 2 * PAGE + 2, 0));
    await waitForText(page.locator('#movies-range'),
      new RegExp(`^Movies 201–${BULK + 2} of ${BULK + 2}$`));

    // Both go again, so that the cases after this one see the bulk movies
    // alone.
    for (const id of [uploadedId, secondId]) {
      assert.equal((await callApi(page, 'DELETE', `/api/movies/${id}`)).status, 202);
    }
    await eventually('both are gone from the list', async () => {
      const listed = await callApi(page, 'GET', '/api/movies?order=newest&limit=2');
      return listed.body.map((m) => m.id).join() === down(BULK, BULK - 2).join();
    }, WORK_WITHIN_MS);
    await closePage(page);
  });

test('a page whose first movie\'s predecessor is deleted carries on from the page before',
  async () => {
    const page = await moviesPage();
    await waitForRows(page, 'the first page', down(BULK, BULK - PAGE));
    await page.locator('#movies-next').click();
    await waitForRows(page, 'the second page', down(BULK - PAGE, BULK - 2 * PAGE));
    // The second page is asked for after bulk-150; once bulk-150 is gone,
    // the server refuses that, and the page carries on after the first
    // page's new last movie.
    const removed = await callApi(page, 'DELETE', `/api/movies/${bulkId(BULK - PAGE)}`);
    assert.equal(removed.status, 202, JSON.stringify(removed.body));
    await waitForRows(page, 'the second page, one on', down(BULK - PAGE - 1, BULK - 2 * PAGE - 1));
    await waitForText(page.locator('#movies-range'), /^Movies 101–200$/);
    await page.locator('#movies-prev').click();
    await waitForRows(page, 'the first page without it',
      [...down(BULK, BULK - PAGE + 1), bulkId(BULK - PAGE - 1)]);
    await closePage(page);
  });

test('the pager fits a phone', async () => {
  const page = await moviesPage(PHONE);
  await waitForRows(page, 'the first page',
    [...down(BULK, BULK - PAGE + 1), bulkId(BULK - PAGE - 1)]);
  await page.locator('#movies-next').click();
  await waitForText(page.locator('#movies-range'), /^Movies 101–200$/);
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= PHONE.width, `the page is ${wide}px wide`);
  for (const id of ['#movies-prev', '#movies-next']) {
    const box = await page.locator(id).boundingBox();
    assert.ok(box.height >= 40, `${id} is ${box.height}px tall`);
  }
  await waitForText(cell(page, bulkId(BULK - PAGE - 2), 'owner'), /^Alice Liddell$/);
  await page.locator('#movies-title').scrollIntoViewIfNeeded();
  await screenshot(page, screenshots, 'movies-paging-phone', { fullPage: false });
  await closePage(page);
});

await run({ after: () => closeAll({ browser, server, store }) });
