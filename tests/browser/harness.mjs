// The browser tests' harness: a real `leasehold serve` on a fresh SQLite
// store in a temporary directory, users made with `leasehold user add`, and
// Debian's chromium driven through playwright-core (never a browser that
// playwright downloads). Each feature has one test file beside this one
// (signin_test.mjs, ...), run by ctest as
//
//   node tests/browser/signin_test.mjs --leasehold build/bin/leasehold \
//       --store-tool build/bin/browser_store_tool \
//       --make-movie build/bin/make_test_movie \
//       --screenshots build/tests/browser/screenshots
//
// A test file builds what it needs from the pieces below, declares its cases
// with test() and calls run(), which runs them in order, prints "ok" or
// "FAIL" for each, stops the server (it must exit 0 on SIGTERM) and sets the
// exit code.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const LAPTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export const CHROMIUM = process.env.LEASEHOLD_CHROMIUM || '/usr/bin/chromium';
const COMMAND_TIMEOUT_MS = 30_000;
const LISTENING_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
const LOG_BYTES_MAX = 4 * 1024 * 1024;

// Servers still running when the process exits (a test file that threw
// before run()) are killed, so that none outlives its test.
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

// --leasehold BIN --screenshots DIR, both required, --store-tool BIN
// (tests/browser/store_tool.cc) for the tests that write items into the store
// themselves, and --make-movie BIN (tests/support/make_test_movie.cc) for
// those that upload movies. Checks first that everything the tests need is
// there, before anything is started.
export function parseArgs(argv = process.argv.slice(2)) {
  const options = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--leasehold') options.bin = argv[i + 1];
    else if (argv[i] === '--store-tool') options.storeTool = argv[i + 1];
    else if (argv[i] === '--make-movie') options.makeMovie = argv[i + 1];
    else if (argv[i] === '--screenshots') options.screenshots = argv[i + 1];
    else fail(`unknown argument '${argv[i]}'`);
  }
  if (!options.bin || !options.screenshots) {
    fail('usage: node <feature>_test.mjs --leasehold BINARY [--store-tool BINARY] ' +
      '[--make-movie BINARY] --screenshots DIR');
  }
  for (const [what, file] of [['leasehold binary', options.bin],
    ['store tool', options.storeTool], ['make_test_movie', options.makeMovie]]) {
    if (file === undefined) continue;
    try {
      accessSync(file, constants.X_OK);
    } catch {
      fail(`the ${what} '${file}' is missing or not executable; build it first`);
    }
  }
  checkBrowser();
  mkdirSync(options.screenshots, { recursive: true });
  return options;
}

function checkBrowser() {
  try {
    accessSync(CHROMIUM, constants.X_OK);
  } catch {
    fail(`chromium was not found at ${CHROMIUM}; install it with scripts/setup.sh ` +
      '(apt-get install chromium)');
  }
  try {
    createRequire(import.meta.url).resolve('playwright-core');
  } catch {
    fail('playwright-core is not installed; run scripts/setup.sh (npm ci)');
  }
}

function fail(message) {
  console.error(`browser tests: ${message}`);
  process.exit(1);
}

// Runs `bin args...` to completion; resolves {code, out, err}.
function runCommand(bin, args, { input } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: signal ? `killed by ${signal}` : code, out: out.trim(), err: err.trim() });
    });
    // A command that exits without reading its input closes the pipe first:
    // EPIPE then is no failure (its exit code says how it went).
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
  });
}

// A fresh SQLite store in a temporary directory, initialised with
// `leasehold store init`. remove() deletes the directory.
export class Store {
  static async create(bin) {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-browser-'));
    const store = new Store(bin, dir);
    const init = await store.leasehold('store', 'init');
    assert.equal(init.code, 0, `leasehold store init failed: ${init.err}`);
    return store;
  }

  constructor(bin, dir) {
    this.bin = bin;
    this.dir = dir;
    this.uri = `sqlite:${path.join(dir, 'leasehold.db')}`;
  }

  leasehold(...args) {
    return runCommand(this.bin, ['--store', this.uri, ...args]);
  }

  // Runs the store tool (--store-tool) on this store: `put TABLE ITEM_JSON`
  // or `update TABLE PK ATTRIBUTES_JSON`; asserts that it succeeded.
  async write(tool, ...args) {
    const result = await runCommand(tool, [this.uri, ...args]);
    assert.equal(result.code, 0, `browser_store_tool ${args.join(' ')} failed: ${result.err}`);
  }

  // Adds a user through the CLI, the password on stdin (never on the command
  // line, where `ps` shows it).
  async addUser({ name, displayName, password, admin = false }) {
    const args = ['--store', this.uri, 'user', 'add', name, '--display-name', displayName];
    if (admin) args.push('--admin');
    args.push('--password-stdin');
    const result = await runCommand(this.bin, args, { input: `${password}\n` });
    assert.equal(result.code, 0, `leasehold user add ${name} failed: ${result.err}`);
    return { name, displayName, password, admin };
  }

  remove() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// The address in the first stderr line that mentions "listening"; tolerant
// of the line's shape ({"msg":"listening","address":"127.0.0.1:PORT"}, or
// plain text).
export function listeningAddress(stderrText) {
  // Whole lines only: a line cut between two reads could cut the port short.
  const lines = stderrText.split('\n').slice(0, -1);
  for (const line of lines) {
    if (!/listening/i.test(line)) continue;
    const match = /127\.0\.0\.1:(\d{1,5})/.exec(line);
    return match ? { host: '127.0.0.1', port: Number(match[1]) } : null;
  }
  return null;
}

// `leasehold serve --listen 127.0.0.1:0` on `store`, with its media folder in
// the store's directory (or `mediaDir`: an s3:// URI, say), ready once it has
// logged the address it listens on.
export class Server {
  static async start(store, extraArgs = [], { mediaDir = path.join(store.dir, 'media') } = {}) {
    const args = ['--store', store.uri, 'serve', '--listen', '127.0.0.1:0',
                  '--media-dir', mediaDir, ...extraArgs];
    const child = spawn(store.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    child.on('exit', () => running.delete(child));
    const server = new Server(child);
    await server.#waitUntilListening();
    return server;
  }

  #child;
  #stderr = '';
  #stdout = '';
  #exited;

  constructor(child) {
    this.#child = child;
    const keep = (text, chunk) => (text + chunk).slice(-LOG_BYTES_MAX);
    child.stdout.on('data', (chunk) => (this.#stdout = keep(this.#stdout, chunk)));
    child.stderr.on('data', (chunk) => (this.#stderr = keep(this.#stderr, chunk)));
    this.#exited = new Promise((resolve) => {
      child.on('error', (error) => resolve({ code: null, signal: null, error }));
      child.on('exit', (code, signal) => resolve({ code, signal }));
    });
  }

  async #waitUntilListening() {
    let stopWatching;
    const listening = new Promise((resolve) => {
      // Registered after the constructor's handler, so #stderr already holds the chunk.
      const check = () => {
        const address = listeningAddress(this.#stderr);
        if (address) resolve({ address });
      };
      this.#child.stderr.on('data', check);
      stopWatching = () => this.#child.stderr.off('data', check);
    });
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), LISTENING_TIMEOUT_MS);
    });
    const exited = this.#exited.then((exit) => ({ exit }));
    const outcome = await Promise.race([listening, exited, timeout]);
    clearTimeout(timer);
    stopWatching();
    if (outcome.address) {
      this.origin = `http://${outcome.address.host}:${outcome.address.port}`;
      return;
    }
    let why = `nothing within ${LISTENING_TIMEOUT_MS} ms`;
    if (outcome.exit) {
      const { error, signal, code } = outcome.exit;
      why = `it exited (${error ? error.message : signal || `code ${code}`})`;
    } else {
      this.#child.kill('SIGKILL');
    }
    throw new Error(
      `leasehold serve did not report a listening address: ${why}\nstderr:\n${this.#stderr}`);
  }

  url(pathAndQuery = '/') {
    return new URL(pathAndQuery, this.origin).href;
  }

  // The server's process ID (to read its CPU time in /proc).
  get pid() {
    return this.#child.pid;
  }

  // Everything the server has written so far (stdout, then stderr).
  logs() {
    return `${this.#stdout}\n${this.#stderr}`;
  }

  // SIGTERM, then waits for the exit; asserts a clean one (code 0).
  async stop() {
    const running = this.#child.exitCode === null && this.#child.signalCode === null;
    if (running) this.#child.kill('SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), STOP_TIMEOUT_MS);
    });
    const exit = await Promise.race([this.#exited, timeout]);
    clearTimeout(timer);
    if (!exit) {
      this.#child.kill('SIGKILL');
      throw new Error(`leasehold serve did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`);
    }
    const how = exit.signal || `code ${exit.code}`;
    assert.equal(exit.code, 0, `leasehold serve exited with ${how} on SIGTERM\n${this.#stderr}`);
  }
}

// Starts `bin args...` beside the server (an upstream, a worker), its
// stdout and stderr piped; like the server, it is killed with SIGKILL if it
// still runs when the test file exits. Stopping it is the caller's task.
export function spawnTracked(bin, args) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

// Debian's chromium through playwright-core, headless.
export async function launchBrowser() {
  checkBrowser();
  const { chromium } = await import('playwright-core');
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath: CHROMIUM, args });
}

// A page in a fresh browser context (no cookies) of `viewport` size, which
// records what should never happen on any page: uncaught exceptions, console
// errors (content-security-policy violations among them) and static files
// that fail to load. Answers from /api/ are left to the tests: a 401 there
// is part of the design.
export async function openPage(browser, viewport = LAPTOP) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium logs every 4xx/5xx answer, the API's too; those are checked below.
    if (message.text().startsWith('Failed to load resource')) return;
    problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (!url.pathname.startsWith('/api/') && response.status() >= 400) {
      problems.push(`${response.status()} for ${url.pathname}`);
    }
  });
  page.on('requestfailed', (request) => {
    const failure = request.failure()?.errorText ?? '';
    // A navigation cancels what the page had in flight; that is not a fault.
    if (!failure.includes('ERR_ABORTED')) problems.push(`failed: ${request.url()} ${failure}`);
  });
  page.problems = problems;
  return page;
}

// Closes the page's context, asserting that nothing in openPage()'s list
// happened.
export async function closePage(page) {
  const problems = [...page.problems];
  await page.context().close();
  assert.deepEqual(problems, [], `the page had problems:\n${problems.join('\n')}`);
}

// The whole page as DIR/NAME.png, or what the viewport shows of it where
// the whole would be too long to look at (a page of 100 rows on a phone).
export async function screenshot(page, dir, name, { fullPage = true } = {}) {
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

// Waits (up to Playwright's default deadline) until `locator` holds text
// matching `pattern`; fails naming what it holds instead.
export async function waitForText(locator, pattern, timeout = 5000) {
  try {
    await locator.filter({ hasText: pattern }).first().waitFor({ timeout });
  } catch {
    const shown = (await locator.allInnerTexts()).join(' | ');
    throw new assert.AssertionError({ message: `expected ${pattern}, found '${shown}'` });
  }
}

// Waits until `fn()` is truthy, trying every 100 ms, for at most
// `timeoutMs`; resolves its value, or fails with `what`.
export async function eventually(what, fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new assert.AssertionError({ message: `never: ${what}` });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// The data attribute `key` (a dataset name: 'connId' for data-conn-id) of
// each row `selector` matches, in the order shown.
export function rowIds(page, selector, key) {
  return page.locator(selector).evaluateAll((rows, name) => rows.map((r) => r.dataset[name]),
    key);
}

// Waits until the rows `selector` matches are exactly those whose `key` is
// each of `ids`, in order (a new page of a list replaces the old one whole,
// so the first and last IDs and the count say which it is); fails saying
// what is shown instead.
export async function waitForRows(page, what, { selector, key, ids, timeoutMs }) {
  let shown = [];
  try {
    await eventually(what, async () => {
      shown = await rowIds(page, selector, key);
      return shown.join() === ids.join();
    }, timeoutMs);
  } catch {
    assert.fail(`${what}: the table shows ${shown.length} rows, ${shown.slice(0, 3)}…` +
      `${shown.slice(-3)}; expected ${ids.length}, ${ids.slice(0, 3)}…${ids.slice(-3)}`);
  }
}

// Calls the API from the page, as the page itself would (its cookie, its
// Origin): {status, body}.
export function callApi(page, method, url, body) {
  return page.evaluate(async ({ method, url, body }) => {
    const init = { method, headers: {} };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }, { method, url, body });
}

// Makes the page think it is hidden (or visible again), as a tab in the
// background is: document.hidden, visibilityState and the event.
export function setPageHidden(page, hidden) {
  return page.evaluate((value) => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => value });
    Object.defineProperty(document, 'visibilityState', {
      configurable: true, get: () => (value ? 'hidden' : 'visible'),
    });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

// A new page (openPage()) signed in as `user` through the sign-in page,
// at `path` once signed in. beforeLoad(page), if given, runs before the
// first navigation (to route requests, say).
export async function openSignedIn(browser, server, user, path, viewport = LAPTOP,
  { beforeLoad } = {}) {
  const page = await openPage(browser, viewport);
  if (beforeLoad) await beforeLoad(page);
  await page.goto(server.url(`/signin?next=${encodeURIComponent(path)}`));
  await signInOnPage(page, user);
  await page.waitForURL(server.url(path));
  return page;
}

// Closes what a test file started: the browser, the server, the store.
export async function closeAll({ browser, server, store }) {
  await browser.close();
  await server.stop();
  store.remove();
}

// Signs in through the sign-in page the browser is on.
export async function signInOnPage(page, { name, password }) {
  await page.getByLabel('User name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

// test(name, fn) declares a case; run({after}) runs them in order, then
// `after` (stopping servers and browsers), and sets the exit code.
const cases = [];

export function test(name, body) {
  cases.push({ name, body });
}

export async function run({ after = async () => {} } = {}) {
  let failed = 0;
  for (const { name, body } of cases) {
    const started = Date.now();
    try {
      await body();
      console.log(`ok   ${name} (${Date.now() - started} ms)`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}\n${error.stack}`);
    }
  }
  try {
    await after();
  } catch (error) {
    failed += 1;
    console.log(`FAIL cleaning up\n${error.stack}`);
  }
  console.log(`${cases.length - failed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
}
