// The movie list (/movies) when the movies' storage refuses the server, in
// chromium against a real `leasehold serve` whose movies are kept on "S3":
// an HTTP server of this test, on a loopback port, that answers every
// request as S3 does when it refuses the deployment (ExpiredToken, then
// AccessDenied). An upload is then answered 503, and the page says
// "Storage is unavailable — try again later (request …)", with the ID the
// server logged the cause under; never that the person is not signed in,
// nor the bucket. A list the server answers the same way says the same.
//
//   node tests/browser/movies_storage_test.mjs --leasehold build/bin/leasehold \
//       --make-movie build/bin/make_test_movie --screenshots DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import path from 'node:path';

import {
  closePage, LAPTOP, launchBrowser, openSignedIn, parseArgs, PHONE, run, screenshot, Server,
  Store, test, waitForText,
} from './harness.mjs';

const { bin, makeMovie, screenshots } = parseArgs();
if (!makeMovie) throw new Error('movies_storage_test.mjs needs --make-movie (make_test_movie)');

const BUCKET = 'leasehold-secret-bucket';
const PREFIX = 'secret-prefix';
// How the fake S3 refuses: its error code and HTTP status, changed by the tests.
const refusal = { code: 'ExpiredToken', status: 400 };
let s3Requests = 0;

// Every request refused, as S3 refuses: an error document (none for a
// HEAD) and AWS's ID of the request in x-amz-request-id.
const s3 = createServer((request, response) => {
  s3Requests += 1;
  request.resume();
  request.on('end', () => {
    const id = `S3REQ-${refusal.code}-${s3Requests}`;
    const body = request.method === 'HEAD' ? ''
      : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${refusal.code}</Code>` +
        `<Message>refused by the test</Message><RequestId>${id}</RequestId></Error>`;
    response.writeHead(refusal.status, {
      'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body),
      'x-amz-request-id': id,
    });
    response.end(body);
  });
});
await new Promise((resolve) => s3.listen(0, '127.0.0.1', resolve));
const s3Endpoint = `http://127.0.0.1:${s3.address().port}`;

// The server signs with whatever credentials it finds; the fake refuses them.
process.env.AWS_ACCESS_KEY_ID = 'test';
process.env.AWS_SECRET_ACCESS_KEY = 'test';
process.env.AWS_EC2_METADATA_DISABLED = 'true';

const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const server = await Server.start(store, ['--trace-workers', '0'], {
  mediaDir: `s3://${BUCKET}/${PREFIX}?region=us-east-1&endpoint=${encodeURIComponent(s3Endpoint)}`,
});
const browser = await launchBrowser();

const movie = path.join(store.dir, 'spot.avi');
execFileSync(makeMovie, [movie, 30]);

async function moviesPage(viewport = LAPTOP) {
  const page = await openSignedIn(browser, server, alice, '/movies', viewport);
  await waitForText(page.locator('#movies-freshness'), /Live/);
  return page;
}

// Chooses `file` through the upload button and resolves the server's answer.
async function uploadThroughThePage(page, file) {
  const answered = page.waitForResponse(
    (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/movies');
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Upload a movie' }).click(),
  ]);
  await chooser.setFiles(file);
  return answered;
}

// What the server logged of the request `id`: its error line.
function loggedFailure(id) {
  return server.logs().split('\n').find((line) => line.includes(id) &&
    line.includes('the request failed'));
}

// The page's words for a refusal of the storage, and nothing of where it is.
async function assertStorageUnavailable(page, locator, requestId) {
  const text = await locator.innerText();
  assert.match(text, new RegExp(
    `Storage is unavailable — try again later \\(request ${requestId}\\)`));
  for (const secret of [BUCKET, PREFIX, 's3://', refusal.code, 'signed in', 'Sign in']) {
    assert.ok(!text.includes(secret), `"${secret}" shown: ${text}`);
  }
  assert.equal(new URL(page.url()).pathname, '/movies', 'no sign-in prompt');
}

for (const [when, code, status, viewport] of [
  ['expired credentials', 'ExpiredToken', 400, LAPTOP],
  ['access denied', 'AccessDenied', 403, PHONE],
]) {
  test(`an upload S3 refuses for ${when} says storage is unavailable`, async () => {
    Object.assign(refusal, { code, status });
    const page = await moviesPage(viewport);
    const answer = await uploadThroughThePage(page, movie);
    assert.equal(answer.status(), 503);
    const requestId = answer.headers()['x-request-id'];
    assert.match(requestId, /^[0-9a-f]{16}$/);
    const error = page.locator('.upload-error');
    await waitForText(error, /Storage is unavailable/);
    await assertStorageUnavailable(page, error, requestId);
    await waitForText(page.locator('.upload .upload-text'), /^Not uploaded$/);
    await waitForText(page.locator('.table-area'), /No movies yet/);
    const size = viewport === PHONE ? 'phone' : 'laptop';
    await screenshot(page, screenshots, `movies-storage-unavailable-${size}`);
    // The cause, for the operator: S3's code and AWS's request ID.
    const logged = loggedFailure(requestId);
    assert.ok(logged, `no error logged for request ${requestId}:\n${server.logs()}`);
    assert.match(logged, new RegExp(`${code}: refused by the test`));
    assert.match(logged, /AWS request ID S3REQ-/);
    assert.match(logged, /storage unavailable: upload not kept/);
    await closePage(page);
  });
}

// The list does not read S3; a store that cannot be used is answered the
// same way, which the page is given here as the server sends it.
test('a list the server answers storage unavailable says so and recovers', async () => {
  const requestId = '00000000000000ab';
  const theList = (url) => url.pathname === '/api/movies';
  const page = await openSignedIn(browser, server, alice, '/movies', LAPTOP, {
    beforeLoad: (p) => p.route(theList, (route) => route.fulfill({
      status: 503,
      headers: { 'Content-Type': 'application/json', 'Retry-After': '1',
                 'X-Request-Id': requestId },
      body: JSON.stringify({ error: {
        code: 'unavailable', message: `storage unavailable, try again later (request ${requestId})`,
      } }),
    })),
  });
  const state = page.locator('.table-area .state-error');
  await waitForText(state, /The movies could not be loaded/);
  await assertStorageUnavailable(page, state, requestId);
  await screenshot(page, screenshots, 'movies-list-storage-unavailable-laptop');
  await page.unroute(theList);
  await page.getByRole('button', { name: 'Try again now' }).click();
  await waitForText(page.locator('.table-area'), /No movies yet/);
  await closePage(page);
});

await run({
  after: async () => {
    await browser.close();
    await server.stop();
    store.remove();
    await new Promise((resolve) => s3.close(resolve));
  },
});
